package sqlite

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// A checkpoint is one row of the journal table: its seq, time and body
// (schema version 10). The body holds, compressed together with S2
// (github.com/klauspost/compress/s2), the checkpoint's snapshot, the
// values it set (a JSON object, keys in order), the keys it deleted (a
// JSON array) and the history events it adds (a JSON array of [seq, time,
// type, state, detail] arrays, detail left out when an event has none).
// One row per checkpoint, keyed by the run's key (journal_runs, given at
// its first checkpoint) and the seq: the key times 2^32 plus the seq,
// the table's own integer key, so a row needs no index entry of its own
// (the index on (run_id, seq) of version 9 wrote 1.2 pages per step), and
// a run's rows are one range of keys. A run's state is the fold of its
// rows: the last row's snapshot, and for each key the value of the last
// row that set or deleted it. The migration takes version 9's seqs to be
// below 2^32: a run past that would have stored hundreds of gigabytes of
// history first.
//
// Compressed, a 100-step run's row takes about a third of its text (the
// events repeat the states' inputs and outputs, the snapshot the next
// Task's payload): several rows share a leaf page where each row's text
// filled a leaf and spilled onto an overflow page, and a step writes 5.8
// pages instead of 6.9, 4.6 without the index (TestPagesPerStep in
// shared/local); S2 compresses a 4 KB row in about 3 µs. Rows written by
// version 9 keep their text in the columns snapshot, vals, dels and
// events, and are read as before.
//
// A snapshot over maxRowSnapshot bytes (a Map's results pile up in it)
// is kept apart instead, in the run's one checkpoint row, replaced in
// place, and the journal row has none: the journal keeps at most that
// much of each checkpoint's snapshot, however large the run's state.

// maxSeq is the largest seq a journal row holds: the low 32 bits of its
// key. A checkpoint past it is refused.
const maxSeq = 1<<32 - 1

// seqMask is maxSeq as SQL text.
var seqMask = strconv.FormatInt(maxSeq, 10)

// maxRowSnapshot is the largest snapshot a journal row holds.
const maxRowSnapshot = 4 << 10

// maxBody is the most bytes a journal row's body decodes to: SQLite's
// own limit on a value (SQLITE_MAX_LENGTH). A larger length in a body is
// a damaged row, refused before anything is allocated for it. A variable
// for tests only.
var maxBody = 1_000_000_000

// bodyFormat is the first byte of a decoded body: the layout that
// follows (four parts, each a 4-byte little-endian length and its bytes:
// snapshot, values, deletions, events; a length of 0 is none).
const bodyFormat = 1

// The parts of a body, in order.
const (
	partSnapshot = iota
	partVals
	partDels
	partEvents
	parts
)

// bodyBufs are the buffers a body is laid out and compressed in.
type bodyBufs struct{ frame, enc []byte }

// bodyPool holds bodyBufs up to maxPooled bytes each.
var bodyPool = sync.Pool{New: func() any { return new(bodyBufs) }}

const maxPooled = 64 << 10

// encodeJournal encodes a checkpoint's row body: its snapshot when
// withSnapshot, its values and its events. The JSON they hold has been
// checked (store.CheckCheckpoint) or was encoded by the engine
// (Checkpoint.Encoded), so it is written as given. A row over maxBody
// bytes is refused.
func encodeJournal(cp store.Checkpoint, events []store.HistoryEvent, withSnapshot bool) ([]byte, error) {
	bufs := bodyPool.Get().(*bodyBufs)
	b := append(bufs.frame[:0], bodyFormat)
	// part starts a part: its length is set by end.
	part := func() int {
		b = append(b, 0, 0, 0, 0)
		return len(b)
	}
	end := func(at int) {
		binary.LittleEndian.PutUint32(b[at-4:at], uint32(len(b)-at))
	}
	at := part()
	if withSnapshot {
		b = append(b, cp.Snapshot...)
	}
	end(at)
	var set, del []string
	for k, v := range cp.Values {
		if len(v) == 0 {
			del = append(del, k)
		} else {
			set = append(set, k)
		}
	}
	at = part()
	if len(set) > 0 {
		slices.Sort(set)
		b = append(b, '{')
		for i, k := range set {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k, false)
			b = append(b, ':')
			b = append(b, cp.Values[k]...)
		}
		b = append(b, '}')
	}
	end(at)
	at = part()
	if len(del) > 0 {
		slices.Sort(del)
		b = append(b, '[')
		for i, k := range del {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k, false)
		}
		b = append(b, ']')
	}
	end(at)
	at = part()
	if len(events) > 0 {
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
		b = append(b, ']')
	}
	end(at)
	if len(b) > maxBody {
		return nil, fmt.Errorf("%w: a checkpoint row of %d bytes, over the %d a row can hold", store.ErrInvalid, len(b), maxBody)
	}
	enc := bufs.enc
	if n := s2.MaxEncodedLen(len(b)); cap(enc) < n {
		enc = make([]byte, n)
	}
	body := bytes.Clone(s2.Encode(enc[:cap(enc)], b)) // at its size: it waits for the writer's turn
	if cap(b) <= maxPooled && cap(enc) <= maxPooled {
		bufs.frame, bufs.enc = b, enc
		bodyPool.Put(bufs)
	}
	return body, nil
}

// decodeBody returns the parts of a row's body: slices of one fresh
// buffer, nil for a part the row has none of.
func decodeBody(body []byte) ([parts][]byte, error) {
	var out [parts][]byte
	n, err := s2.DecodedLen(body)
	if err != nil {
		return out, fmt.Errorf("journal row body: %w", err)
	}
	if n > maxBody {
		return out, fmt.Errorf("journal row body of %d bytes decoded, over the %d a row can hold", n, maxBody)
	}
	b, err := s2.Decode(make([]byte, n), body)
	if err != nil {
		return out, fmt.Errorf("journal row body: %w", err)
	}
	if len(b) == 0 || b[0] != bodyFormat {
		return out, fmt.Errorf("journal row body: unknown format")
	}
	b = b[1:]
	for i := range out {
		if len(b) < 4 {
			return out, fmt.Errorf("journal row body: part %d cut short", i)
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(l) > uint64(len(b)) {
			return out, fmt.Errorf("journal row body: part %d of %d bytes, %d left", i, l, len(b))
		}
		if l > 0 {
			out[i] = b[:l:l]
		}
		b = b[l:]
	}
	if len(b) != 0 {
		return out, fmt.Errorf("journal row body: %d bytes after its parts", len(b))
	}
	return out, nil
}

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
