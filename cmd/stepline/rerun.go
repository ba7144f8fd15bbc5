package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cmdRerun starts a new run of an earlier run's pipeline that reuses the
// earlier run's outputs for the steps before --from and runs the rest.
func cmdRerun(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	from := fs.String("from", "", "the sequential step to run again from (default: the first step, reusing nothing)")
	dir := fs.String("pipelines", "pipelines", "directory of the pipeline files: the run's pipeline is the file with its name")
	config := fs.String("config", "", "the project file (stepline.yaml): pipelines compile in it, and --pipelines defaults to its pipelines directory")
	responses := fs.String("responses", "", "YAML file of scripted replies the rerun answers from")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	exitCode := exitCodeFlag(fs)
	return func(ctx context.Context, e env, args []string) int {
		return rerun(ctx, e, fs, sf, args[0], rerunFlags{from: *from, dir: *dir, config: *config, responses: *responses, json: *asJSON, exitCode: *exitCode})
	}
}

// rerunFlags are rerun's flags but the state's.
type rerunFlags struct {
	from, dir, config, responses string
	json, exitCode               bool
}

func rerun(ctx context.Context, e env, fs *pflag.FlagSet, sf stateFlags, runID string, f rerunFlags) int {
	if e.startHeap != nil {
		e.startHeap()
	}
	if !useProject(e, fs, f.config, &sf, &f.dir) {
		return exitFailed
	}
	opts, ok := runOptions(e, f.responses)
	if !ok {
		return exitFailed
	}
	var prog *progress
	if !f.json {
		prog = newProgress(e)
		defer prog.stop()
	}
	r, err := openRunner(ctx, e, sf, prog)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	o, plan, err := r.RerunIn(ctx, f.dir, runID, f.from, opts...)
	prog.stop()
	if err != nil {
		driveError(e, err)
		return exitFailed
	}
	if !f.json {
		fmt.Fprintf(e.stdout, "rerun %s of %s from %q: %d earlier step records reused\n", o.RunID, plan.OriginalRunID, plan.FromStep, len(plan.Reused))
	}
	// A human step waits as in stepline run: decided from the responses
	// file or on a terminal, else left waiting for stepline approve.
	if o, err = answerApprovals(ctx, e, r.Runner, o, "", !f.json); err != nil {
		driveError(e, err)
		return exitFailed
	}
	return report(ctx, e, r, o, f.json, f.exitCode)
}
