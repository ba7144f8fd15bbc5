package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// batchRows is the most rows one statement of SaveCheckpoint writes: the
// events of a checkpoint, and its values, go in statements of up to that
// many rows.
const batchRows = 16

// checkpointStmts are the statements of the most frequent writes,
// prepared once on the writer connection: per step, SaveCheckpoint's and
// a step's (its record, usage and scripted replies; SQLite parsing the
// step insert every time was half of PutStep's cost in BenchmarkRun's
// profile); per run, its claim, record and status. insertEvents[n-1],
// setValues[n-1] and deleteValues[n-1] write n rows.
type checkpointStmts struct {
	seq, snapshot, event, putCheckpoint, value, putStep, stepDigest *sql.Stmt
	runExists, addUsageKey, addUsage, setConsumed                   *sql.Stmt
	runStatus, createRun, getClaim, putClaim, releaseClaim          *sql.Stmt
	insertEvents, setValues, deleteValues                           [batchRows]*sql.Stmt
}

func (s *Store) prepareCheckpoints(ctx context.Context) error {
	type query struct {
		dst  **sql.Stmt
		text string
	}
	queries := []query{
		{&s.cp.seq, `SELECT seq FROM checkpoints WHERE run_id = ?`},
		{&s.cp.snapshot, `SELECT snapshot FROM checkpoints WHERE run_id = ?`},
		{&s.cp.event, `SELECT seq, time, type, state, detail FROM history WHERE run_id = ? AND seq = ?`},
		{&s.cp.putCheckpoint, `INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, snapshot = excluded.snapshot, updated_at = excluded.updated_at`},
		{&s.cp.value, `SELECT value FROM checkpoint_values WHERE run_id = ? AND key = ?`},
		{&s.cp.putStep, putStepSQL},
		{&s.cp.stepDigest, `SELECT digest FROM steps WHERE run_id = ? AND name = ? AND attempt = ?`},
		{&s.cp.runExists, `SELECT 1 FROM runs WHERE id = ?`},
		{&s.cp.addUsageKey, `INSERT INTO run_usage (run_id, key) VALUES (?, ?) ON CONFLICT DO NOTHING`},
		{&s.cp.addUsage, addUsageSQL},
		{&s.cp.setConsumed, `UPDATE run_replies SET consumed = ? WHERE run_id = ?`},
		{&s.cp.runStatus, `SELECT status FROM runs WHERE id = ?`},
		{&s.cp.createRun, createRunSQL},
		{&s.cp.getClaim, `SELECT holder, pid, host, expires_at FROM run_claims WHERE run_id = ?`},
		{&s.cp.putClaim, putClaimSQL},
		{&s.cp.releaseClaim, `DELETE FROM run_claims WHERE run_id = ? AND holder = ?`},
	}
	for n := 1; n <= batchRows; n++ {
		queries = append(queries,
			query{&s.cp.insertEvents[n-1], `INSERT INTO history (run_id, seq, time, type, state, detail) VALUES ` +
				rows(n, "(?, ?, ?, ?, ?, ?)")},
			query{&s.cp.setValues[n-1], `INSERT INTO checkpoint_values (run_id, key, value) VALUES ` + rows(n, "(?, ?, ?)") +
				` ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value`},
			query{&s.cp.deleteValues[n-1], `DELETE FROM checkpoint_values WHERE run_id = ? AND key IN (` + rows(n, "?") + `)`})
	}
	prepare := s.w.PrepareContext
	if s.wc != nil {
		prepare = s.wc.PrepareContext // connTx
	}
	for _, q := range queries {
		st, err := prepare(ctx, q.text)
		if err != nil {
			return fmt.Errorf("prepare checkpoint statements: %w", err)
		}
		*q.dst = st
	}
	return nil
}

// rows repeats one row's placeholders n times, comma-separated.
func rows(n int, row string) string {
	return strings.Repeat(row+", ", n-1) + row
}

