package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// TestMigrateVersion1Checkpoints opens a file written by schema version 1,
// whose checkpoints hold their whole state in the snapshot: it is brought
// to the current version, its checkpoints load as they were, and they can
// go on with values.
func TestMigrateVersion1Checkpoints(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	old, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	err = old.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{schemaV1, "PRAGMA user_version = 1",
			`INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES ('r1', 1, '{"v":1,"vars":{"a":1}}', '2026-03-01T12:00:00.000000000Z')`,
			`INSERT INTO history (run_id, seq, time, type) VALUES ('r1', 1, '2026-03-01T12:00:00.000000000Z', 'ExecutionStarted')`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations()) {
		t.Fatalf("schema version %d (%v), want %d", v, err, len(migrations()))
	}
	cp, err := s.LoadCheckpoint(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Seq != 1 || string(cp.Snapshot) != `{"v":1,"vars":{"a":1}}` || cp.Values != nil {
		t.Fatalf("loaded %+v", cp)
	}
	next := store.Checkpoint{RunID: "r1", Seq: 2, Snapshot: json.RawMessage(`{"v":2}`), UpdatedAt: now,
		Values: map[string]json.RawMessage{"var:a:": json.RawMessage(`1`)}}
	if err := s.SaveCheckpoint(ctx, next, []store.HistoryEvent{{Seq: 2, Time: now, Type: "StateEntered"}}); err != nil {
		t.Fatal(err)
	}
	cp, err = s.LoadCheckpoint(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Seq != 2 || string(cp.Values["var:a:"]) != `1` || len(cp.Values) != 1 {
		t.Fatalf("after a save: %+v", cp)
	}
}
