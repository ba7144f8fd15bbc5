package store

import (
	"context"
	"fmt"
	"time"
)

// TickClaimer hands each tick of a schedule to one firer. It is part of
// Store.
type TickClaimer interface {
	// ClaimTick claims the fire of c.Schedule at c.Tick for c.Holder. The
	// first claim of a (schedule, tick) is stored and wins (claimed=true,
	// c returned); a later claim of the same tick by the same holder
	// succeeds again (a retried call), by any other holder it is refused
	// (claimed=false, the stored claim returned). The decision is one
	// conditional write: of any number of concurrent claimers of one tick,
	// exactly one is told claimed=true, so a tick fires at most once
	// across processes and restarts. Errors: ErrInvalid (see CheckTickClaim).
	ClaimTick(ctx context.Context, c TickClaim) (stored TickClaim, claimed bool, err error)
}

// TickClaim is the claim of one fire of a schedule.
type TickClaim struct {
	Schedule  string    `json:"schedule"`   // what fires: a pipeline's name
	Tick      time.Time `json:"tick"`       // the scheduled instant, whole seconds
	Holder    string    `json:"holder"`     // who fires it (a process's random ID)
	RunID     string    `json:"run_id"`     // the run the fire starts
	ClaimedAt time.Time `json:"claimed_at"` // when the claim was made
}

// TickRetention is how long a tick's claim is kept: longer than any
// catch-up window, so that a tick is never claimed twice.
const TickRetention = 7 * 24 * time.Hour

// CheckTickClaim checks a claim for ClaimTick: a schedule, a holder and a
// run ID within the length limits, a tick in whole seconds and a claim
// time.
func CheckTickClaim(c TickClaim) error {
	if err := checkName("schedule", c.Schedule); err != nil {
		return err
	}
	if err := checkName("tick holder", c.Holder); err != nil {
		return err
	}
	if err := checkName("run ID", c.RunID); err != nil {
		return err
	}
	if c.Tick.IsZero() || c.Tick.Nanosecond() != 0 {
		return fmt.Errorf("%w: tick %s is not a whole second", ErrInvalid, c.Tick.UTC().Format(time.RFC3339Nano))
	}
	if c.ClaimedAt.IsZero() {
		return fmt.Errorf("%w: tick claim without a time", ErrInvalid)
	}
	return nil
}

// NormalizeTickClaim checks c and returns it with its times in UTC.
func NormalizeTickClaim(c TickClaim) (TickClaim, error) {
	if err := CheckTickClaim(c); err != nil {
		return TickClaim{}, err
	}
	c.Tick, c.ClaimedAt = c.Tick.UTC(), c.ClaimedAt.UTC()
	return c, nil
}
