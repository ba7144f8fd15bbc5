package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// putClaimSQL stores a claim, replacing the run's (prepared at Open).
const putClaimSQL = `INSERT INTO run_claims (run_id, holder, pid, host, expires_at) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, host = excluded.host,
	expires_at = excluded.expires_at`

// ClaimRun implements store.Store. The stored claim is read, judged and
// replaced in one write transaction, which no other writer can interleave
// with.
func (s *Store) ClaimRun(ctx context.Context, c store.RunClaim, takeover string, now time.Time) (store.RunClaim, bool, error) {
	if err := store.CheckRunClaim(c, now); err != nil {
		return store.RunClaim{}, false, fmt.Errorf("claim run: %w", err)
	}
	c.ExpiresAt = c.ExpiresAt.UTC()
	var stored store.RunClaim
	var claimed bool
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		stored, claimed = store.RunClaim{RunID: c.RunID}, false
		var expires string
		err := tx.StmtContext(ctx, s.cp.getClaim).QueryRowContext(ctx, c.RunID).
			Scan(&stored.Holder, &stored.PID, &stored.Host, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if stored.ExpiresAt, err = record.ParseTime(expires); err != nil {
				return err
			}
			if !store.ClaimTaken(stored, c.Holder, takeover, now) {
				return nil
			}
		}
		_, err = tx.StmtContext(ctx, s.cp.putClaim).ExecContext(ctx,
			c.RunID, c.Holder, c.PID, c.Host, record.FormatTime(c.ExpiresAt))
		stored, claimed = c, err == nil
		return err
	})
	if err != nil {
		return store.RunClaim{}, false, fmt.Errorf("claim run %q: %w", c.RunID, err)
	}
	return stored, claimed, nil
}

// ReleaseRun implements store.Store.
func (s *Store) ReleaseRun(ctx context.Context, runID, holder string) error {
	if runID == "" || holder == "" {
		return fmt.Errorf("release run: %w: empty run ID or holder", store.ErrInvalid)
	}
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.StmtContext(ctx, s.cp.releaseClaim).ExecContext(ctx, runID, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("release run %q: %w", runID, err)
	}
	return nil
}
