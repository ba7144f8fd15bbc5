package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// HistoryEvent is one entry of a run's execution history in the local
// engine, the counterpart of a Step Functions history event.
type HistoryEvent struct {
	Seq    int64           `json:"seq"` // 1-based order within the run
	Time   time.Time       `json:"time"`
	Type   string          `json:"type"` // StateEntered, StateExited, TaskScheduled, TaskSucceeded, TaskFailed, TaskRetried, ...
	State  string          `json:"state,omitempty"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Checkpoint is the local engine's saved execution state of a run.
type Checkpoint struct {
	RunID     string
	Seq       int64           // the last history Seq included
	Snapshot  json.RawMessage // the engine's serialized execution state (opaque to the store)
	UpdatedAt time.Time
}

// CheckCheckpoint checks the arguments of SaveCheckpoint on their own: the
// run ID, a JSON snapshot, events in strictly increasing Seq order between 1
// and cp.Seq with a type each. Whether they continue the stored history is
// the store's part.
func CheckCheckpoint(cp Checkpoint, events []HistoryEvent) error {
	if err := checkName("run ID", cp.RunID); err != nil {
		return err
	}
	if cp.Seq < 0 {
		return fmt.Errorf("%w: checkpoint seq %d is negative", ErrInvalid, cp.Seq)
	}
	if len(cp.Snapshot) == 0 {
		return fmt.Errorf("%w: checkpoint of run %q has no snapshot", ErrInvalid, cp.RunID)
	}
	if err := checkJSON("snapshot", cp.Snapshot, MaxSnapshotBytes); err != nil {
		return err
	}
	if cp.UpdatedAt.IsZero() {
		return fmt.Errorf("%w: checkpoint of run %q has no UpdatedAt", ErrInvalid, cp.RunID)
	}
	var prev int64
	for _, e := range events {
		switch {
		case e.Seq <= prev:
			return fmt.Errorf("%w: history event seq %d follows %d", ErrInvalid, e.Seq, prev)
		case e.Seq > cp.Seq:
			return fmt.Errorf("%w: history event seq %d is beyond checkpoint seq %d", ErrInvalid, e.Seq, cp.Seq)
		case e.Type == "":
			return fmt.Errorf("%w: history event %d has no type", ErrInvalid, e.Seq)
		}
		if err := checkJSON(fmt.Sprintf("history event %d detail", e.Seq), e.Detail, MaxSnapshotBytes); err != nil {
			return err
		}
		prev = e.Seq
	}
	return nil
}

// SameEvent reports whether two events are the same entry: equal Seq, Type,
// State, instant and JSON detail (whitespace aside).
func SameEvent(a, b HistoryEvent) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.State == b.State && a.Time.Equal(b.Time) && SameJSON(a.Detail, b.Detail)
}

// SameJSON reports whether a and b are the same JSON text apart from
// insignificant whitespace. Empty and absent are the same.
func SameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
