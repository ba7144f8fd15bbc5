package gate

import (
	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
)

// Compile parses, checks and lowers one pipeline source. It returns the
// file (nil when the source is not a pipeline at all), the state machine
// (nil when there is any error) and every error and warning, sorted.
func Compile(name string, src []byte, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics) {
	return compiler.Build(name, src, d.CheckConfig)
}

// CompileFile is Compile on the file at path, which also checks that
// each sub-pipeline it runs is defined by a file beside it (where run,
// serve and the CDK app look for it). The error is the file's reading;
// the pipeline's problems are in the diagnostics.
func CompileFile(path string, d executor.Defaults) (*compiler.File, *asl.StateMachine, compiler.Diagnostics, error) {
	return compiler.BuildFile(path, d.CheckConfig)
}
