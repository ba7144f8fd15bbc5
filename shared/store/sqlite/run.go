package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

const runColumns = `id, pipeline, status, reason, stage, source, team, trigger, fingerprint,
	parent_run_id, config_fingerprint, input_tokens, output_tokens, cost_usd,
	started_at, completed_at, resumed_at, final_output`

const summaryColumns = `id, pipeline, status, reason, stage, source, team, fingerprint,
	parent_run_id, config_fingerprint, started_at, completed_at, resumed_at`

// createRunSQL inserts a run unless its ID is taken (prepared at Open).
const createRunSQL = `INSERT INTO runs (` + runColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING`

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	r, err := store.NormalizeRun(r)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	var exists bool
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		res, err := tx.StmtContext(ctx, s.cp.createRun).ExecContext(ctx,
			r.ID, r.Pipeline, string(r.Status), r.Reason, r.Stage, r.Source, r.Team, jsonText(r.Trigger),
			r.Fingerprint, r.ParentRunID, r.ConfigFingerprint, r.Usage.InputTokens, r.Usage.OutputTokens,
			nullFloat(r.Usage.CostUSD), record.FormatTime(r.StartedAt), nullTime(r.CompletedAt),
			nullTime(r.ResumedAt), jsonText(r.FinalOutput))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		exists = n == 0
		return err
	})
	if err != nil {
		return fmt.Errorf("create run %q: %w", r.ID, err)
	}
	if exists {
		return fmt.Errorf("create run %q: %w", r.ID, store.ErrExists)
	}
	return nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := s.settleRun(ctx, id); err != nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, err)
	}
	r, err := scanRun(s.rs.run.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, err)
	}
	return r, nil
}

// GetRunWithSteps implements store.Store. The run and its steps are read in
// one transaction, so they are consistent with each other.
func (s *Store) GetRunWithSteps(ctx context.Context, id string) (store.Run, []store.StepRecord, error) {
	if err := s.settleRun(ctx, id); err != nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, err)
	}
	defer tx.Rollback()
	r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, err)
	}
	steps, err := listSteps(ctx, tx, id)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, err)
	}
	return r, steps, nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, id string, u store.RunUpdate) error {
	u, err := store.NormalizeRunUpdate(u)
	if err != nil {
		return fmt.Errorf("update run %q: %w", id, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		var cur string
		err := tx.StmtContext(ctx, s.cp.runStatus).QueryRowContext(ctx, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if st := store.RunStatus(cur); st.Terminal() {
			if st == u.Status {
				return nil
			}
			return fmt.Errorf("%w: run is %s, cannot become %s", store.ErrConflict, st, u.Status)
		}
		// Columns the update does not set are bound NULL (or, for the
		// usage, flagged off) and keep their value.
		var completed, resumed, final any
		if u.CompletedAt != nil {
			completed = record.FormatTime(*u.CompletedAt)
		}
		if u.ResumedAt != nil {
			resumed = record.FormatTime(*u.ResumedAt)
		}
		if len(u.FinalOutput) > 0 {
			final = string(u.FinalOutput)
		}
		var usage store.Usage
		if u.Usage != nil {
			usage = *u.Usage
		}
		_, err = tx.StmtContext(ctx, s.cp.updateRun).ExecContext(ctx, id, string(u.Status), u.Reason,
			completed, resumed, final, u.Usage != nil, usage.InputTokens, usage.OutputTokens, nullFloat(usage.CostUSD))
		return err
	})
	if err != nil {
		return fmt.Errorf("update run %q: %w", id, err)
	}
	return nil
}

// updateRunSQL is UpdateRun's statement (prepared at Open): status and
// reason always; the times and the final output when given (else NULL,
// which keeps the stored value); the usage when ?7 is true.
const updateRunSQL = `UPDATE runs SET status = ?2, reason = ?3,
	completed_at = coalesce(?4, completed_at),
	resumed_at = coalesce(?5, resumed_at),
	final_output = coalesce(?6, final_output),
	input_tokens = CASE WHEN ?7 THEN ?8 ELSE input_tokens END,
	output_tokens = CASE WHEN ?7 THEN ?9 ELSE output_tokens END,
	cost_usd = CASE WHEN ?7 THEN ?10 ELSE cost_usd END
	WHERE id = ?1`

// ListRuns implements store.Store.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	f, err := store.NormalizeRunFilter(f)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var where []string
	var args []any
	if f.Pipeline != "" {
		where, args = append(where, "pipeline = ?"), append(args, f.Pipeline)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if f.Team != "" {
		where, args = append(where, "team = ?"), append(args, f.Team)
	}
	if f.Stage != "" {
		where, args = append(where, "stage = ?"), append(args, f.Stage)
	}
	q := `SELECT ` + summaryColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?`
	rows, err := s.r.QueryContext(ctx, q, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		var r store.Run
		var status, started string
		var completed, resumed sql.NullString
		if err := rows.Scan(&r.ID, &r.Pipeline, &status, &r.Reason, &r.Stage, &r.Source, &r.Team,
			&r.Fingerprint, &r.ParentRunID, &r.ConfigFingerprint, &started, &completed, &resumed); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		r.Status = store.RunStatus(status)
		if err := scanTimes(&r, started, completed, resumed); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// AddUsage implements store.Store. Under DeferWrites the contribution is
// checked at once and added with the next write transaction (see
// DeferWrites).
func (s *Store) AddUsage(ctx context.Context, runID, key string, u store.Usage) error {
	if err := store.CheckUsage(key, u); err != nil {
		return fmt.Errorf("add usage to run %q: %w", runID, err)
	}
	if deferred(ctx) {
		s.stage(staged{
			run:  runID,
			what: func() string { return fmt.Sprintf("add usage to run %q", runID) },
			fn: func(ctx context.Context, tx wtx) error {
				err := s.addUsage(ctx, tx, runID, key, u)
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			},
		})
		return nil
	}
	err := s.write(ctx, func(ctx context.Context, tx wtx) error { return s.addUsage(ctx, tx, runID, key, u) })
	if err != nil {
		return fmt.Errorf("add usage to run %q: %w", runID, err)
	}
	return nil
}

// addUsageSQL adds a contribution to a run's totals (prepared at Open).
const addUsageSQL = `UPDATE runs SET
	input_tokens = input_tokens + ?1,
	output_tokens = output_tokens + ?2,
	cost_usd = CASE WHEN ?3 IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ?3 END
	WHERE id = ?4`

func (s *Store) addUsage(ctx context.Context, tx wtx, runID, key string, u store.Usage) error {
	var one int
	err := tx.StmtContext(ctx, s.cp.runExists).QueryRowContext(ctx, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	res, err := tx.StmtContext(ctx, s.cp.addUsageKey).ExecContext(ctx, runID, key)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // n == 0: this key was counted already
	}
	_, err = tx.StmtContext(ctx, s.cp.addUsage).ExecContext(ctx, u.InputTokens, u.OutputTokens, nullFloat(u.CostUSD), runID)
	return err
}

// ClaimDedup implements store.Store. The claim is read, judged and written in
// one write transaction, which no other writer can interleave with.
func (s *Store) ClaimDedup(ctx context.Context, pipeline, fingerprint, runID string, window time.Duration, now time.Time) (string, bool, error) {
	if err := store.CheckClaim(pipeline, fingerprint, runID, window, now); err != nil {
		return "", false, fmt.Errorf("claim dedup: %w", err)
	}
	var existing string
	var claimed bool
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		existing, claimed = "", false
		var holder, at string
		err := tx.QueryRowContext(ctx, `SELECT run_id, claimed_at FROM dedup WHERE pipeline = ? AND fingerprint = ?`,
			pipeline, fingerprint).Scan(&holder, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case holder == runID:
			claimed = true
			return nil
		default:
			claimedAt, err := record.ParseTime(at)
			if err != nil {
				return err
			}
			var status string
			err = tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, holder).Scan(&status)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if store.ClaimHolds(claimedAt, err == nil, store.RunStatus(status), window, now) {
				existing = holder
				return nil
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO dedup (pipeline, fingerprint, run_id, claimed_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (pipeline, fingerprint) DO UPDATE SET run_id = excluded.run_id, claimed_at = excluded.claimed_at`,
			pipeline, fingerprint, runID, record.FormatTime(now))
		claimed = err == nil
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, err)
	}
	return existing, claimed, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (store.Run, error) {
	var r store.Run
	var status, started string
	var trigger, final, completed, resumed sql.NullString
	var cost sql.NullFloat64
	err := row.Scan(&r.ID, &r.Pipeline, &status, &r.Reason, &r.Stage, &r.Source, &r.Team, &trigger,
		&r.Fingerprint, &r.ParentRunID, &r.ConfigFingerprint, &r.Usage.InputTokens, &r.Usage.OutputTokens,
		&cost, &started, &completed, &resumed, &final)
	if err != nil {
		return store.Run{}, err
	}
	r.Status = store.RunStatus(status)
	r.Trigger = rawJSON(trigger)
	r.FinalOutput = rawJSON(final)
	r.Usage.CostUSD = floatPtr(cost)
	if err := scanTimes(&r, started, completed, resumed); err != nil {
		return store.Run{}, err
	}
	return r, nil
}

func scanTimes(r *store.Run, started string, completed, resumed sql.NullString) error {
	var err error
	if r.StartedAt, err = record.ParseTime(started); err != nil {
		return err
	}
	if r.CompletedAt, err = timePtr(completed); err != nil {
		return err
	}
	r.ResumedAt, err = timePtr(resumed)
	return err
}

func jsonText(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid || s.String == "" {
		return nil
	}
	return json.RawMessage(s.String)
}

func nullFloat(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func floatPtr(f sql.NullFloat64) *float64 {
	if !f.Valid {
		return nil
	}
	v := f.Float64
	return &v
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return record.FormatTime(*t)
}

func timePtr(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := record.ParseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ReleaseDedup implements store.Store.
func (s *Store) ReleaseDedup(ctx context.Context, pipeline, fingerprint, runID string) error {
	if pipeline == "" || fingerprint == "" || runID == "" {
		return fmt.Errorf("release dedup: %w: empty pipeline, fingerprint or run id", store.ErrInvalid)
	}
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM dedup WHERE pipeline = ? AND fingerprint = ? AND run_id = ?`, pipeline, fingerprint, runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("release dedup for run %q: %w", runID, err)
	}
	return nil
}
