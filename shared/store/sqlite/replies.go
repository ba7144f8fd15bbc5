package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/store"
)

// Replies records that a local run is scripted: its executors answer from
// the scripted replies of a responses file, never from the network. Any
// process that drives the run on (an approval, a resume, the start-up
// sweep) reads it and answers from the same file, skipping the replies the
// run already used.
type Replies struct {
	// Source is the responses file, an absolute path.
	Source string `json:"source"`
	// Consumed counts the replies the run used so far, per step key (see
	// executor.Responses.Consumed).
	Consumed map[string]int `json:"consumed,omitempty"`
}

// SetReplies records runID as scripted by r, replacing what was recorded.
// Errors: ErrInvalid (empty run ID or source, a negative count).
func (s *Store) SetReplies(ctx context.Context, runID string, r Replies) error {
	if runID == "" || r.Source == "" {
		return fmt.Errorf("set replies of run %q: %w: empty run ID or source", runID, store.ErrInvalid)
	}
	consumed, err := encodeConsumed(r.Consumed)
	if err != nil {
		return fmt.Errorf("set replies of run %q: %w", runID, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO run_replies (run_id, source, consumed) VALUES (?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET source = excluded.source, consumed = excluded.consumed`,
			runID, r.Source, consumed)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM run_replies_used WHERE run_id = ?`, runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("set replies of run %q: %w", runID, err)
	}
	return nil
}

// SetConsumed records how many replies a scripted run used of the steps
// (and tools) in consumed; the counts stored for others stay as they are.
// A run's counts only grow, and it records those that changed, a row per
// step key (run_replies_used): a step's write does not grow with the run.
// No counts given writes nothing. Errors: ErrNotFound when the run is not
// scripted, ErrInvalid. Under
// DeferWrites the counts are committed with the next write transaction
// (see DeferWrites), and a run that is not scripted is not reported.
func (s *Store) SetConsumed(ctx context.Context, runID string, consumed map[string]int) error {
	for k, n := range consumed {
		if n < 0 {
			return fmt.Errorf("set consumed replies of run %q: %w: step %q: negative count %d", runID, store.ErrInvalid, k, n)
		}
	}
	if len(consumed) == 0 {
		return nil
	}
	// The statement's arguments, taken now: the caller may change
	// consumed once SetConsumed returns.
	args := make([][3]any, 0, len(consumed))
	for k, n := range consumed {
		args = append(args, [3]any{runID, k, n})
	}
	// put writes the counts; found is false when the run is not scripted.
	put := func(ctx context.Context, tx wtx) (found bool, err error) {
		st := tx.StmtContext(ctx, s.cp.setConsumed)
		for _, a := range args {
			res, err := st.ExecContext(ctx, a[:]...)
			if err != nil {
				return false, err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return false, err
			}
		}
		return true, nil
	}
	if deferred(ctx) {
		s.stage(staged{
			run:  runID,
			what: func() string { return fmt.Sprintf("set consumed replies of run %q", runID) },
			fn: func(ctx context.Context, tx wtx) error {
				_, err := put(ctx, tx)
				return err
			},
		})
		return nil
	}
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		found, err := put(ctx, tx)
		if err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set consumed replies of run %q: %w", runID, err)
	}
	return nil
}

// GetReplies returns what SetReplies recorded for runID. Errors:
// ErrNotFound when the run is not scripted.
func (s *Store) GetReplies(ctx context.Context, runID string) (Replies, error) {
	if err := s.settleRun(ctx, runID); err != nil {
		return Replies{}, fmt.Errorf("replies of run %q: %w", runID, err)
	}
	var r Replies
	var consumed string
	err := s.rs.replies.QueryRowContext(ctx, runID).Scan(&r.Source, &consumed)
	if errors.Is(err, sql.ErrNoRows) {
		return Replies{}, fmt.Errorf("replies of run %q: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return Replies{}, fmt.Errorf("replies of run %q: %w", runID, err)
	}
	if err := json.Unmarshal([]byte(consumed), &r.Consumed); err != nil {
		return Replies{}, fmt.Errorf("replies of run %q: consumed counts: %w", runID, err)
	}
	// The counts recorded since (SetConsumed) replace those.
	rows, err := s.rs.repliesUsed.QueryContext(ctx, runID)
	if err != nil {
		return Replies{}, fmt.Errorf("replies of run %q: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return Replies{}, fmt.Errorf("replies of run %q: %w", runID, err)
		}
		if r.Consumed == nil {
			r.Consumed = map[string]int{}
		}
		r.Consumed[k] = n
	}
	if err := rows.Err(); err != nil {
		return Replies{}, fmt.Errorf("replies of run %q: %w", runID, err)
	}
	return r, nil
}

func encodeConsumed(consumed map[string]int) (string, error) {
	for k, n := range consumed {
		if n < 0 {
			return "", fmt.Errorf("%w: step %q: negative count %d", store.ErrInvalid, k, n)
		}
	}
	if consumed == nil {
		consumed = map[string]int{}
	}
	b, err := json.Marshal(consumed)
	return string(b), err
}
