package local

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/rerun"
)

// PrepareRerun plans a rerun of run originalID of p from step fromStep
// (package rerun) as run newID (a new ID when empty), and records the new
// run with the step records it reuses. StartRerun then drives it. Errors
// are those of rerun.Prepare and rerun.Apply (rerun.HTTPStatus maps them).
func (r *Runner) PrepareRerun(ctx context.Context, p *pipeline.Pipeline, originalID, fromStep, newID string) (rerun.Plan, error) {
	if newID == "" {
		newID = NewRunID()
	}
	plan, err := rerun.Prepare(ctx, r.Store, p, originalID, fromStep, newID, r.now().UTC())
	if err != nil {
		return rerun.Plan{}, err
	}
	if err := rerun.Apply(ctx, r.Store, plan); err != nil {
		return rerun.Plan{}, err
	}
	return plan, nil
}

// StartRerun drives a prepared rerun on sm, the pipeline's compiled state
// machine saved under name: the machine loads the reused outputs and goes
// on at the plan's from_step.
func (r *Runner) StartRerun(ctx context.Context, sm *asl.StateMachine, name string, plan rerun.Plan, opts ...RunOption) (Outcome, error) {
	if plan.Run.ID == "" || len(plan.Input) == 0 {
		return Outcome{}, fmt.Errorf("rerun: no plan")
	}
	opts = append(opts, func(o *runOptions) { o.input = plan.Input })
	return r.Start(ctx, sm, name, plan.Run.Trigger, plan.Run.ID, opts...)
}