func (c *checkpointStmts) close() error {
	var errs []error
	all := append([]*sql.Stmt{c.seq, c.snapshot, c.event, c.putCheckpoint, c.value, c.putStep, c.stepDigest,
		c.runExists, c.addUsageKey, c.addUsage, c.setConsumed, c.runStatus, c.createRun, c.getClaim, c.putClaim,
		c.releaseClaim}, c.insertEvents[:]...)
	all = append(append(all, c.setValues[:]...), c.deleteValues[:]...)
	for _, st := range all {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// execRows runs stmts[size-1] for each batch of up to batchRows rows of
// width arguments, row i's given by row(i, args). head is put before the
// rows' arguments of every batch.
func execRows(ctx context.Context, tx wtx, stmts *[batchRows]*sql.Stmt, n, width int, head []any, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	args := make([]any, 0, len(head)+min(n, batchRows)*width)
	for start := 0; start < n; start += batchRows {
		size := min(n-start, batchRows)
		args = append(args[:0], head...)
		for i := start; i < start+size; i++ {
			args = row(i, args)
		}
		if _, err := tx.StmtContext(ctx, stmts[size-1]).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// SaveCheckpoint implements store.Checkpointer. It reads the stored seq
// and, only when the same seq is saved again, the stored snapshot and the
// given values, to tell a repeat from a conflict.
func (s *Store) SaveCheckpoint(ctx context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	if err := store.CheckCheckpoint(cp, events); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	err := s.write(ctx, func(ctx context.Context, tx wtx) error {
		var prev int64
		err := tx.StmtContext(ctx, s.cp.seq).QueryRowContext(ctx, cp.RunID).Scan(&prev)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if exists && cp.Seq < prev {
			return fmt.Errorf("%w: seq %d is behind the stored seq %d", store.ErrConflict, cp.Seq, prev)
		}
		if exists && cp.Seq == prev {
			if err := s.sameCheckpoint(ctx, tx, cp); err != nil {
				return err
			}
		}
		// Events up to prev must repeat what is stored; the rest must be
		// exactly prev+1 .. cp.Seq.
		next := prev + 1
		fresh := events
		for i, e := range events {
			if e.Seq > prev {
				fresh = events[i:]
				break
			}
			if err := s.sameStoredEvent(ctx, tx, cp.RunID, e); err != nil {
				return err
			}
			fresh = nil
		}
		for _, e := range fresh {
			if e.Seq != next {
				return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
			}
			next++
		}
		if next <= cp.Seq {
			return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
		}
		err = execRows(ctx, tx, &s.cp.insertEvents, len(fresh), 6, nil, func(i int, args []any) []any {
			e := fresh[i]
			return append(args, cp.RunID, e.Seq, record.FormatTime(e.Time), e.Type, e.State, jsonText(e.Detail))
		})
		if err != nil {
			return err
		}
		if exists && cp.Seq == prev {
			return nil // a repeat: everything it holds is stored
		}
		if _, err := tx.StmtContext(ctx, s.cp.putCheckpoint).ExecContext(ctx,
			cp.RunID, cp.Seq, string(cp.Snapshot), record.FormatTime(cp.UpdatedAt)); err != nil {
			return err
		}
		var set, del []string
		for k, v := range cp.Values {
			if len(v) == 0 {
				del = append(del, k)
			} else {
				set = append(set, k)
			}
		}
		err = execRows(ctx, tx, &s.cp.setValues, len(set), 3, nil, func(i int, args []any) []any {
			return append(args, cp.RunID, set[i], string(cp.Values[set[i]]))
		})
		if err != nil {
			return err
		}
		return execRows(ctx, tx, &s.cp.deleteValues, len(del), 1, []any{cp.RunID}, func(i int, args []any) []any {
			return append(args, del[i])
		})
	})
	if err != nil {
		return fmt.Errorf("save checkpoint of run %q at seq %d: %w", cp.RunID, cp.Seq, err)
	}
	return nil
}

// sameCheckpoint checks that a checkpoint saved again at the stored seq
// holds the stored snapshot and, for each of its values, the stored value
// (or its absence for a deletion).
func (s *Store) sameCheckpoint(ctx context.Context, tx wtx, cp store.Checkpoint) error {
	var snapshot string
	if err := tx.StmtContext(ctx, s.cp.snapshot).QueryRowContext(ctx, cp.RunID).Scan(&snapshot); err != nil {
		return err
	}
	if !store.SameJSON(cp.Snapshot, json.RawMessage(snapshot)) {
		return fmt.Errorf("%w: a different snapshot is stored at seq %d", store.ErrConflict, cp.Seq)
	}
	get := tx.StmtContext(ctx, s.cp.value)
	for k, v := range cp.Values {
		var stored string
		err := get.QueryRowContext(ctx, cp.RunID, k).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if len(v) != 0 {
				return fmt.Errorf("%w: value %q is not stored at seq %d", store.ErrConflict, k, cp.Seq)
			}
		case err != nil:
			return err
		case len(v) == 0 || !store.SameJSON(v, json.RawMessage(stored)):
			return fmt.Errorf("%w: a different value %q is stored at seq %d", store.ErrConflict, k, cp.Seq)
		}
	}
	return nil
}

func (s *Store) sameStoredEvent(ctx context.Context, tx wtx, runID string, e store.HistoryEvent) error {
	stored, err := scanEvent(tx.StmtContext(ctx, s.cp.event).QueryRowContext(ctx, runID, e.Seq))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: history event %d is not stored", store.ErrConflict, e.Seq)
	}
	if err != nil {
		return err
	}
	if !store.SameEvent(stored, e) {
		return fmt.Errorf("%w: a different history event %d is stored", store.ErrConflict, e.Seq)
	}
	return nil
}

// LoadCheckpoint implements store.Checkpointer. The snapshot and the
// values are read in one read transaction, so they belong to the same
// checkpoint.
func (s *Store) LoadCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	cp, err := s.loadCheckpoint(ctx, runID)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint of run %q: %w", runID, err)
	}
	return cp, nil
}

