package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// Environment of the child processes of TestManyProcessesOpen: the file
// to open, the instant to start at, how many times to open it.
const (
	openerDB    = "STEPLINE_SQLITE_TEST_OPEN_DB"
	openerStart = "STEPLINE_SQLITE_TEST_OPEN_START"
	openerTimes = "STEPLINE_SQLITE_TEST_OPEN_TIMES"
)

// TestManyProcessesOpen starts 20 processes (this test binary again) that
// open one fresh file at the same instant, write a run and close it, a
// few times over: none may fail while the file is created, turned to WAL
// mode and migrated.
func TestManyProcessesOpen(t *testing.T) {
	if path := os.Getenv(openerDB); path != "" {
		start, err := time.Parse(time.RFC3339Nano, os.Getenv(openerStart))
		if err != nil {
			t.Fatal(err)
		}
		times, _ := strconv.Atoi(os.Getenv(openerTimes))
		time.Sleep(time.Until(start))
		ctx := context.Background()
		for i := range times {
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatalf("open #%d: %v", i+1, err)
			}
			id := fmt.Sprintf("run-%d-%d", os.Getpid(), i)
			if err := s.CreateRun(ctx, store.Run{ID: id, Pipeline: "open", Status: store.RunRunning, StartedAt: time.Now()}); err != nil {
				t.Fatalf("create run: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("starts 20 processes")
	}
	const procs, rounds, times = 20, 3, 5
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "fresh.db")
		start := time.Now().Add(time.Second).Format(time.RFC3339Nano) // all of them started by then
		var wg sync.WaitGroup
		failures := make([]string, procs)
		for i := range procs {
			var out strings.Builder
			cmd := exec.Command(os.Args[0], "-test.run=^TestManyProcessesOpen$", "-test.count=1")
			cmd.Env = append(os.Environ(), openerDB+"="+path, openerStart+"="+start, openerTimes+"="+strconv.Itoa(times))
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := cmd.Wait(); err != nil {
					failures[i] = fmt.Sprintf("process %d: %v\n%s", i, err, out.String())
				}
			})
		}
		wg.Wait()
		for _, f := range failures {
			if f != "" {
				t.Errorf("round %d: %s", round+1, f)
			}
		}
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := s.ListRuns(context.Background(), store.RunFilter{Pipeline: "open", Limit: store.MaxRunLimit})
		s.Close()
		if err != nil || len(runs) != procs*times {
			t.Errorf("round %d: %d runs recorded (%v), want %d", round+1, len(runs), err, procs*times)
		}
	}
}
