package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
)

// cmdCompile writes a pipeline's state machine definition.
func cmdCompile(c *cobra.Command) action {
	fs := c.Flags()
	out := fs.StringP("output", "o", "", "write the definition to this file instead of stdout")
	config := configFlag(fs)
	return func(_ context.Context, e env, args []string) int {
		return compile(e, args[0], *config, *out)
	}
}

func compile(e env, path, config, out string) int {
	def, code := compileFile(e, path, config)
	if def == nil {
		return code
	}
	def = append(def, '\n')
	if out == "" {
		_, _ = e.stdout.Write(def)
		return exitOK
	}
	if err := os.WriteFile(out, def, 0o644); err != nil {
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
func cmdGraph(c *cobra.Command) action {
	fs := c.Flags()
	format := fs.String("format", compiler.GraphMermaid, "mermaid or dot")
	config := configFlag(fs)
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{compiler.GraphMermaid, compiler.GraphDot}, cobra.ShellCompDirectiveNoFileComp))
	return func(_ context.Context, e env, args []string) int {
		if *format != compiler.GraphMermaid && *format != compiler.GraphDot {
			return e.usageError("--format %q: want %s or %s", *format, compiler.GraphMermaid, compiler.GraphDot)
		}
		return graph(e, args[0], *config, *format)
	}
}

func graph(e env, path, config, format string) int {
	_, sm, ds, err := compileIn(e, path, config)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
		return exitFailed
	}
	fmt.Fprint(e.stderr, ds.String())
	if sm == nil {
		return exitFailed
	}
	if err := compiler.WriteGraph(e.stdout, sm, format); err != nil {
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
	return gate.CompileFileIn(path, p, settings.DefaultsFromEnv(e.getenv))
}

// compilerBuild identifies this program to the definition cache
// (local.Config.BuildID), so that a pipeline compiled by another build is
// compiled again: the module version and VCS facts, which alone do not
// tell two builds of one modified work tree apart, and the executable's
// path, size and modification time, which do. "" (no cache) when the
// executable cannot be found.
func compilerBuild() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	b := readBuildInfo()
	return fmt.Sprintf("%s %s %s %t %s %s %d %d", b.version, b.revision, b.time, b.modified, b.goVersion,
		exe, fi.Size(), fi.ModTime().UnixNano())
}
