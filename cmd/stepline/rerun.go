package main

import (
	"context"
	"flag"
	"fmt"
)

// cmdRerun starts a new run of an earlier run's pipeline that reuses the
// earlier run's outputs for the steps before --from and runs the rest.
func cmdRerun(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("rerun", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var sf stateFlags
	sf.register(fs)
	from := fs.String("from", "", "the sequential step to run again from (default: the first step, reusing nothing)")
	dir := fs.String("pipelines", "pipelines", "directory of the pipeline files: the run's pipeline is the file with its name")
	config := fs.String("config", "", "the project file (stepline.yaml): pipelines compile in it, and --pipelines defaults to its pipelines directory")
	responses := fs.String("responses", "", "YAML file of scripted replies the rerun answers from")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	if err := fs.Parse(e.args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, "usage: stepline rerun [--from STEP] [--pipelines DIR] [--responses FILE] RUN")
		return exitUsage
	}
	if !useProject(e, fs, *config, &sf, dir) {
		return exitFailed
	}
	opts, ok := runOptions(e, *responses)
	if !ok {
		return exitFailed
	}
	var prog *progress
	if !*asJSON {
		prog = newProgress(e.stdout)
	}
	r, err := openRunner(ctx, e, sf, prog)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	o, plan, err := r.RerunIn(ctx, *dir, fs.Arg(0), *from, opts...)
	if err != nil {
		driveError(e, err)
		return exitFailed
	}
	if !*asJSON {
		fmt.Fprintf(e.stdout, "rerun %s of %s from %q: %d earlier step records reused\n", o.RunID, plan.OriginalRunID, plan.FromStep, len(plan.Reused))
	}
	return report(ctx, e, r, o, *asJSON)
}
