package sqlite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// A checkpoint is one row of the journal table (schema version 9): its
// seq, time and snapshot, the values it set (a JSON object, keys in
// order), the keys it deleted (a JSON array) and the history events it
// adds (a JSON array of [seq, time, type, state, detail] arrays, detail
// left out when an event has none). One row per checkpoint, appended at
// the end of the table's B-tree, with one index entry (run_id, seq): a
// step writes 6.9 pages where a row per event, a row per value and a
// checkpoint row updated in place wrote 9.6 (TestPagesPerStep in
// shared/local). A run's state is the fold of its rows: the last row's
// snapshot, and for each key the value of the last row that set or
// deleted it.
//
// A snapshot over maxRowSnapshot bytes (a Map's results pile up in it)
// is kept apart instead, in the run's one checkpoint row, replaced in
// place, and the journal row has none: the journal keeps at most that
// much of each checkpoint's snapshot, however large the run's state.

// maxRowSnapshot is the largest snapshot a journal row holds.
const maxRowSnapshot = 4 << 10

// journalRow is a checkpoint's row, encoded.
type journalRow struct {
	vals, dels, events any // JSON text, or nil for none
}

// encodeJournal encodes the values and events of a checkpoint. The JSON
// they hold has been checked (store.CheckCheckpoint) or was encoded by
// the engine (Checkpoint.Encoded), so it is written as given.
func encodeJournal(cp store.Checkpoint, events []store.HistoryEvent) journalRow {
	var row journalRow
	var set, del []string
	for k, v := range cp.Values {
		if len(v) == 0 {
			del = append(del, k)
		} else {
			set = append(set, k)
		}
	}
	if len(set) > 0 {
		slices.Sort(set)
		n := 2
		for _, k := range set {
			n += len(k) + len(cp.Values[k]) + 4
		}
		b := make([]byte, 0, n)
		b = append(b, '{')
		for i, k := range set {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k, false)
			b = append(b, ':')
			b = append(b, cp.Values[k]...)
		}
		row.vals = bytesString(append(b, '}'))
	}
	if len(del) > 0 {
		slices.Sort(del)
		b := []byte{'['}
		for i, k := range del {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k, false)
		}
		row.dels = bytesString(append(b, ']'))
	}
	if len(events) > 0 {
		n := 2
		for _, e := range events {
			n += len(e.Type) + len(e.State) + len(e.Detail) + len(record.TimeLayout) + 32
		}
		b := make([]byte, 0, n)
		b = append(b, '[')
		for i, e := range events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, e.Seq, 10)
			b = append(b, ',')
			b = jsonstr.Append(b, record.FormatTime(e.Time), false)
			b = append(b, ',')
			b = jsonstr.Append(b, e.Type, false)
			b = append(b, ',')
			b = jsonstr.Append(b, e.State, false)
			if len(e.Detail) > 0 {
				b = append(b, ',')
				b = append(b, e.Detail...)
			}
			b = append(b, ']')
		}
		row.events = bytesString(append(b, ']'))
	}
	return row
}

// bytesString returns b as a string without copying it: b is a buffer
// encodeJournal built and never changes again (the copy doubled the bytes
// a journal row allocates, about 4 KB per step in BenchmarkRun).
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// foldValues applies one row's values and deletions to vals.
func foldValues(vals map[string]json.RawMessage, set, del []byte) (map[string]json.RawMessage, error) {
	if len(set) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(set, &m); err != nil {
			return nil, fmt.Errorf("checkpoint values: %w", err)
		}
		if vals == nil {
			vals = make(map[string]json.RawMessage, len(m))
		}
		for k, v := range m {
			vals[k] = v
		}
	}
	if len(del) > 0 {
		var keys []string
		if err := json.Unmarshal(del, &keys); err != nil {
			return nil, fmt.Errorf("checkpoint deletions: %w", err)
		}
		for _, k := range keys {
			delete(vals, k)
		}
	}
	return vals, nil
}

// decodeEvents decodes a row's history events.
func decodeEvents(text []byte) ([]store.HistoryEvent, error) {
	if len(text) == 0 {
		return nil, nil
	}
	var raw [][]json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil {
		return nil, fmt.Errorf("history events: %w", err)
	}
	events := make([]store.HistoryEvent, 0, len(raw))
	for _, r := range raw {
		if len(r) != 4 && len(r) != 5 {
			return nil, fmt.Errorf("history event of %d fields, want 4 or 5", len(r))
		}
		var e store.HistoryEvent
		var at string
		for i, dst := range []any{&e.Seq, &at, &e.Type, &e.State} {
			if err := json.Unmarshal(r[i], dst); err != nil {
				return nil, fmt.Errorf("history event field %d: %w", i, err)
			}
		}
		if len(r) == 5 {
			e.Detail = r[4] // Unmarshal copied it
		}
		var err error
		if e.Time, err = record.ParseTime(at); err != nil {
			return nil, fmt.Errorf("history event %d: %w", e.Seq, err)
		}
		events = append(events, e)
	}
	return events, nil
}
