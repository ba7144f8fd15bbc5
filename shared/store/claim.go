package store

import (
	"fmt"
	"time"
)

// RunClaim is a process's claim to drive a run in the local engine: while
// it holds, no other process drives the run. A claim is a lease: it lapses
// at ExpiresAt unless its holder renews it, so a claim whose process died
// stops blocking the run by itself; a caller that can tell that the
// holding process is gone (same host, no such process) takes it over at
// once (ClaimRun's takeover).
type RunClaim struct {
	RunID     string    `json:"run_id"`
	Holder    string    `json:"holder"` // names one driver (a random ID per process and store), never reused
	PID       int       `json:"pid"`    // the holder's process ID
	Host      string    `json:"host"`   // the holder's host name
	ExpiresAt time.Time `json:"expires_at"`
}

// Holds reports whether the claim is in force at now: now is before
// ExpiresAt.
func (c RunClaim) Holds(now time.Time) bool { return now.Before(c.ExpiresAt) }

// CheckRunClaim checks the arguments of ClaimRun: a run ID, a holder, a
// host within the length limit, a PID that is not negative and an expiry
// after now.
func CheckRunClaim(c RunClaim, now time.Time) error {
	if err := checkName("run ID", c.RunID); err != nil {
		return err
	}
	if err := checkName("claim holder", c.Holder); err != nil {
		return err
	}
	if c.Host != "" {
		if err := checkName("claim host", c.Host); err != nil {
			return err
		}
	}
	if c.PID < 0 {
		return fmt.Errorf("%w: claim PID %d is negative", ErrInvalid, c.PID)
	}
	if now.IsZero() {
		return fmt.Errorf("%w: run claim without a time", ErrInvalid)
	}
	if !c.ExpiresAt.After(now) {
		return fmt.Errorf("%w: run claim expires at %s, not after now (%s)", ErrInvalid,
			c.ExpiresAt.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// ClaimTaken reports whether ClaimRun may replace stored, a claim on the
// same run, with one of holder's at now: it is holder's own, it lapsed,
// or its holder is takeover (a holder the caller found gone).
func ClaimTaken(stored RunClaim, holder, takeover string, now time.Time) bool {
	return stored.Holder == holder || !stored.Holds(now) || (takeover != "" && stored.Holder == takeover)
}
