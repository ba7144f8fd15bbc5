package steprun

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// WorkflowExpress is task.Pipeline.Workflow in an Express workflow.
const WorkflowExpress = "express"

// finishRun closes the record of a run that completed, with its output and
// usage, and counts it: an Express workflow's last Task (no execution
// status change event reaches the recorder function, which does both
// for a Standard one). A run closed before is left as it is (a retried
// Task counts it again: metrics are at least once, as every step
// metric). It answers no status: progress displays show nothing for it.
func (t *taskRun) finishRun(ctx context.Context) (task.Response, error) {
	now := t.h.now()
	cost := t.req.Usage.CostUSD
	u := store.Usage{InputTokens: t.req.Usage.InputTokens, OutputTokens: t.req.Usage.OutputTokens, CostUSD: &cost}
	final := t.req.Final
	if len(final) > store.MaxFinalOutputBytes || string(final) == "null" {
		final = nil
	}
	err := t.h.Store.UpdateRun(ctx, t.req.Run.ID, store.RunUpdate{Status: store.RunCompleted, CompletedAt: &now, FinalOutput: final, Usage: &u})
	switch {
	case errors.Is(err, store.ErrConflict):
	case err != nil:
		return task.Response{}, fmt.Errorf("finish run %q: %w", t.req.Run.ID, err)
	default:
		t.countRun(store.RunCompleted)
	}
	return task.Response{Usage: t.req.Usage}, nil
}

// countRun counts a run that ended with status in the Runs metric, as the
// recorder function does for a Standard workflow's runs (dimensions
// Pipeline and Status, and Status alone): only in an Express workflow,
// whose ends the recorder never hears of.
func (t *taskRun) countRun(status store.RunStatus) {
	if t.h.Metrics == nil || t.req.Pipeline.Workflow != WorkflowExpress {
		return
	}
	dims := map[string]string{"Pipeline": t.req.Pipeline.Name, "Status": string(status)}
	_ = t.h.Metrics.PutSets(dims, [][]string{{"Pipeline", "Status"}, {"Status"}}, metrics.Metric{Name: metrics.Runs, Unit: "Count", Value: 1})
}
