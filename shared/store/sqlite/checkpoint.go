package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// checkpointStmts are the statements of the most frequent writes,
// prepared once on the writer connection: per step, SaveCheckpoint's and
// a step's (its record, usage and scripted replies; SQLite parsing the
// step insert every time was half of PutStep's cost in BenchmarkRun's
// profile); per run, its claim, record and status.
type checkpointStmts struct {
	seq, runKey, putJournal, appendJournal, putSnapshot    *sql.Stmt
	putStep, stepDigest                                    *sql.Stmt
	runExists, addUsageKey, addUsage, setConsumed          *sql.Stmt
	runStatus, createRun, getClaim, putClaim, releaseClaim *sql.Stmt
	updateRun                                              *sql.Stmt
}

func (s *Store) prepareCheckpoints(ctx context.Context) error {
	type query struct {
		dst  **sql.Stmt
		text string
	}
	queries := []query{
		{&s.cp.seq, `SELECT j.id - (r.key << 32) FROM journal_runs r, journal j
			WHERE r.run_id = ? AND j.id BETWEEN r.key << 32 AND (r.key << 32) + ` + seqMask + ` ORDER BY j.id DESC LIMIT 1`},
		{&s.cp.runKey, `INSERT INTO journal_runs (run_id) VALUES (?) ON CONFLICT (run_id) DO NOTHING`},
		{&s.cp.putJournal, `INSERT INTO journal (id, updated_at, body)
			SELECT (key << 32) + ?2, ?3, ?4 FROM journal_runs WHERE run_id = ?1`},
		{&s.cp.appendJournal, `INSERT INTO journal (id, updated_at, body)
			SELECT (r.key << 32) + ?2, ?3, ?4 FROM journal_runs r WHERE r.run_id = ?1
			AND coalesce((SELECT max(id) FROM journal WHERE id BETWEEN r.key << 32 AND (r.key << 32) + ` + seqMask + `), r.key << 32) = (r.key << 32) + ?5`},
		{&s.cp.putSnapshot, `INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, snapshot = excluded.snapshot, updated_at = excluded.updated_at`},
		{&s.cp.putStep, putStepSQL},
		{&s.cp.stepDigest, `SELECT digest FROM steps WHERE run_id = ? AND name = ? AND attempt = ?`},
		{&s.cp.runExists, `SELECT 1 FROM runs WHERE id = ?`},
		{&s.cp.addUsageKey, `INSERT INTO run_usage (run_id, key) VALUES (?, ?) ON CONFLICT DO NOTHING`},
		{&s.cp.addUsage, addUsageSQL},
		{&s.cp.setConsumed, `INSERT INTO run_replies_used (run_id, key, n) SELECT run_id, ?2, ?3 FROM run_replies WHERE run_id = ?1
			ON CONFLICT (run_id, key) DO UPDATE SET n = excluded.n`},
		{&s.cp.runStatus, `SELECT status FROM runs WHERE id = ?`},
		{&s.cp.updateRun, updateRunSQL},
		{&s.cp.createRun, createRunSQL},
		{&s.cp.getClaim, `SELECT holder, pid, host, expires_at FROM run_claims WHERE run_id = ?`},
		{&s.cp.putClaim, putClaimSQL},
		{&s.cp.releaseClaim, `DELETE FROM run_claims WHERE run_id = ? AND holder = ?`},
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
	// The reads of every run, prepared on the reader pool (database/sql
	// prepares them again on each connection the first time it runs
	// them there): parsing GetReplies' and GetRun's SQL at each call was
	// most of their cost, 5% of a ten-step run's CPU through serve.
	for _, q := range []query{
		{&s.rs.replies, `SELECT source, consumed FROM run_replies WHERE run_id = ?`},
		{&s.rs.repliesUsed, `SELECT key, n FROM run_replies_used WHERE run_id = ?`},
		{&s.rs.run, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		{&s.rs.journalState, journalQuery(readState)},
		{&s.rs.journalEvents, journalQuery(readEvents)},
	} {
		st, err := s.r.PrepareContext(ctx, q.text)
		if err != nil {
			return fmt.Errorf("prepare read statements: %w", err)
		}
		*q.dst = st
	}
	return nil
}

// readStmts are the reads of every run, prepared on the reader pool.
type readStmts struct {
	replies, repliesUsed, run, journalState, journalEvents *sql.Stmt
}

func (r *readStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.replies, r.repliesUsed, r.run, r.journalState, r.journalEvents} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

func (c *checkpointStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{c.seq, c.runKey, c.putJournal, c.appendJournal, c.putSnapshot, c.putStep, c.stepDigest,
		c.runExists, c.addUsageKey, c.addUsage, c.setConsumed, c.runStatus, c.createRun, c.getClaim, c.putClaim,
		c.releaseClaim, c.updateRun} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// SaveCheckpoint implements store.Checkpointer. A checkpoint whose events
// follow the stored ones is appended as one journal row by one statement
// that checks the run's last seq itself. Any other reads the run's last
// seq and, when it repeats stored events or the stored seq, the stored
// state and events, to tell a repeat from a conflict.
func (s *Store) SaveCheckpoint(ctx context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	if err := store.CheckCheckpoint(cp, events); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if cp.Seq > maxSeq {
		return fmt.Errorf("save checkpoint of run %q: %w: seq %d is over the %d a run's journal holds", cp.RunID, store.ErrInvalid, cp.Seq, maxSeq)
	}
	updated := record.FormatTime(cp.UpdatedAt)
	inRow := len(cp.Snapshot) <= maxRowSnapshot // else the snapshot is kept apart
	// Encoded before the write, outside the one writer's turn, as if
	// every event were new (encoded again in the rare repeat).
	body, err := encodeJournal(cp, events, inRow)
	if err != nil {
		return fmt.Errorf("save checkpoint of run %q at seq %d: %w", cp.RunID, cp.Seq, err)
	}
	// keepApart writes a snapshot too large for the journal row to the
	// run's checkpoint row, replacing the one there.
	keepApart := func(ctx context.Context, tx wtx) error {
		if inRow {
			return nil
		}
		_, err := tx.StmtContext(ctx, s.cp.putSnapshot).ExecContext(ctx, cp.RunID, cp.Seq, string(cp.Snapshot), updated)
		return err
	}
	follows := followsOn(cp, events)
	err = s.write(ctx, func(ctx context.Context, tx wtx) error {
		if follows {
			// The usual checkpoint: its events follow the stored ones.
			// One statement appends it when the run's last seq is the
			// one before its first event, and appends nothing otherwise,
			// left to the checks below.
			res, err := tx.StmtContext(ctx, s.cp.appendJournal).ExecContext(ctx,
				cp.RunID, cp.Seq, updated, body, events[0].Seq-1)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				return keepApart(ctx, tx)
			}
		}
		var prev int64
		err := tx.StmtContext(ctx, s.cp.seq).QueryRowContext(ctx, cp.RunID).Scan(&prev)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if exists && cp.Seq < prev {
			return fmt.Errorf("%w: seq %d is behind the stored seq %d", store.ErrConflict, cp.Seq, prev)
		}
		// Events up to prev must repeat what is stored; the rest must be
		// exactly prev+1 .. cp.Seq.
		var repeated []store.HistoryEvent
		fresh := events
		for i, e := range events {
			if e.Seq > prev {
				fresh = events[i:]
				break
			}
			repeated = events[:i+1]
			fresh = nil
		}
		next := prev + 1
		for _, e := range fresh {
			if e.Seq != next {
				return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
			}
			next++
		}
		if next <= cp.Seq {
			return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
		}
		if len(repeated) > 0 || exists && cp.Seq == prev {
			if err := s.sameJournal(ctx, tx, cp, repeated, exists && cp.Seq == prev); err != nil {
				return err
			}
		}
		if exists && cp.Seq == prev {
			return nil // a repeat: everything it holds is stored
		}
		body := body
		if len(fresh) != len(events) {
			var err error
			if body, err = encodeJournal(cp, fresh, inRow); err != nil {
				return err
			}
		}
		if !exists {
			// The run's first row: the run gets its key.
			if _, err := tx.StmtContext(ctx, s.cp.runKey).ExecContext(ctx, cp.RunID); err != nil {
				return err
			}
		}
		if _, err := tx.StmtContext(ctx, s.cp.putJournal).ExecContext(ctx,
			cp.RunID, cp.Seq, updated, body); err != nil {
			return err
		}
		return keepApart(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("save checkpoint of run %q at seq %d: %w", cp.RunID, cp.Seq, err)
	}
	return nil
}

// followsOn reports whether events are numbered one after the other up
// to cp's seq: what a checkpoint that follows the stored one holds.
func followsOn(cp store.Checkpoint, events []store.HistoryEvent) bool {
	if len(events) == 0 {
		return false
	}
	for i, e := range events {
		if e.Seq != events[0].Seq+int64(i) {
			return false
		}
	}
	return events[len(events)-1].Seq == cp.Seq
}

// sameJournal checks a checkpoint saved again against the stored
// journal: each repeated event must be the stored one and, when the same
// seq is saved again, the snapshot must be the stored one and each value
// the stored value (or its absence, for a deletion).
func (s *Store) sameJournal(ctx context.Context, tx wtx, cp store.Checkpoint, repeated []store.HistoryEvent, sameSeq bool) error {
	rows, err := tx.QueryContext(ctx, journalQuery(readState|readEvents), cp.RunID)
	stored, err := foldJournal(rows, err, cp.RunID)
	if err != nil {
		return err
	}
	for _, e := range repeated {
		i, found := slices.BinarySearchFunc(stored.events, e.Seq, func(s store.HistoryEvent, seq int64) int {
			return cmp.Compare(s.Seq, seq)
		})
		if !found {
			return fmt.Errorf("%w: history event %d is not stored", store.ErrConflict, e.Seq)
		}
		if !store.SameEvent(stored.events[i], e) {
			return fmt.Errorf("%w: a different history event %d is stored", store.ErrConflict, e.Seq)
		}
	}
	if !sameSeq {
		return nil
	}
	if !store.SameJSON(cp.Snapshot, stored.cp.Snapshot) {
		return fmt.Errorf("%w: a different snapshot is stored at seq %d", store.ErrConflict, cp.Seq)
	}
	for k, v := range cp.Values {
		sv, ok := stored.cp.Values[k]
		switch {
		case !ok && len(v) != 0:
			return fmt.Errorf("%w: value %q is not stored at seq %d", store.ErrConflict, k, cp.Seq)
		case ok && (len(v) == 0 || !store.SameJSON(v, sv)):
			return fmt.Errorf("%w: a different value %q is stored at seq %d", store.ErrConflict, k, cp.Seq)
		}
	}
	return nil
}

// journalState is a run's journal folded: its checkpoint and its events.
type journalState struct {
	cp     store.Checkpoint
	events []store.HistoryEvent
}

// What a journal query reads of a run's rows.
const (
	readState  = 1 << iota // the checkpoint: the last snapshot, the values
	readEvents             // the history events
)

// journalQuery is the query of a run's journal rows in seq order that
// reads what parts says; its one argument is the run ID. A row of
// version 10 has a body, holding all its parts; a row of version 9 its
// parts as text, and only the last row's snapshot is read. The last row
// also reads the snapshot kept apart in the run's checkpoint row, which
// is the run's when the last row has none of its own.
func journalQuery(parts int) string {
	cols := `j.id - (r.key << 32), j.updated_at, NULL, NULL, NULL, NULL, j.body`
	if parts&readState != 0 {
		cols = `j.id - (r.key << 32), j.updated_at,
			CASE WHEN j.id = (SELECT max(id) FROM journal WHERE id BETWEEN r.key << 32 AND (r.key << 32) + ` + seqMask + `)
			THEN coalesce(j.snapshot, (SELECT snapshot FROM checkpoints WHERE run_id = ?1)) END, j.vals, j.dels, NULL, j.body`
	}
	if parts&readEvents != 0 {
		cols = strings.Replace(cols, "NULL, j.body", "j.events, j.body", 1)
	}
	return `SELECT ` + cols + ` FROM journal_runs r JOIN journal j
		ON j.id BETWEEN r.key << 32 AND (r.key << 32) + ` + seqMask + ` WHERE r.run_id = ?1 ORDER BY j.id`
}

// foldJournal folds the rows of a journal query of runID (one statement:
// one consistent read) and closes them; store.ErrNotFound when there are
// none.
func foldJournal(rows *sql.Rows, err error, runID string) (journalState, error) {
	if err != nil {
		return journalState{}, err
	}
	defer rows.Close()
	st := journalState{cp: store.Checkpoint{RunID: runID}}
	found := false
	for rows.Next() {
		var updated string
		var snapshot, vals, dels, events, body []byte
		if err := rows.Scan(&st.cp.Seq, &updated, &snapshot, &vals, &dels, &events, &body); err != nil {
			return journalState{}, err
		}
		found = true
		if body != nil {
			// A row of version 10: its parts are in its body, and its
			// snapshot, when it has one, is the latest.
			p, err := decodeBody(body)
			if err != nil {
				return journalState{}, fmt.Errorf("checkpoint at seq %d: %w", st.cp.Seq, err)
			}
			if p[partSnapshot] != nil {
				snapshot = p[partSnapshot]
			}
			vals, dels, events = p[partVals], p[partDels], p[partEvents]
		}
		if snapshot != nil {
			st.cp.Snapshot = json.RawMessage(snapshot)
		}
		if st.cp.UpdatedAt, err = record.ParseTime(updated); err != nil {
			return journalState{}, err
		}
		if st.cp.Values, err = foldValues(st.cp.Values, vals, dels); err != nil {
			return journalState{}, fmt.Errorf("checkpoint at seq %d: %w", st.cp.Seq, err)
		}
		evs, err := decodeEvents(events)
		if err != nil {
			return journalState{}, fmt.Errorf("checkpoint at seq %d: %w", st.cp.Seq, err)
		}
		st.events = append(st.events, evs...)
	}
	if err := rows.Err(); err != nil {
		return journalState{}, err
	}
	if !found {
		return journalState{}, store.ErrNotFound
	}
	if len(st.cp.Values) == 0 {
		st.cp.Values = nil
	}
	return st, nil
}

// LoadCheckpoint implements store.Checkpointer. The run's journal is read
// in one statement, so the snapshot and the values belong to the same
// checkpoint.
func (s *Store) LoadCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	rows, err := s.rs.journalState.QueryContext(ctx, runID)
	st, err := foldJournal(rows, err, runID)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint of run %q: %w", runID, err)
	}
	return st.cp, nil
}

// History implements store.Checkpointer.
func (s *Store) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	rows, err := s.rs.journalEvents.QueryContext(ctx, runID)
	st, err := foldJournal(rows, err, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of run %q: %w", runID, err)
	}
	return st.events, nil
}
