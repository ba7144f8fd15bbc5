package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

// TestRunWithNoStepIsRecorded: a run whose every step is skipped ends
// completed and is recorded like any other run (listed, with its stage,
// source and trigger), although no step wrote it.
func TestRunWithNoStepIsRecorded(t *testing.T) {
	for _, stage := range []string{"testing", "production"} {
		t.Run(stage, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, "name: p\nstage: "+stage+"\nsteps:\n  - {name: a, executor: scripted, when: 'labels.x == \"never\"'}\n")
			r := openNotifying(t, dir)
			o, err := r.Run(ctx, path, json.RawMessage(`{"source": "manual", "team": "sre", "labels": {"x": "y"}}`), "")
			if err != nil || o.Status != store.RunCompleted {
				t.Fatalf("run: %+v, %v", o, err)
			}
			run, err := r.Store.GetRun(ctx, o.RunID)
			if err != nil {
				t.Fatalf("the run is not recorded: %v", err)
			}
			if run.Status != store.RunCompleted || run.Pipeline != "p" || run.Stage != stage || run.Source != "manual" ||
				run.Team != "sre" || run.CompletedAt == nil || run.StartedAt.IsZero() || len(run.Trigger) == 0 {
				t.Errorf("run %+v", run)
			}
			runs, err := r.Store.ListRuns(ctx, store.RunFilter{Limit: 10})
			if err != nil || len(runs) != 1 || runs[0].ID != o.RunID {
				t.Errorf("listed %+v, %v", runs, err)
			}
		})
	}
}
