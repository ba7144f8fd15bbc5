package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor"
)

// cmdValidate checks pipeline files: exit 0 when all are valid, 1 when any
// has an error. Diagnostics go to stderr; warnings do not fail. It
// compiles each file through package gate, as compile, run, serve and the
// CDK app do, so a file it passes every one of them accepts; the
// environment's OPENAI_BASE_URL decides only a warning.
func cmdValidate(_ context.Context, e env) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	quiet := fs.Bool("q", false, "print errors only, not warnings")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: stepline validate [-q] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	code := exitOK
	defaults := executor.DefaultsFromEnv(e.getenv)
	for _, path := range fs.Args() {
		f, _, ds, err := gate.CompileFile(path, defaults)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
			code = exitFailed
			continue
		}
		if *quiet {
			ds = ds.Errors()
		}
		fmt.Fprint(e.stderr, ds.String())
		if ds.HasErrors() {
			code = exitFailed
			continue
		}
		fmt.Fprintf(e.stdout, "%s: pipeline %q is valid (%d steps)\n", path, f.Pipeline.Name, len(f.Pipeline.Steps))
	}
	return code
}

// cmdSchema prints the JSON Schema of the pipeline format.
func cmdSchema(_ context.Context, e env) int {
	if len(e.args) > 0 {
		fmt.Fprintln(e.stderr, "usage: stepline schema")
		return exitUsage
	}
	_, _ = e.stdout.Write(compiler.Schema())
	return exitOK
}
