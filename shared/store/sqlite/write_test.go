package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

var tw = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func stepRec(runID, name, summary string) store.StepRecord {
	return store.StepRecord{RunID: runID, Name: name, Attempt: 1, Status: store.StepCompleted,
		Output:    json.RawMessage(`{"confidence": 0.9, "summary": "` + summary + `", "next_step_context": ""}`),
		StartedAt: tw, FinishedAt: tw.Add(time.Second)}
}

func newRun(t *testing.T, s *sqlite.Store, id string) {
	t.Helper()
	if err := s.CreateRun(context.Background(), store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, StartedAt: tw}); err != nil {
		t.Fatal(err)
	}
}

func saveCheckpoint(t *testing.T, s *sqlite.Store, runID string, seq int64) {
	t.Helper()
	cp := store.Checkpoint{RunID: runID, Seq: seq, Snapshot: json.RawMessage(`{"seq":` + fmt.Sprint(seq) + `}`), UpdatedAt: tw}
	var ev []store.HistoryEvent
	for i := int64(1); i <= seq; i++ {
		ev = append(ev, store.HistoryEvent{Seq: i, Time: tw, Type: "TaskSucceeded", State: "s"})
	}
	if err := s.SaveCheckpoint(context.Background(), cp, ev); err != nil {
		t.Fatal(err)
	}
}

