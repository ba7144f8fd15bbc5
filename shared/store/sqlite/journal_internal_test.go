package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/stepline/stepline/shared/store"
)

// TestSnapshotKeptApart saves snapshots below, at and above the largest
// a journal row holds: one up to maxRowSnapshot bytes goes in the row,
// a larger one in the run's checkpoint row with none in the journal row,
// and the last saved is always the one loaded, wherever the one before
// it went.
func TestSnapshotKeptApart(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	// snap is a JSON snapshot of exactly n bytes.
	snap := func(n int, c string) json.RawMessage {
		return json.RawMessage(`{"x":"` + strings.Repeat(c, n-8) + `"}`)
	}
	for i, tc := range []struct {
		size  int
		inRow bool
	}{
		{maxRowSnapshot - 1, true},
		{maxRowSnapshot + 1, false},
		{maxRowSnapshot, true},
		{maxRowSnapshot + 1, false},
		{maxRowSnapshot + 1, false},
		{100, true},
	} {
		seq := int64(i + 1)
		want := snap(tc.size, string(rune('a'+i)))
		cp := store.Checkpoint{RunID: "r1", Seq: seq, Snapshot: want, UpdatedAt: at}
		if err := s.SaveCheckpoint(ctx, cp, []store.HistoryEvent{{Seq: seq, Time: at, Type: "StateEntered"}}); err != nil {
			t.Fatalf("save %d: %v", seq, err)
		}
		var body []byte
		if err := s.r.QueryRowContext(ctx, `SELECT body FROM journal WHERE id = ((SELECT key FROM journal_runs WHERE run_id = 'r1') << 32) + ?`, seq).Scan(&body); err != nil {
			t.Fatal(err)
		}
		p, err := decodeBody(body)
		if err != nil {
			t.Fatal(err)
		}
		inRow := p[partSnapshot]
		if (inRow != nil) != tc.inRow || inRow != nil && string(inRow) != string(want) {
			t.Errorf("checkpoint %d (%d bytes): journal row's snapshot present=%v, want in the row %v", seq, tc.size, inRow != nil, tc.inRow)
		}
		got, err := s.LoadCheckpoint(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != seq || string(got.Snapshot) != string(want) {
			t.Errorf("checkpoint %d: loaded seq %d, a %d-byte snapshot, want the %d bytes saved", seq, got.Seq, len(got.Snapshot), len(want))
		}
		// Saving it again is a repeat, wherever its snapshot went.
		if err := s.SaveCheckpoint(ctx, cp, nil); err != nil {
			t.Errorf("checkpoint %d again: %v", seq, err)
		}
	}
}

// TestBodyRoundTrip encodes rows with and without each part and decodes
// them back; a damaged body is an error, never a panic, and a body that
// claims more bytes than a row can hold is refused below, at and above
// the limit.
func TestBodyRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	cp := store.Checkpoint{RunID: "r", Seq: 2, Snapshot: json.RawMessage(`{"s":1}`), UpdatedAt: at,
		Values: map[string]json.RawMessage{"b": json.RawMessage(`2`), "a": json.RawMessage(`"x"`), "gone": nil}}
	events := []store.HistoryEvent{{Seq: 1, Time: at, Type: "StateEntered", State: "s1"},
		{Seq: 2, Time: at, Type: "StateExited", State: "s1", Detail: json.RawMessage(`{"output":1}`)}}
	body, err := encodeJournal(cp, events, true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeBody(body)
	if err != nil {
		t.Fatal(err)
	}
	want := [parts]string{`{"s":1}`, `{"a":"x","b":2}`, `["gone"]`,
		`[[1,"2026-12-03T09:00:00.000000000Z","StateEntered","s1"],[2,"2026-12-03T09:00:00.000000000Z","StateExited","s1",{"output":1}]]`}
	for i := range p {
		if string(p[i]) != want[i] {
			t.Errorf("part %d: %s, want %s", i, p[i], want[i])
		}
	}
	empty, err := encodeJournal(store.Checkpoint{RunID: "r", Seq: 1, Snapshot: cp.Snapshot, UpdatedAt: at}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err = decodeBody(empty)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range p {
		if part != nil {
			t.Errorf("a row without parts: part %d is %q", i, part)
		}
	}

	frame := func(b []byte) []byte { return s2.Encode(nil, b) }
	for name, bad := range map[string][]byte{
		"not S2":          []byte("\xff\xff\xff\xff\xff\xff"),
		"empty":           frame(nil),
		"unknown format":  frame([]byte{2, 0, 0, 0, 0}),
		"part cut short":  frame([]byte{bodyFormat, 0, 0}),
		"part too long":   frame([]byte{bodyFormat, 9, 0, 0, 0, '{', '}'}),
		"parts missing":   frame([]byte{bodyFormat, 0, 0, 0, 0}),
		"bytes after":     frame([]byte{bodyFormat, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x'}),
		"truncated block": body[:len(body)-1],
	} {
		if _, err := decodeBody(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}

	// The limit: a body decoding to exactly maxBody bytes is read, one
	// byte more is refused before it is decoded.
	defer func(n int) { maxBody = n }(maxBody)
	n, _ := s2.DecodedLen(body)
	for _, tc := range []struct {
		limit int
		ok    bool
	}{{n + 1, true}, {n, true}, {n - 1, false}} {
		maxBody = tc.limit
		_, err := decodeBody(body)
		if (err == nil) != tc.ok {
			t.Errorf("a %d-byte body under a limit of %d: %v", n, tc.limit, err)
		}
		_, err = encodeJournal(cp, events, true)
		if (err == nil) != tc.ok {
			t.Errorf("encoding a %d-byte body under a limit of %d: %v", n, tc.limit, err)
		}
	}
}

// TestJournalKeys interleaves the checkpoints of two runs: each run gets
// one key, its rows stay its own, and a seq past the low 32 bits of a
// row's key is refused (at the limit, the checkpoint is judged on its
// events, as any other).
func TestJournalKeys(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for seq := int64(1); seq <= 3; seq++ {
		for _, run := range []string{"a", "b"} {
			cp := store.Checkpoint{RunID: run, Seq: seq, UpdatedAt: at, Snapshot: json.RawMessage(`{"run":"` + run + `"}`)}
			if err := s.SaveCheckpoint(ctx, cp, []store.HistoryEvent{{Seq: seq, Time: at, Type: "T", State: run}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, run := range []string{"a", "b"} {
		evs, err := s.History(ctx, run)
		if err != nil || len(evs) != 3 {
			t.Fatalf("history of %s: %d events, %v", run, len(evs), err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) || e.State != run {
				t.Errorf("history of %s, event %d: %+v", run, i, e)
			}
		}
		cp, err := s.LoadCheckpoint(ctx, run)
		if err != nil || cp.Seq != 3 || string(cp.Snapshot) != `{"run":"`+run+`"}` {
			t.Errorf("checkpoint of %s: %+v, %v", run, cp, err)
		}
	}
	var keys int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM journal_runs`).Scan(&keys); err != nil || keys != 2 {
		t.Errorf("%d run keys (%v), want 2", keys, err)
	}
	for _, tc := range []struct {
		seq  int64
		over bool
	}{{maxSeq - 1, false}, {maxSeq, false}, {maxSeq + 1, true}} {
		cp := store.Checkpoint{RunID: "c", Seq: tc.seq, UpdatedAt: at, Snapshot: json.RawMessage(`{}`)}
		err := s.SaveCheckpoint(ctx, cp, []store.HistoryEvent{{Seq: tc.seq, Time: at, Type: "T"}})
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("seq %d: %v, want refused (its events do not start at 1)", tc.seq, err)
		}
		if over := strings.Contains(err.Error(), "a run's journal holds"); over != tc.over {
			t.Errorf("seq %d: %v; refused for its size: %v, want %v", tc.seq, err, over, tc.over)
		}
	}
}
