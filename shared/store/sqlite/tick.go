package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// ClaimTick implements store.TickClaimer: an INSERT that does nothing when
// the tick is claimed, and a read of the stored claim, in one write
// transaction no other writer interleaves with. Claims older than
// store.TickRetention of the same schedule are deleted on the way.
func (s *Store) ClaimTick(ctx context.Context, c store.TickClaim) (store.TickClaim, bool, error) {
	c, err := store.NormalizeTickClaim(c)
	if err != nil {
		return store.TickClaim{}, false, fmt.Errorf("claim tick: %w", err)
	}
	tick := record.FormatTime(c.Tick)
	var stored store.TickClaim
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM ticks WHERE schedule = ? AND tick < ?`,
			c.Schedule, record.FormatTime(c.Tick.Add(-store.TickRetention))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ticks (schedule, tick, holder, run_id, claimed_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (schedule, tick) DO NOTHING`, c.Schedule, tick, c.Holder, c.RunID, record.FormatTime(c.ClaimedAt)); err != nil {
			return err
		}
		var claimed string
		err := tx.QueryRowContext(ctx, `SELECT holder, run_id, claimed_at FROM ticks WHERE schedule = ? AND tick = ?`, c.Schedule, tick).
			Scan(&stored.Holder, &stored.RunID, &claimed)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("tick claim vanished")
		}
		if err != nil {
			return err
		}
		stored.Schedule, stored.Tick = c.Schedule, c.Tick
		stored.ClaimedAt, err = record.ParseTime(claimed)
		return err
	})
	if err != nil {
		return store.TickClaim{}, false, fmt.Errorf("claim tick %q at %s: %w", c.Schedule, tick, err)
	}
	return stored, stored.Holder == c.Holder, nil
}