func (s *Store) loadCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.Checkpoint{}, err
	}
	defer tx.Rollback()
	cp := store.Checkpoint{RunID: runID}
	var snapshot, updated string
	err = tx.QueryRowContext(ctx, `SELECT seq, snapshot, updated_at FROM checkpoints WHERE run_id = ?`, runID).
		Scan(&cp.Seq, &snapshot, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Checkpoint{}, store.ErrNotFound
	}
	if err != nil {
		return store.Checkpoint{}, err
	}
	cp.Snapshot = json.RawMessage(snapshot)
	if cp.UpdatedAt, err = record.ParseTime(updated); err != nil {
		return store.Checkpoint{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT key, value FROM checkpoint_values WHERE run_id = ?`, runID)
	if err != nil {
		return store.Checkpoint{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return store.Checkpoint{}, err
		}
		if cp.Values == nil {
			cp.Values = map[string]json.RawMessage{}
		}
		cp.Values[k] = json.RawMessage(v)
	}
	if err := rows.Err(); err != nil {
		return store.Checkpoint{}, err
	}
	return cp, nil
}

// History implements store.Checkpointer.
func (s *Store) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, time, type, state, detail FROM history WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("history of run %q: %w", runID, err)
	}
	defer rows.Close()
	var events []store.HistoryEvent
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("history of run %q: %w", runID, err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of run %q: %w", runID, err)
	}
	return events, nil
}

func scanEvent(row scanner) (store.HistoryEvent, error) {
	var e store.HistoryEvent
	var at string
	var detail sql.NullString
	if err := row.Scan(&e.Seq, &at, &e.Type, &e.State, &detail); err != nil {
		return store.HistoryEvent{}, err
	}
	e.Detail = rawJSON(detail)
	var err error
	e.Time, err = record.ParseTime(at)
	return e, err
}
