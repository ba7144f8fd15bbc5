package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/store/storetest"
)

func openTemp(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stepline.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, path
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}

func TestCheckpointConformance(t *testing.T) {
	storetest.RunCheckpoints(t, func(t *testing.T) store.Checkpointer {
		s, _ := openTemp(t)
		return s
	})
}

func TestConformanceInMemory(t *testing.T) {
	open := func(t *testing.T) *sqlite.Store {
		s, err := sqlite.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
	storetest.RunCheckpoints(t, func(t *testing.T) store.Checkpointer { return open(t) })
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	t.Run("empty path", func(t *testing.T) {
		_, err := sqlite.Open(ctx, "")
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("error = %v, want ErrInvalid", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
		if err == nil {
			t.Fatal("opened a database in a missing directory")
		}
	})
	t.Run("reopen keeps data and version", func(t *testing.T) {
		s, path := openTemp(t)
		run := store.Run{ID: "r1", Pipeline: "p", Status: store.RunRunning, StartedAt: time.Now()}
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil || v != 11 {
			t.Fatalf("schema version %d, %v; want 11", v, err)
		}
		s2, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if _, err := s2.GetRun(ctx, "r1"); err != nil {
			t.Fatalf("reopened store lost the run: %v", err)
		}
	})
	t.Run("path with URI characters", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a dir?x=1#frag", "b%20c.db")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.CreateRun(ctx, store.Run{ID: "r1", Pipeline: "p", Status: store.RunRunning, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("database not created at %q", path)
		}
	})
	t.Run("newer schema is refused", func(t *testing.T) {
		s, path := openTemp(t)
		if err := s.SetSchemaVersionForTest(ctx, 99); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(ctx, path)
		if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
			t.Fatalf("error = %v, want a newer-schema error", err)
		}
	})
}

// TestConcurrentRuns drives 100 runs at once on one file, each doing a run's
// worth of writes and reads; none may fail with "database is locked".
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	const runs, steps = 100, 4
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() { errs <- oneRun(ctx, s, fmt.Sprintf("run-%03d", i), steps) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got, err := s.ListRuns(ctx, store.RunFilter{Pipeline: "load", Limit: store.MaxRunLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != runs {
		t.Fatalf("%d runs listed, want %d", len(got), runs)
	}
	for _, r := range got {
		if r.Status != store.RunCompleted {
			t.Errorf("run %s is %s", r.ID, r.Status)
		}
	}
}

// TestTwoStores opens the same file twice in one process and writes through
// both at once.
func TestTwoStores(t *testing.T) {
	ctx := context.Background()
	a, path := openTemp(t)
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() { errs <- oneRun(ctx, s, fmt.Sprintf("run-%02d", i), 3) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Both see everything, and dedup claims made through one are seen by
	// the other.
	if _, claimed, err := a.ClaimDedup(ctx, "load", "fp", "x", time.Minute, time.Now()); err != nil || !claimed {
		t.Fatalf("claim through a: %v %v", claimed, err)
	}
	existing, claimed, err := b.ClaimDedup(ctx, "load", "fp", "y", time.Minute, time.Now())
	if err != nil || claimed || existing != "x" {
		t.Fatalf("claim through b: existing %q claimed %v err %v; want dedup against x", existing, claimed, err)
	}
	runs, err := b.ListRuns(ctx, store.RunFilter{Limit: 100})
	if err != nil || len(runs) != 40 {
		t.Fatalf("b lists %d runs (%v), want 40", len(runs), err)
	}
}

func oneRun(ctx context.Context, s *sqlite.Store, id string, steps int) error {
	now := time.Now()
	if _, _, err := s.ClaimDedup(ctx, "load", "fp-"+id, id, time.Minute, now); err != nil {
		return err
	}
	if err := s.CreateRun(ctx, store.Run{ID: id, Pipeline: "load", Status: store.RunRunning, StartedAt: now,
		Trigger: json.RawMessage(`{"n":1}`)}); err != nil {
		return err
	}
	var seq int64
	for i := range steps {
		name := fmt.Sprintf("step-%d", i)
		events := []store.HistoryEvent{
			{Seq: seq + 1, Time: now, Type: "StateEntered", State: name},
			{Seq: seq + 2, Time: now, Type: "TaskSucceeded", State: name, Detail: json.RawMessage(`{"ok":true}`)},
		}
		seq += 2
		snap := json.RawMessage(fmt.Sprintf(`{"state":%q,"seq":%d}`, name, seq))
		if err := s.SaveCheckpoint(ctx, store.Checkpoint{RunID: id, Seq: seq, Snapshot: snap, UpdatedAt: now}, events); err != nil {
			return err
		}
		rec := store.StepRecord{RunID: id, Name: name, Index: i * 1000, Attempt: 1, Status: store.StepCompleted,
			Output: json.RawMessage(`{"confidence":0.9,"summary":"ok","next_step_context":""}`), InputTokens: 10, OutputTokens: 2}
		if err := s.PutStep(ctx, rec); err != nil {
			return err
		}
		if err := s.AddUsage(ctx, id, name+"#1", store.Usage{InputTokens: 10, OutputTokens: 2}); err != nil {
			return err
		}
		if _, err := s.GetRun(ctx, id); err != nil {
			return err
		}
	}
	if err := s.UpdateRun(ctx, id, store.RunUpdate{Status: store.RunCompleted, CompletedAt: &now}); err != nil {
		return err
	}
	r, recs, err := s.GetRunWithSteps(ctx, id)
	if err != nil {
		return err
	}
	if len(recs) != steps || r.Usage.InputTokens != int64(10*steps) {
		return fmt.Errorf("run %s: %d steps, %d input tokens", id, len(recs), r.Usage.InputTokens)
	}
	h, err := s.History(ctx, id)
	if err != nil {
		return err
	}
	if int64(len(h)) != seq {
		return fmt.Errorf("run %s: %d history events, want %d", id, len(h), seq)
	}
	return nil
}

// childDB names the database a child test process writes to.
const childDB = "STEPLINE_SQLITE_TEST_CHILD_DB"

// TestTwoProcesses runs a second process (this test binary again) that
// writes runs into the same file while this one does — the engine and the
// CLI at once. Neither may fail with "database is locked".
func TestTwoProcesses(t *testing.T) {
	ctx := context.Background()
	if path := os.Getenv(childDB); path != "" {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// Tell the parent we are ready, wait for its go, then write.
		if err := os.WriteFile(path+".ready", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFile(t, path+".go")
		concurrentRuns(t, s, "child", 30)
		return
	}
	s, path := openTemp(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDB+"="+path)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, path+".ready")
	if err := os.WriteFile(path+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	concurrentRuns(t, s, "parent", 30)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out.String())
	}
	for _, who := range []string{"parent", "child"} {
		runs, err := s.ListRuns(ctx, store.RunFilter{Pipeline: "load", Limit: store.MaxRunLimit})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range runs {
			if strings.HasPrefix(r.ID, who+"-") {
				n++
			}
		}
		if n != 30 {
			t.Errorf("%d runs of the %s, want 30", n, who)
		}
	}
}

func concurrentRuns(t *testing.T, s *sqlite.Store, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- oneRun(context.Background(), s, fmt.Sprintf("%s-%02d", prefix, i), 4) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", path)
}
