package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor"
)

// cmdValidate checks pipeline files: exit 0 when all are valid, 1 when any
// has an error. Diagnostics go to stderr; warnings do not fail. It
// compiles each file through package gate, as compile, run, serve and the
// CDK app do, so a file it passes every one of them accepts; the
// environment's OPENAI_BASE_URL decides only a warning. Each file
// compiles in its project (--config, else the stepline.yaml above it),
// whose agent profiles are checked with it; a problem of a project is
// printed once however many of its pipelines are validated. With
// --config and no FILE, it validates every pipeline of the project.
func cmdValidate(_ context.Context, e env) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	quiet := fs.Bool("q", false, "print errors only, not warnings")
	config := configFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: stepline validate [-q] [--config FILE] FILE...")
		fmt.Fprintln(e.stderr, "       stepline validate [-q] --config FILE   (every pipeline of the project)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		return exitUsage
	}
	files := fs.Args()
	if len(files) == 0 && *config == "" {
		fs.Usage()
		return exitUsage
	}
	code := exitOK
	if len(files) == 0 {
		p, err := gate.Project("", *config)
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
	}
	defaults := executor.DefaultsFromEnv(e.getenv)
	printed := map[string]bool{}
	for _, path := range files {
		p, err := gate.Project(path, *config)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
			code = exitFailed
			continue
		}
		f, _, ds, err := gate.CompileFileIn(path, p, defaults)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
			code = exitFailed
			continue
		}
		if *quiet {
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
	}
	return code
}

// cmdSchema prints the JSON Schema of the pipeline format, or of an agent
// profile.
func cmdSchema(_ context.Context, e env) int {
	what := "pipeline"
	if len(e.args) == 1 {
		what = e.args[0]
	}
	if len(e.args) > 1 || (what != "pipeline" && what != "agent") {
		fmt.Fprintln(e.stderr, "usage: stepline schema [pipeline|agent]")
		return exitUsage
	}
	if what == "agent" {
		_, _ = e.stdout.Write(compiler.AgentSchema())
		return exitOK
	}
	_, _ = e.stdout.Write(compiler.Schema())
	return exitOK
}