// stepCount counts the step records of a run in the file, read through a
// Store of its own (another process's view).
func stepCount(t *testing.T, path, runID string) int {
	t.Helper()
	other, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	recs, err := other.ListSteps(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestDeferWrites: a step record, usage and replies count written under
// DeferWrites are checked at once, reach the file only with the next
// write transaction (the run's checkpoint), are read back by the same
// Store before that, and a conflicting record leaves the stored one.
func TestDeferWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	newRun(t, s, "r1")
	if err := s.SetReplies(ctx, "r1", sqlite.Replies{Source: "/replies.yaml"}); err != nil {
		t.Fatal(err)
	}
	dctx := sqlite.DeferWrites(ctx)

	if err := s.PutStep(dctx, stepRec("r1", "s1", "first")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(dctx, "r1", "s1#1", store.Usage{InputTokens: 7, OutputTokens: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetConsumed(dctx, "r1", map[string]int{"s1": 1}); err != nil {
		t.Fatal(err)
	}
	// Refused at once, nothing staged.
	bad := stepRec("r1", "s2", "x")
	bad.Status = "done"
	if err := s.PutStep(dctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid record under DeferWrites: %v, want ErrInvalid", err)
	}
	if err := s.AddUsage(dctx, "r1", "k", store.Usage{InputTokens: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid usage under DeferWrites: %v, want ErrInvalid", err)
	}

	if n := stepCount(t, path, "r1"); n != 0 {
		t.Fatalf("another process sees %d records before the checkpoint, want 0", n)
	}
	saveCheckpoint(t, s, "r1", 1)
	if n := stepCount(t, path, "r1"); n != 1 {
		t.Fatalf("another process sees %d records after the checkpoint, want 1", n)
	}
	run, err := s.GetRun(ctx, "r1")
	if err != nil || run.Usage.InputTokens != 7 || run.Usage.OutputTokens != 3 {
		t.Fatalf("run usage %+v (%v), want 7 in, 3 out", run.Usage, err)
	}
	rep, err := s.GetReplies(ctx, "r1")
	if err != nil || rep.Consumed["s1"] != 1 {
		t.Fatalf("replies %+v (%v), want s1 consumed once", rep, err)
	}

	// A different record at the same key: the stored one stands, and so
	// does the checkpoint that carries it.
	if err := s.PutStep(dctx, stepRec("r1", "s1", "second")); err != nil {
		t.Fatal(err)
	}
	// The same Store reads what it staged.
	if err := s.PutStep(dctx, stepRec("r1", "s2", "two")); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ListSteps(ctx, "r1")
	if err != nil || len(recs) != 2 {
		t.Fatalf("ListSteps: %d records (%v), want 2", len(recs), err)
	}
	if string(recs[0].Output) != string(stepRec("r1", "s1", "first").Output) {
		t.Fatalf("s1 is %s, want the first record", recs[0].Output)
	}
	// The usage key counts once, also staged twice.
	for range 2 {
		if err := s.AddUsage(dctx, "r1", "s1#1", store.Usage{InputTokens: 7}); err != nil {
			t.Fatal(err)
		}
	}
	// A run that does not exist: nothing added, no error.
	if err := s.AddUsage(dctx, "nope", "k", store.Usage{InputTokens: 1}); err != nil {
		t.Fatal(err)
	}
	saveCheckpoint(t, s, "r1", 2)
	if run, _ := s.GetRun(ctx, "r1"); run.Usage.InputTokens != 7 {
		t.Fatalf("input tokens %d, want 7 (the key counted once)", run.Usage.InputTokens)
	}
}

// TestDeferWritesCommittedByClose: Close commits what is staged.
func TestDeferWritesCommittedByClose(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	newRun(t, s, "r1")
	if err := s.PutStep(sqlite.DeferWrites(ctx), stepRec("r1", "s1", "x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := stepCount(t, path, "r1"); n != 1 {
		t.Fatalf("%d records after Close, want 1", n)
	}
}

// TestDeferWritesWithFailedWrite: a write that fails does not take the
// staged writes with it.
func TestDeferWritesWithFailedWrite(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	newRun(t, s, "r1")
	if err := s.PutStep(sqlite.DeferWrites(ctx), stepRec("r1", "s1", "x")); err != nil {
		t.Fatal(err)
	}
	// A checkpoint going backwards fails in the store's transaction.
	saveCheckpoint(t, s, "r2", 5)
	cp := store.Checkpoint{RunID: "r2", Seq: 4, Snapshot: json.RawMessage(`{}`), UpdatedAt: tw}
	if err := s.SaveCheckpoint(ctx, cp, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("backwards checkpoint: %v, want ErrConflict", err)
	}
	if n := stepCount(t, path, "r1"); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// groupRunID is the run ID write i of TestGroupCommit creates: every
// fifth repeats the one before it, so one of the two gets ErrExists.
func groupRunID(i int) string {
	if i%5 == 4 {
		i--
	}
	return fmt.Sprintf("run-%03d", i)
}

// TestGroupCommit: writes from many goroutines, some of which fail, share
// transactions; each gets its own answer and only the failed ones are
// missing.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	const n = 200
	before := s.Commits()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := groupRunID(i)
			errs[i] = s.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, StartedAt: tw})
			if errs[i] == nil {
				errs[i] = s.PutStep(ctx, stepRec(id, "s1", "x"))
			}
		})
	}
	wg.Wait()
	writes := 0
	for _, err := range errs {
		writes++
		if err == nil {
			writes++
		}
	}
	if c := s.Commits() - before; c >= int64(writes) {
		t.Errorf("%d writes took %d transactions: no group commit", writes, c)
	} else {
		t.Logf("%d writes in %d transactions", writes, c)
	}
	want := map[string]bool{}
	for i, err := range errs {
		id := groupRunID(i)
		switch {
		case i%5 == 3 || i%5 == 4:
			// i%5 == 4 races with the write before it for one run ID:
			// exactly one of the two wins (checked below).
		case err != nil:
			t.Errorf("write %d: %v", i, err)
		}
		want[id] = true
	}
	for i := 4; i < n; i += 5 {
		a, b := errs[i-1], errs[i]
		if (a == nil) == (b == nil) || !errors.Is(errors.Join(a, b), store.ErrExists) {
			t.Errorf("runs %d and %d with one ID: %v, %v; want one ErrExists", i-1, i, a, b)
		}
	}
	other, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	runs, err := other.ListRuns(ctx, store.RunFilter{Limit: store.MaxRunLimit})
	if err != nil || len(runs) != len(want) {
		t.Fatalf("%d runs stored (%v), want %d", len(runs), err, len(want))
	}
	for id := range want {
		if recs, err := other.ListSteps(ctx, id); err != nil || len(recs) != 1 {
			t.Errorf("run %s: %d records (%v), want 1", id, len(recs), err)
		}
	}
}

// TestWriterSettings: the writer connection runs with the settings the
// package documents (and BenchmarkFloor copies).
func TestWriterSettings(t *testing.T) {
	s, _ := openTemp(t)
	for name, want := range map[string]string{
		"journal_mode":       "wal",
		"synchronous":        "1", // NORMAL
		"busy_timeout":       fmt.Sprint(sqlite.BusyTimeout),
		"wal_autocheckpoint": fmt.Sprint(sqlite.WALCheckpointPages),
	} {
		got, err := s.WriterPragmaForTest(context.Background(), name)
		if err != nil || got != want {
			t.Errorf("PRAGMA %s = %q (%v), want %q", name, got, err, want)
		}
	}
}
