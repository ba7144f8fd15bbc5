package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// migrated writes a store file in schema version v (the first v
// migrations) with fill's rows, in one transaction through the raw open,
// then opens it with Open, which migrates it, and checks that it reached
// the current version. The store is closed when the test ends.
func migrated(t *testing.T, v int, fill func(ctx context.Context, tx wtx) error) *Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", v))
	old, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = old.write(ctx, func(ctx context.Context, tx wtx) error {
		for _, q := range append(migrations()[:v], fmt.Sprintf("PRAGMA user_version = %d", v)) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return fill(ctx, tx)
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
	t.Cleanup(func() { s.Close() })
	if got, err := s.SchemaVersion(ctx); err != nil || got != len(migrations()) {
		t.Fatalf("schema version %d (%v), want %d", got, err, len(migrations()))
	}
	return s
}

// TestMigrateVersion1Checkpoints opens a file written by schema version 1,
// whose checkpoints hold their whole state in the snapshot: it is brought
// to the current version, its checkpoints load as they were, and they can
// go on with values.
func TestMigrateVersion1Checkpoints(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := migrated(t, 1, func(ctx context.Context, tx wtx) error {
		for _, q := range []string{
			`INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES ('r1', 1, '{"v":1,"vars":{"a":1}}', '2026-03-01T12:00:00.000000000Z')`,
			`INSERT INTO history (run_id, seq, time, type) VALUES ('r1', 1, '2026-03-01T12:00:00.000000000Z', 'ExecutionStarted')`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
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

// TestMigrateVersion3Steps opens a file written by schema version 3,
// before agent steps: its step records read as they were, a repeat of one
// is still a repeat (the digest did not change), and agent records go in
// beside them.
func TestMigrateVersion3Steps(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := store.StepRecord{RunID: "r1", Name: "triage", Attempt: 1, Status: store.StepCompleted, Executor: "gateway",
		Output: json.RawMessage(`{"confidence":0.9}`), StartedAt: at, FinishedAt: at}
	norm, err := store.NormalizeStep(rec)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := record.StepDigest(norm)
	if err != nil {
		t.Fatal(err)
	}
	s := migrated(t, 3, func(ctx context.Context, tx wtx) error {
		// The row as version 3 wrote it, without the agent columns.
		_, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, name, attempt, step_index, executor, status, output, started_at, finished_at, digest)
			VALUES ('r1', 'triage', 1, 0, 'gateway', 'completed', '{"confidence":0.9}', ?, ?, ?)`,
			record.FormatTime(at), record.FormatTime(at), digest)
		return err
	})
	if err := s.PutStep(ctx, rec); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	agentRec := rec
	agentRec.Name, agentRec.Agent, agentRec.AgentVersion, agentRec.Iterations = "investigate", "sre", "v1", 3
	agentRec.Trace = json.RawMessage(`[{"type":"text","iteration":1,"content":"looking"}]`)
	if err := s.PutStep(ctx, agentRec); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListSteps(ctx, "r1")
	if err != nil || len(got) != 2 {
		t.Fatalf("%d steps, %v", len(got), err)
	}
	byName := map[string]store.StepRecord{got[0].Name: got[0], got[1].Name: got[1]}
	old3, ag := byName["triage"], byName["investigate"]
	if old3.Agent != "" || old3.Trace != nil || old3.Iterations != 0 || ag.Agent != "sre" || ag.AgentVersion != "v1" || ag.Iterations != 3 || string(ag.Trace) != string(agentRec.Trace) {
		t.Errorf("read back %+v / %+v", got[0], got[1])
	}
}

// TestMigrateVersion4Steps opens a file written by schema version 4,
// before trust reports: its records read back without one, a repeat of
// one is still a repeat, and records with a report go in beside them.
func TestMigrateVersion4Steps(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := store.StepRecord{RunID: "r1", Name: "triage", Attempt: 1, Status: store.StepCompleted, Executor: "gateway",
		Output: json.RawMessage(`{"confidence":0.9}`), StartedAt: at, FinishedAt: at}
	norm, err := store.NormalizeStep(rec)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := record.StepDigest(norm)
	if err != nil {
		t.Fatal(err)
	}
	s := migrated(t, 4, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, name, attempt, step_index, executor, status, output, started_at, finished_at, digest)
			VALUES ('r1', 'triage', 1, 0, 'gateway', 'completed', '{"confidence":0.9}', ?, ?, ?)`,
			record.FormatTime(at), record.FormatTime(at), digest)
		return err
	})
	if err := s.PutStep(ctx, rec); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	gated := rec
	gated.Name = "investigate"
	gated.Trust = &store.TrustReport{Version: store.TrustReportVersion, Mode: store.TrustShadow, Signals: store.TrustSignals{S: 0.9, SAfterV: 0.9},
		CombinedTrust: 0.9, Gate: store.TrustGate{Policy: store.PolicyLegacyConfidence, ConfidenceThreshold: 0.75, OnLowConfidence: "escalate", Decision: "completed"}}
	if err := s.PutStep(ctx, gated); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListSteps(ctx, "r1")
	if err != nil || len(got) != 2 {
		t.Fatalf("%d steps, %v", len(got), err)
	}
	byName := map[string]store.StepRecord{got[0].Name: got[0], got[1].Name: got[1]}
	if byName["triage"].Trust != nil || byName["investigate"].Trust == nil || byName["investigate"].Trust.CombinedTrust != 0.9 {
		t.Errorf("read back %+v / %+v", byName["triage"].Trust, byName["investigate"].Trust)
	}
}

// TestMigrateVersion7Steps opens a file written by schema version 7, whose
// steps table kept an index in execution order: the index is gone, the
// key's index stays, and a run's steps still list in execution order,
// the ones written before the migration and after it.
func TestMigrateVersion7Steps(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := migrated(t, 7, func(ctx context.Context, tx wtx) error {
		for _, st := range []struct {
			name  string
			index int
		}{{"review", 2}, {"triage", 0}, {"draft", 1}} {
			_, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, name, attempt, step_index, status, started_at, finished_at, digest)
				VALUES ('r1', ?, 1, ?, 'completed', ?, ?, 'old')`, st.name, st.index, record.FormatTime(at), record.FormatTime(at))
			if err != nil {
				return err
			}
		}
		return nil
	})
	var indexes []string
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'steps' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(indexes) != 1 || !strings.HasPrefix(indexes[0], "sqlite_autoindex_steps") {
		t.Errorf("indexes of steps after the migration: %q, want only the key's", indexes)
	}
	if err := s.PutStep(ctx, store.StepRecord{RunID: "r1", Name: "publish", Attempt: 1, Index: 3, Status: store.StepCompleted, StartedAt: at, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStep(ctx, store.StepRecord{RunID: "r1", Name: "draft", Attempt: 2, Index: 1, Status: store.StepCompleted, StartedAt: at, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListSteps(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range got {
		order = append(order, fmt.Sprintf("%s/%d", r.Name, r.Attempt))
	}
	if want := "triage/1 draft/1 draft/2 review/1 publish/1"; strings.Join(order, " ") != want {
		t.Errorf("steps in order %q, want %s", order, want)
	}
}

// TestMigrateVersion8Journal opens a file written by schema version 8,
// whose checkpoints kept a row per history event and per value: each
// run's state and history load as they were stored (JSON text as
// written, events with and without detail, in seq order), a repeat of a
// stored event is still a repeat and a different one a conflict, and the
// run goes on from its seq.
func TestMigrateVersion8Journal(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := record.FormatTime(at)
	s := migrated(t, 8, func(ctx context.Context, tx wtx) error {
		for _, q := range []string{
			`INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES ('r1', 3, '{"v":2, "pos":"b"}', '` + ts + `')`,
			`INSERT INTO checkpoint_values (run_id, key, value) VALUES ('r1', 'var:b:', '{"x": [1, 2]}'), ('r1', 'var:a:', 'null'), ('r1', 'in"put', '"q"')`,
			`INSERT INTO history (run_id, seq, time, type, state, detail) VALUES
				('r1', 2, '` + ts + `', 'StateEntered', 'a', '{"input": {}}'),
				('r1', 1, '` + ts + `', 'ExecutionStarted', '', NULL),
				('r1', 3, '` + ts + `', 'StateExited', 'a"b', 'null')`,
			`INSERT INTO checkpoints (run_id, seq, snapshot, updated_at) VALUES ('r2', 1, '{}', '` + ts + `')`,
			`INSERT INTO history (run_id, seq, time, type) VALUES ('r2', 1, '` + ts + `', 'ExecutionStarted')`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	cp, err := s.LoadCheckpoint(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"var:b:": `{"x": [1, 2]}`, "var:a:": `null`, `in"put`: `"q"`}
	if cp.Seq != 3 || string(cp.Snapshot) != `{"v":2, "pos":"b"}` || !cp.UpdatedAt.Equal(at) || len(cp.Values) != len(want) {
		t.Fatalf("loaded %+v", cp)
	}
	for k, v := range want {
		if string(cp.Values[k]) != v {
			t.Errorf("value %q = %s, want %s", k, cp.Values[k], v)
		}
	}
	events, err := s.History(ctx, "r1")
	if err != nil || len(events) != 3 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	for i, w := range []struct{ typ, state, detail string }{{"ExecutionStarted", "", ""}, {"StateEntered", "a", `{"input": {}}`}, {"StateExited", `a"b`, "null"}} {
		e := events[i]
		if e.Seq != int64(i+1) || e.Type != w.typ || e.State != w.state || string(e.Detail) != w.detail || !e.Time.Equal(at) {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	if evs, err := s.History(ctx, "r2"); err != nil || len(evs) != 1 || evs[0].Detail != nil {
		t.Errorf("r2's history %+v, %v", evs, err)
	}
	same := store.Checkpoint{RunID: "r1", Seq: 3, Snapshot: json.RawMessage(`{"v":2,"pos":"b"}`), UpdatedAt: at}
	if err := s.SaveCheckpoint(ctx, same, events[1:]); err != nil {
		t.Errorf("the stored checkpoint again: %v", err)
	}
	changed := append([]store.HistoryEvent(nil), events...)
	changed[1].State = "z"
	if err := s.SaveCheckpoint(ctx, same, changed); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a different stored event: %v, want a conflict", err)
	}
	next := store.Checkpoint{RunID: "r1", Seq: 4, Snapshot: json.RawMessage(`{"v":2}`), UpdatedAt: at,
		Values: map[string]json.RawMessage{"var:a:": nil, "var:c:": json.RawMessage(`3`)}}
	if err := s.SaveCheckpoint(ctx, next, []store.HistoryEvent{{Seq: 4, Time: at, Type: "StateEntered", State: "c"}}); err != nil {
		t.Fatal(err)
	}
	cp, err = s.LoadCheckpoint(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.Values["var:a:"]; ok || string(cp.Values["var:c:"]) != `3` || string(cp.Values["var:b:"]) != `{"x": [1, 2]}` || cp.Seq != 4 ||
		string(cp.Snapshot) != `{"v":2}` {
		t.Errorf("after a save: %+v", cp)
	}
	// The rows of version 9 (text) and the new row (a body) make one history.
	if evs, err := s.History(ctx, "r1"); err != nil || len(evs) != 4 || evs[3].State != "c" || evs[0].Seq != 1 {
		t.Errorf("history after a save: %+v, %v", evs, err)
	}
	for _, table := range []string{"checkpoint_values", "history"} {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = ?`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s: %d (%v), want it dropped", table, n, err)
		}
	}
}

// TestMigrateVersion10Replies opens a file of version 10, whose scripted
// runs keep all their counts in run_replies.consumed: they read as they
// were, counts recorded since replace theirs and add the others, and
// recording the replies again starts from the counts given.
func TestMigrateVersion10Replies(t *testing.T) {
	ctx := context.Background()
	s := migrated(t, 10, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO run_replies (run_id, source, consumed) VALUES ('r1', '/x.yaml', '{"a":2,"b":1}')`)
		return err
	})
	check := func(what string, want map[string]int) {
		t.Helper()
		got, err := s.GetReplies(ctx, "r1")
		if err != nil || got.Source != "/x.yaml" || fmt.Sprint(got.Consumed) != fmt.Sprint(want) {
			t.Fatalf("%s: %+v, %v; want %v", what, got, err, want)
		}
	}
	check("as migrated", map[string]int{"a": 2, "b": 1})
	if err := s.SetConsumed(ctx, "r1", map[string]int{"a": 3, "c": 1}); err != nil {
		t.Fatal(err)
	}
	check("after SetConsumed", map[string]int{"a": 3, "b": 1, "c": 1})
	if err := s.SetConsumed(DeferWrites(ctx), "r1", map[string]int{"b": 2}); err != nil {
		t.Fatal(err)
	}
	check("after a deferred SetConsumed", map[string]int{"a": 3, "b": 2, "c": 1})
	if err := s.SetReplies(ctx, "r1", Replies{Source: "/x.yaml", Consumed: map[string]int{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	check("after SetReplies", map[string]int{"a": 1})
}
