package local

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
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

// RerunIn reruns run originalID from step fromStep with its pipeline's
// file in dir (the file whose pipeline has the run's pipeline name, as
// it is now), and drives the new run until it ends or waits.
func (r *Runner) RerunIn(ctx context.Context, dir, originalID, fromStep string, opts ...RunOption) (Outcome, rerun.Plan, error) {
	run, err := r.Store.GetRun(ctx, originalID)
	if err != nil {
		return Outcome{}, rerun.Plan{}, fmt.Errorf("rerun %s: %w", originalID, err)
	}
	path, p, err := r.findPipeline(dir, run.Pipeline)
	if err != nil {
		return Outcome{}, rerun.Plan{}, fmt.Errorf("rerun %s: %w", originalID, err)
	}
	sm, name, _, err := r.Compile(path)
	if err != nil {
		return Outcome{}, rerun.Plan{}, err
	}
	plan, err := r.PrepareRerun(ctx, p, originalID, fromStep, "")
	if err != nil {
		return Outcome{}, rerun.Plan{}, err
	}
	o, err := r.StartRerun(ctx, sm, name, plan, opts...)
	return o, plan, err
}

// findPipeline returns the file of dir that holds pipeline name, and the
// pipeline.
func (r *Runner) findPipeline(dir, name string) (string, *pipeline.Pipeline, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return "", nil, err
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	for _, f := range files {
		var file *compiler.File
		var err error
		if r.project != nil {
			file, _, _, err = gate.CompileFileIn(f, r.project, settings.Defaults{})
		} else {
			file, _, _, err = gate.CompileFile(f, settings.Defaults{})
		}
		if err == nil && file != nil && file.Pipeline != nil && file.Pipeline.Name == name {
			return f, file.Pipeline, nil
		}
	}
	return "", nil, fmt.Errorf("%w: no file in %s holds pipeline %q", rerun.ErrPipeline, dir, name)
}
