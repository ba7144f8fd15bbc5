package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/readiness"
)

// cmdReadiness judges a pipeline's readiness: criteria against its local
// runs. It is advisory: the exit code is 0 whatever the verdicts.
func cmdReadiness(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	config := configFlag(fs)
	return func(ctx context.Context, e env, args []string) int {
		return judgeReadiness(ctx, e, sf, args[0], *config, *asJSON)
	}
}

func judgeReadiness(ctx context.Context, e env, sf stateFlags, arg, config string, asJSON bool) int {
	var proj *project.Project
	var err error
	if config != "" {
		if proj, err = project.Load(config); err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
	}
	path, err := pipelineFile(arg, proj)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	f, sm, ds, err := compileFor(path, proj)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	if ds.HasErrors() || sm == nil || f == nil || f.Pipeline == nil {
		fmt.Fprint(e.stderr, ds.Errors().String())
		return exitFailed
	}
	r, err := openRunner(ctx, e, sf, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	ev, err := readiness.Gather(ctx, r.Store, f.Pipeline, compiler.ConfigOf(sm))
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	rep := readiness.Evaluate(ev, f.Pipeline.Readiness, time.Now().UTC())
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return exitOK
	}
	printReadiness(e.stdout, rep, f.Pipeline.Readiness != nil)
	return exitOK
}

// compileFor compiles the pipeline at path as the local runner does: in
// proj, else in the project of the file.
func compileFor(path string, proj *project.Project) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	if proj != nil {
		return gate.CompileFileIn(path, proj, settings.Defaults{})
	}
	return gate.CompileFile(path, settings.Defaults{})
}

// pipelineFile is arg when it names a file, else the file of the
// project's pipelines directory (proj, or the project above the working
// directory) that defines the pipeline named arg.
func pipelineFile(arg string, proj *project.Project) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return "", fmt.Errorf("no pipeline file %s", arg)
	}
	if proj == nil {
		var err error
		if proj, err = project.ForFile(filepath.Join(".", "pipeline.yaml")); err != nil {
			return "", err
		}
		if proj == nil {
			return "", fmt.Errorf("no pipeline file %s, and no stepline.yaml above the working directory to find pipeline %q in", arg, arg)
		}
	}
	files, err := projectPipelines(proj)
	if err != nil {
		return "", err
	}
	for _, file := range files {
		f, _, _, err := gate.CompileFileIn(file, proj, settings.Defaults{})
		if err == nil && f != nil && f.Pipeline != nil && f.Pipeline.Name == arg {
			return file, nil
		}
	}
	return "", fmt.Errorf("no pipeline named %q in %s", arg, proj.Pipelines)
}

func printReadiness(w io.Writer, rep readiness.Report, configured bool) {
	cfg := rep.Config
	if cfg == "" {
		cfg = "unknown"
	}
	fmt.Fprintf(w, "readiness of pipeline %q (stage %s, config %s): %d ended runs read", rep.Pipeline, rep.Stage, cfg, rep.Runs)
	if rep.Truncated {
		fmt.Fprint(w, " (the newest only: older runs left out)")
	}
	fmt.Fprintln(w)
	if !configured {
		fmt.Fprintf(w, "the pipeline sets no readiness: criteria (tiers operational, confidence, accuracy, calibration)\n")
		return
	}
	fmt.Fprintln(w, "advisory: readiness never gates a run")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tVERDICT\tWHY")
	for _, t := range rep.Tiers {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Tier, t.Verdict, t.Why)
	}
	_ = tw.Flush()
	for _, s := range rep.Steps {
		fmt.Fprintln(w)
		what := s.Executor
		switch {
		case s.Kind == readiness.KindParallel:
			what = "parallel"
		case s.Kind != readiness.KindStep:
			what = s.Kind + ", " + s.Executor
		}
		fmt.Fprintf(w, "step %s (%s): %s, %d results\n", s.Name, what, strings.ReplaceAll(s.Verdict, "_", " "), s.Results)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range s.Tiers {
			if t.Verdict == readiness.NotConfigured && t.Why == "not configured" {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Tier, t.Verdict, t.Why)
		}
		_ = tw.Flush()
	}
}
