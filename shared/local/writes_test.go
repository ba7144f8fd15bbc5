package local

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stepline/stepline/shared/store"
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
