package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// SaveCheckpoint implements store.Checkpointer.
func (s *Store) SaveCheckpoint(ctx context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	if err := store.CheckCheckpoint(cp, events); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var prev int64
		var snapshot string
		err := tx.QueryRowContext(ctx, `SELECT seq, snapshot FROM checkpoints WHERE run_id = ?`, cp.RunID).Scan(&prev, &snapshot)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if exists && cp.Seq < prev {
			return fmt.Errorf("%w: seq %d is behind the stored seq %d", store.ErrConflict, cp.Seq, prev)
		}
		if exists && cp.Seq == prev && !store.SameJSON(cp.Snapshot, json.RawMessage(snapshot)) {
			return fmt.Errorf("%w: a different snapshot is stored at seq %d", store.ErrConflict, prev)
		}
		// Events up to prev must repeat what is stored; the rest must be
		// exactly prev+1 .. cp.Seq.
		next := prev + 1
		for _, e := range events {
			if e.Seq <= prev {
				if err := sameStoredEvent(ctx, tx, cp.RunID, e); err != nil {
					return err
				}
				continue
			}
			if e.Seq != next {
				return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO history (run_id, seq, time, type, state, detail) VALUES (?, ?, ?, ?, ?, ?)`,
				cp.RunID, e.Seq, record.FormatTime(e.Time), e.Type, e.State, jsonText(e.Detail))
			if err != nil {
				return err
			}
			next++
		}
		if next <= cp.Seq {
			return fmt.Errorf("%w: history event %d is missing", store.ErrInvalid, next)
		}
		if exists && cp.Seq == prev {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, snapshot = excluded.snapshot, updated_at = excluded.updated_at`,
			cp.RunID, cp.Seq, string(cp.Snapshot), record.FormatTime(cp.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("save checkpoint of run %q at seq %d: %w", cp.RunID, cp.Seq, err)
	}
	return nil
}

func sameStoredEvent(ctx context.Context, tx *sql.Tx, runID string, e store.HistoryEvent) error {
	stored, err := scanEvent(tx.QueryRowContext(ctx, `SELECT seq, time, type, state, detail FROM history WHERE run_id = ? AND seq = ?`, runID, e.Seq))
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

// LoadCheckpoint implements store.Checkpointer.
func (s *Store) LoadCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	cp := store.Checkpoint{RunID: runID}
	var snapshot, updated string
	err := s.r.QueryRowContext(ctx, `SELECT seq, snapshot, updated_at FROM checkpoints WHERE run_id = ?`, runID).
		Scan(&cp.Seq, &snapshot, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint of run %q: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint of run %q: %w", runID, err)
	}
	cp.Snapshot = json.RawMessage(snapshot)
	if cp.UpdatedAt, err = record.ParseTime(updated); err != nil {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint of run %q: %w", runID, err)
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
