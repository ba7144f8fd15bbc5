package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/internal/jsonstr"
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

// Checkpoint is the local engine's saved execution state of a run: a
// snapshot, which each checkpoint replaces, and keyed values, which
// checkpoints change one by one, so that state that did not change since
// the previous checkpoint is neither encoded nor written again. The engine
// keeps its variables, the run's input and other large pieces as values.
type Checkpoint struct {
	RunID     string
	Seq       int64           // the last history Seq included
	Snapshot  json.RawMessage // the engine's serialized execution state (opaque to the store)
	UpdatedAt time.Time
	// Values, when saving, are the values that changed since the
	// previous checkpoint: a key with a nil (empty) value is deleted, the
	// others are set; keys not given keep their stored value. When
	// loading, Values holds every stored value of the run (nil when there
	// are none). Keys are opaque to the store, as are the JSON values.
	Values map[string]json.RawMessage
	// Encoded, when saving, says that Snapshot, Values and the events'
	// Detail were just produced by this process's JSON encoder (the
	// engine's): CheckCheckpoint then checks their sizes but does not
	// validate them again as JSON.
	Encoded bool
}

// CheckCheckpoint checks the arguments of SaveCheckpoint on their own: the
// run ID, a JSON snapshot, value keys and JSON values, events in strictly
// increasing Seq order between 1 and cp.Seq with a type each. Whether they
// continue the stored history is the store's part.
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
	if bad := checkCheckpointJSON(cp.Snapshot, cp.Encoded); bad != nil {
		return checkpointJSONError(bad, "snapshot", len(cp.Snapshot))
	}
	if cp.UpdatedAt.IsZero() {
		return fmt.Errorf("%w: checkpoint of run %q has no UpdatedAt", ErrInvalid, cp.RunID)
	}
	for k, v := range cp.Values {
		if err := checkName("checkpoint value key", k); err != nil {
			return err
		}
		if bad := checkCheckpointJSON(v, cp.Encoded); bad != nil {
			return checkpointJSONError(bad, fmt.Sprintf("checkpoint value %q", k), len(v))
		}
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
		if bad := checkCheckpointJSON(e.Detail, cp.Encoded); bad != nil {
			return checkpointJSONError(bad, fmt.Sprintf("history event %d detail", e.Seq), len(e.Detail))
		}
		prev = e.Seq
	}
	return nil
}

// checkCheckpointJSON is checkJSON for the parts of a checkpoint, which
// are checked at every step of a run: with validJSON, unless encoded. It
// returns ErrTooLarge or ErrInvalid, or nil; checkpointJSONError says
// which part.
func checkCheckpointJSON(v json.RawMessage, encoded bool) error {
	switch {
	case len(v) == 0:
		return nil
	case len(v) > MaxSnapshotBytes:
		return ErrTooLarge
	case !encoded && !validJSON(v):
		return ErrInvalid
	}
	return nil
}

func checkpointJSONError(bad error, what string, size int) error {
	if bad == ErrTooLarge {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, what, size, MaxSnapshotBytes)
	}
	return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
}

// maxJSONDepth is encoding/json's limit on nesting.
const maxJSONDepth = 10000

// validJSON reports whether b is one JSON value with optional white space
// around it: what json.Valid reports (byte strings are not checked for
// UTF-8, nesting is limited to maxJSONDepth), several times faster.
func validJSON(b []byte) bool {
	v := jsonValidator{b: b}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(b)
}

type jsonValidator struct {
	b []byte
	i int
}

func (v *jsonValidator) space() { v.i = jsonstr.SkipSpace(v.b, v.i) }

func (v *jsonValidator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return false
		}
		v.i++
		v.space()
		if v.i < len(v.b) && v.b[v.i] == '}' {
			v.i++
			return true
		}
		for {
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
				return false
			}
			v.space()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return false
			}
			v.i++
			v.space()
			if !v.value(depth + 1) {
				return false
			}
			v.space()
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case ',':
				v.i++
				v.space()
			case '}':
				v.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return false
		}
		v.i++
		v.space()
		if v.i < len(v.b) && v.b[v.i] == ']' {
			v.i++
			return true
		}
		for {
			if !v.value(depth + 1) {
				return false
			}
			v.space()
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case ',':
				v.i++
				v.space()
			case ']':
				v.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return v.str()
	case c == '-' || ('0' <= c && c <= '9'):
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

// str reads a string, the opening quote at v.i.
func (v *jsonValidator) str() bool {
	v.i++
	for v.i < len(v.b) {
		c := v.b[v.i]
		switch {
		case c == '"':
			v.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			v.i++
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				if v.i+4 >= len(v.b) {
					return false
				}
				for _, h := range v.b[v.i+1 : v.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				v.i += 5
			default:
				return false
			}
		default:
			v.i++
		}
	}
	return false
}

func (v *jsonValidator) number() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '0':
		v.i++
	case '1' <= c && c <= '9':
		v.digits()
	default:
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

// digits reads one or more digits.
func (v *jsonValidator) digits() bool {
	start := v.i
	for v.i < len(v.b) && '0' <= v.b[v.i] && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}

func (v *jsonValidator) literal(word string) bool {
	if len(v.b)-v.i < len(word) || string(v.b[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
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
