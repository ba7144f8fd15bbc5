package gate

import (
	"fmt"
	"io"
	"os"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
)

// Compile parses, checks and lowers one pipeline source, outside any
// project (no agents). It returns the file (nil when the source is not a
// pipeline at all), the state machine (nil when there is any error) and
// every error and warning, sorted.
func Compile(name string, src []byte, d settings.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics) {
	return CompileIn(name, src, nil, d)
}

// CompileIn is Compile in project p (nil: none): p's own problems are
// the pipeline's, and agent steps run p's agents.
func CompileIn(name string, src []byte, p *project.Project, d settings.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics) {
	return compiler.BuildIn(name, src, compiler.Env{CheckExecutor: d.CheckConfig, Project: p})
}

// CompileFile is Compile on the file at path, in the project found by
// walking up from it (Project), which also checks that each sub-pipeline
// it runs is defined by a file beside it (where run, serve and the CDK
// app look for it). The error is the file's reading, or its project's;
// the pipeline's problems are in the diagnostics.
func CompileFile(path string, d settings.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	p, err := Project(path, "")
	if err != nil {
		return nil, nil, nil, err
	}
	return CompileFileIn(path, p, d)
}

// CompileFileIn is CompileFile in project p (nil: none), whatever
// stepline.yaml lies above the file.
func CompileFileIn(path string, p *project.Project, d settings.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	return compiler.BuildFileIn(path, compiler.Env{CheckExecutor: d.CheckConfig, Project: p})
}

// Project loads the project of the pipeline file at path: config, the
// stepline.yaml given (--config), when it is not "", else the first
// stepline.yaml found walking up from path; nil when there is none.
func Project(path, config string) (*project.Project, error) {
	if config != "" {
		return project.Load(config)
	}
	return project.ForFile(path)
}

// Library loads the step library of project p (nil: none, so no
// library) with the executor checks: each step file parsed and checked
// on its own, as every pipeline of p sees it.
func Library(p *project.Project, d settings.Defaults) *compiler.Library {
	return compiler.LoadLibrary(compiler.Env{CheckExecutor: d.CheckConfig, Project: p})
}

// CheckStepFile checks the library step file at path on its own, in
// project p (nil: none): what stepline validate does with a file of the
// steps directory. The error is the file's reading; the step's problems
// are in the diagnostics.
func CheckStepFile(path string, p *project.Project, d settings.Defaults) (*compiler.LibraryStep, compiler.Diagnostics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read library step: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, project.MaxStepFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read library step: %w", err)
	}
	if len(src) > project.MaxStepFileBytes {
		return nil, nil, fmt.Errorf("read library step: %s is larger than %d MiB", path, project.MaxStepFileBytes>>20)
	}
	ls, ds := compiler.LoadStepFile(path, src, compiler.Env{CheckExecutor: d.CheckConfig, Project: p})
	return ls, ds, nil
}
