package compiler

import (
	"fmt"
	"os"

	"github.com/stepline/stepline/shared/asl"
)

// Build runs every phase on one pipeline source: parse, check (with each
// executor_config checked by checkExecutor, package executor's check) and,
// when that found no error, lower, with the limits of the definition. It
// returns the file (nil when the source is not a pipeline at all), the
// state machine (nil when there is any error) and every diagnostic,
// sorted. Whatever fails before a step runs fails here, so a program that
// builds through it (package compiler/gate) accepts exactly what validate
// accepts.
func Build(name string, src []byte, checkExecutor ExecutorCheck) (*File, *asl.StateMachine, Diagnostics) {
	f, ds := LoadWith(name, src, checkExecutor)
	if ds.HasErrors() {
		return f, nil, ds
	}
	sm, lds := Lower(f)
	ds = append(ds, lds...).Sort()
	if ds.HasErrors() {
		return f, nil, ds
	}
	return f, sm, ds
}

// BuildFile is Build on the file at path.
func BuildFile(path string, checkExecutor ExecutorCheck) (*File, *asl.StateMachine, Diagnostics, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read pipeline: %w", err)
	}
	f, sm, ds := Build(path, src, checkExecutor)
	return f, sm, ds, nil
}
