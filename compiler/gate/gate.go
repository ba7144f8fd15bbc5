package gate

import (
	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/project"
)

// Compile parses, checks and lowers one pipeline source, outside any
// project (no agents). It returns the file (nil when the source is not a
// pipeline at all), the state machine (nil when there is any error) and
// every error and warning, sorted.
func Compile(name string, src []byte, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics) {
	return CompileIn(name, src, nil, d)
}

// CompileIn is Compile in project p (nil: none): p's own problems are
// the pipeline's, and agent steps run p's agents.
func CompileIn(name string, src []byte, p *project.Project, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics) {
	return compiler.BuildIn(name, src, compiler.Env{CheckExecutor: d.CheckConfig, Project: p})
}

// CompileFile is Compile on the file at path, in the project found by
// walking up from it (Project), which also checks that each sub-pipeline
// it runs is defined by a file beside it (where run, serve and the CDK
// app look for it). The error is the file's reading, or its project's;
// the pipeline's problems are in the diagnostics.
func CompileFile(path string, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	p, err := Project(path, "")
	if err != nil {
		return nil, nil, nil, err
	}
	return CompileFileIn(path, p, d)
}

// CompileFileIn is CompileFile in project p (nil: none), whatever
// stepline.yaml lies above the file.
func CompileFileIn(path string, p *project.Project, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
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
