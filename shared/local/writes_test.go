package local

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/shared/store"

	_ "modernc.org/sqlite" // the driver, for the log's checkpoints
)

// TestOneWritePerStep: a run commits one write transaction per step (the
// checkpoint that records the step's end holds its record too), plus a
// few per run (claim, run record, status, release).
func TestOneWritePerStep(t *testing.T) {
	ctx := context.Background()
	commits := map[int]int64{}
	for _, n := range []int{10, 30} {
		dir := t.TempDir()
		sm, _ := benchPipeline(t, dir, n, 0)
		r := openBench(t, dir, nil)
		before := r.Store.Commits()
		o, err := r.Start(ctx, sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%d", n))
		if err != nil || o.Status != store.RunCompleted {
			t.Fatalf("%d steps: %v %+v", n, err, o)
		}
		commits[n] = r.Store.Commits() - before
		recs, err := r.Store.ListSteps(ctx, o.RunID)
		if err != nil || len(recs) != n {
			t.Fatalf("%d steps: %d records (%v)", n, len(recs), err)
		}
	}
	if per := float64(commits[30]-commits[10]) / 20; per != 1 {
		t.Errorf("%v write transactions per step (%d for 10 steps, %d for 30), want 1", per, commits[10], commits[30])
	}
	t.Logf("write transactions: %d for 10 steps, %d for 30", commits[10], commits[30])
}

// TestPagesPerStep counts the pages a run's steps write to the
// write-ahead log (each page one frame, two pwrite calls), in a store
// that holds runs already: the cost of a step's write transaction on
// disk. The figure is in the README's Figures; the test fails when a
// change makes a step write more than maxPagesPerStep.
func TestPagesPerStep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n = 100
	sm, _ := benchPipeline(t, dir, n, 0)
	r := openBench(t, dir, nil)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "stepline.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// logged checkpoints the log and returns how many frames it held.
	logged := func(mode string) int {
		var busy, frames, done int
		if err := db.QueryRow("PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &done); err != nil || busy != 0 {
			t.Fatalf("checkpoint: %v (busy %d)", err, busy)
		}
		return frames
	}
	run := func() {
		o, err := r.Start(ctx, sm, "bench", json.RawMessage(`{}`), NewRunID())
		if err != nil || o.Status != store.RunCompleted {
			t.Fatalf("run: %v %+v", err, o)
		}
	}
	for range 10 { // a store that holds runs already
		run()
	}
	logged("TRUNCATE") // an empty log
	run()
	per := float64(logged("PASSIVE")) / n
	t.Logf("%.2f pages per step", per)
	// The file's size per run, every page copied in from the log.
	logged("TRUNCATE")
	var pages, size int
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		t.Fatal(err)
	}
	t.Logf("%.0f KiB of store file per %d-step run", float64(pages*size)/11/1024, n)
	if per > maxPagesPerStep {
		t.Errorf("%.2f pages written per step, want at most %v", per, maxPagesPerStep)
	}
}

// maxPagesPerStep bounds TestPagesPerStep.
const maxPagesPerStep = 5.0 // 4.6 measured (2026-12-03, the journal row compressed and keyed by an integer); 5.8 with the index on (run_id, seq); 6.9 uncompressed; 9.6 with a row per event and per value; 10.7 with random run IDs
