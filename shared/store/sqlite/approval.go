package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

const approvalColumns = `id, run_id, step, pipeline, message, task_token, created_at, expires_at,
	decision, decided_by, decided_at`

// CreateApproval implements store.Store.
func (s *Store) CreateApproval(ctx context.Context, a store.Approval) error {
	if err := s.settleRun(ctx, a.RunID); err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	a, err := store.NormalizeApproval(a)
	if err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO approvals (`+approvalColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', '', NULL) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.RunID, a.Step, a.Pipeline, a.Message, a.TaskToken,
			record.FormatTime(a.CreatedAt), record.FormatTime(a.ExpiresAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrExists
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create approval for run %q step %q: %w", a.RunID, a.Step, err)
	}
	return nil
}

// GetApproval implements store.Store.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	if err := s.settle(ctx); err != nil {
		return store.Approval{}, fmt.Errorf("get approval %q: %w", id, err)
	}
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("get approval: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("get approval: %w", err)
	}
	return a, nil
}

// DecideApproval implements store.Store.
func (s *Store) DecideApproval(ctx context.Context, id string, d store.Decision, by string, now time.Time) (store.Approval, error) {
	if err := store.CheckDecision(id, d, by); err != nil {
		return store.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	var a store.Approval
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		var err error
		a, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if a.Decision != store.DecisionPending {
			return fmt.Errorf("%w: already %s", store.ErrConflict, a.Decision)
		}
		if !now.Before(a.ExpiresAt) {
			return fmt.Errorf("%w: expired at %s", store.ErrExpired, a.ExpiresAt.Format(time.RFC3339))
		}
		at := now.UTC()
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET decision = ?, decided_by = ?, decided_at = ? WHERE id = ?`,
			string(d), by, record.FormatTime(at), id)
		if err != nil {
			return err
		}
		a.Decision, a.DecidedBy, a.DecidedAt = d, by, &at
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("decide approval: %w", err)
	}
	return a, nil
}

func scanApproval(row scanner) (store.Approval, error) {
	var a store.Approval
	var created, expires, decision string
	var decided sql.NullString
	err := row.Scan(&a.ID, &a.RunID, &a.Step, &a.Pipeline, &a.Message, &a.TaskToken, &created, &expires,
		&decision, &a.DecidedBy, &decided)
	if err != nil {
		return store.Approval{}, err
	}
	a.Decision = store.Decision(decision)
	if a.CreatedAt, err = record.ParseTime(created); err != nil {
		return store.Approval{}, err
	}
	if a.ExpiresAt, err = record.ParseTime(expires); err != nil {
		return store.Approval{}, err
	}
	if a.DecidedAt, err = timePtr(decided); err != nil {
		return store.Approval{}, err
	}
	return a, nil
}

// RunApprovals returns the approvals of a run, oldest first: the local
// CLI finds the one to decide by run and step.
func (s *Store) RunApprovals(ctx context.Context, runID string) ([]store.Approval, error) {
	if err := s.settleRun(ctx, runID); err != nil {
		return nil, fmt.Errorf("approvals of run %q: %w", runID, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE run_id = ? ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list approvals of run %q: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list approvals of run %q: %w", runID, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ApprovalByTaskToken returns the approval that holds taskToken: the
// local engine finds the run a decision continues. Errors: ErrNotFound.
func (s *Store) ApprovalByTaskToken(ctx context.Context, taskToken string) (store.Approval, error) {
	if err := s.settle(ctx); err != nil {
		return store.Approval{}, fmt.Errorf("approval by task token: %w", err)
	}
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE task_token = ?`, taskToken))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("approval of a task token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("approval of a task token: %w", err)
	}
	return a, nil
}

// PendingApprovals returns the undecided approvals of runs that wait, the
// earliest to expire first, at most limit of them (limit <= 0: 1,000): the
// local engine times out the human steps whose approvals expired.
func (s *Store) PendingApprovals(ctx context.Context, limit int) ([]store.Approval, error) {
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+prefixed("a.", approvalColumns)+` FROM approvals a JOIN runs r ON r.id = a.run_id
		WHERE a.decision = '' AND r.status = ? ORDER BY a.expires_at, a.id LIMIT ?`, string(store.RunWaiting), limit)
	if err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list pending approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// prefixed qualifies each of a comma-separated list of columns.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
