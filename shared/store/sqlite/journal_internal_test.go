package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		var inRow sql.NullString
		if err := s.r.QueryRowContext(ctx, `SELECT snapshot FROM journal WHERE run_id = 'r1' AND seq = ?`, seq).Scan(&inRow); err != nil {
			t.Fatal(err)
		}
		if inRow.Valid != tc.inRow || inRow.Valid && inRow.String != string(want) {
			t.Errorf("checkpoint %d (%d bytes): journal row's snapshot valid=%v, want in the row %v", seq, tc.size, inRow.Valid, tc.inRow)
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
