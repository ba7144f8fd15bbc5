package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
)

// cmdCompile writes a pipeline's state machine definition.
func cmdCompile(_ context.Context, e env) int {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	out := fs.String("o", "", "write the definition to this file instead of stdout")
	config := configFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: stepline compile [-o OUT] [--config FILE] FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	def, code := compileFile(e, fs.Arg(0), *config)
	if def == nil {
		return code
	}
	def = append(def, '\n')
	if *out == "" {
		_, _ = e.stdout.Write(def)
		return exitOK
	}
	if err := os.WriteFile(*out, def, 0o644); err != nil {
		fmt.Fprintf(e.stderr, "stepline: write definition: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// compileFile compiles a pipeline file in the project config names (""
// for the one above the file), printing its diagnostics. It returns the
// encoded definition, or nil and the exit code.
func compileFile(e env, path, config string) ([]byte, int) {
	_, sm, ds, err := compileIn(e, path, config)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
		return nil, exitFailed
	}
	fmt.Fprint(e.stderr, ds.String())
	if sm == nil {
		return nil, exitFailed
	}
	def, err := compiler.Marshal(sm)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: encode definition: %v\n", err)
		return nil, exitFailed
	}
	return def, exitOK
}

// cmdGraph draws a pipeline's state machine.
func cmdGraph(_ context.Context, e env) int {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	format := fs.String("format", compiler.GraphMermaid, "mermaid or dot")
	config := configFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: stepline graph [--format mermaid|dot] [--config FILE] FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 || (*format != compiler.GraphMermaid && *format != compiler.GraphDot) {
		fs.Usage()
		return exitUsage
	}
	_, sm, ds, err := compileIn(e, fs.Arg(0), *config)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", fs.Arg(0), err)
		return exitFailed
	}
	fmt.Fprint(e.stderr, ds.String())
	if sm == nil {
		return exitFailed
	}
	if err := compiler.WriteGraph(e.stdout, sm, *format); err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// compileIn compiles the pipeline file at path through package gate, in
// the project config names ("" for the one above the file).
func compileIn(e env, path, config string) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	p, err := gate.Project(path, config)
	if err != nil {
		return nil, nil, nil, err
	}
	return gate.CompileFileIn(path, p, executor.DefaultsFromEnv(e.getenv))
}
