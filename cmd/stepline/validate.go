package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// cmdValidate checks pipeline files: exit 0 when all are valid, 1 when any
// has an error. Diagnostics go to stderr; warnings do not fail. It
// compiles each file through package gate, as compile, run, serve and the
// CDK app do, so a file it passes every one of them accepts; the
// environment's OPENAI_BASE_URL decides only a warning. Each file
// compiles in its project (--config, else the stepline.yaml above it),
// whose agent profiles are checked with it; a problem of a project is
// printed once however many of its pipelines are validated. With
// --config and no FILE, it validates every pipeline and every library
// step of the project. A FILE in the project's steps directory is a
// library step, checked on its own (gate.CheckStepFile); every pipeline
// that uses it checks it again in place. With -v it says where each valid
// pipeline's agent steps run: in-process, or on which remote gateway (the
// project's rule, project.Runtime).
func cmdValidate(c *cobra.Command) action {
	fs := c.Flags()
	quiet := fs.BoolP("quiet", "q", false, "print errors only, not warnings")
	verbose := fs.BoolP("verbose", "v", false, "also say where each agent step's agent runs (in-process, or on a remote gateway)")
	config := configFlag(fs)
	return func(_ context.Context, e env, args []string) int {
		if len(args) == 0 && *config == "" {
			return e.usageError("give pipeline files, or --config FILE for every pipeline of a project")
		}
		return validate(e, args, *config, *quiet, *verbose)
	}
}

func validate(e env, files []string, config string, quiet, verbose bool) int {
	code := exitOK
	if len(files) == 0 {
		p, err := gate.Project("", config)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		if files, err = projectPipelines(p); err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		if len(files) == 0 {
			fmt.Fprint(e.stderr, p.Diagnostics.String())
			fmt.Fprintf(e.stderr, "stepline: no pipeline file in %s\n", p.Pipelines)
			return exitFailed
		}
		for _, sf := range p.StepFiles {
			files = append(files, sf.Path)
		}
	}
	defaults := settings.DefaultsFromEnv(e.getenv)
	printed := map[string]bool{}
	for _, path := range files {
		p, err := gate.Project(path, config)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
			code = exitFailed
			continue
		}
		if p.IsStepFile(path) {
			if !validateStepFile(e, path, p, defaults, quiet, printed) {
				code = exitFailed
			}
			continue
		}
		f, _, ds, err := gate.CompileFileIn(path, p, defaults)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
			code = exitFailed
			continue
		}
		if quiet {
			ds = ds.Errors()
		}
		var b strings.Builder
		for _, d := range ds {
			s := d.String()
			if d.Pos.File != path && printed[s] {
				continue // a project's problem, already printed
			}
			printed[s] = true
			b.WriteString(s)
			b.WriteByte('\n')
		}
		fmt.Fprint(e.stderr, b.String())
		if ds.HasErrors() {
			code = exitFailed
			continue
		}
		fmt.Fprintf(e.stdout, "%s: pipeline %q is valid (%d steps)\n", path, f.Pipeline.Name, len(f.Pipeline.Steps))
		if verbose {
			for _, line := range agentPlaces(f.Pipeline, p) {
				fmt.Fprintf(e.stdout, "  %s\n", line)
			}
		}
	}
	return code
}

// validateStepFile checks one library step file on its own and reports
// it as validate reports a pipeline; false when it has an error.
func validateStepFile(e env, path string, p *project.Project, d settings.Defaults, quiet bool, printed map[string]bool) bool {
	ls, ds, err := gate.CheckStepFile(path, p, d)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
		return false
	}
	ds = append(projectProblems(p), ds...)
	if quiet {
		ds = ds.Errors()
	}
	for _, dg := range ds {
		s := dg.String()
		if printed[s] {
			continue // already printed, as a problem of a pipeline that uses it or of the project
		}
		printed[s] = true
		fmt.Fprintln(e.stderr, s)
	}
	if ds.HasErrors() {
		return false
	}
	fmt.Fprintf(e.stdout, "%s: library step %q is valid\n", path, ls.Name)
	return true
}

// projectProblems are the project's own problems as diagnostics.
func projectProblems(p *project.Project) compiler.Diagnostics {
	var out compiler.Diagnostics
	for _, d := range p.Diagnostics {
		out = append(out, compiler.Diagnostic{Pos: pipeline.Pos{File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col}, Warning: d.Warning, Msg: d.Msg})
	}
	return out
}

// agentPlaces says, for each step, branch and fan-out that runs an agent,
// where it runs: in-process (the profile and its version), or on which
// remote runtime.
func agentPlaces(pl *pipeline.Pipeline, p *project.Project) []string {
	var out []string
	place := func(where string, a *agent.Resolved) {
		if a == nil {
			return
		}
		name := a.Profile.Name
		switch r := a.Remote; {
		case r == nil:
			at := ""
			if p != nil {
				if l, ok := p.Profiles[name]; ok {
					at = " from " + l.Path
				}
			}
			out = append(out, fmt.Sprintf("%s: agent %q runs in-process (version %s%s)", where, name, a.Profile.Version, at))
		case r.Runtime == agent.RuntimeGateway:
			out = append(out, fmt.Sprintf("%s: agent %q runs on the remote agent gateway at %s", where, name, r.URL))
		case r.URL == "":
			out = append(out, fmt.Sprintf("%s: agent %q runs on the OpenClaw gateway, which is not configured (executors.openclaw.url)", where, name))
		default:
			out = append(out, fmt.Sprintf("%s: agent %q runs on the OpenClaw gateway at %s", where, name, r.URL))
		}
	}
	for _, n := range pl.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			place(fmt.Sprintf("step %q", n.Name), n.Agent)
		case *pipeline.Parallel:
			for _, b := range n.Branches {
				place(fmt.Sprintf("branch %q of parallel %q", b.Name, n.Name), b.Agent)
			}
		case *pipeline.FanOut:
			place(fmt.Sprintf("fan_out %q", n.Name), n.Agent)
		}
	}
	return out
}

// cmdSchema prints the JSON Schema of the pipeline format, or of an agent
// profile.
func cmdSchema(c *cobra.Command) action {
	c.ValidArgs = []string{"pipeline", "agent"}
	return func(_ context.Context, e env, args []string) int {
		if len(args) == 1 && args[0] == "agent" {
			_, _ = e.stdout.Write(compiler.AgentSchema())
			return exitOK
		}
		_, _ = e.stdout.Write(compiler.Schema())
		return exitOK
	}
}

// schemaArgs: at most one argument, pipeline or agent.
var schemaArgs = cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs)
