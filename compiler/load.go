package compiler

import (
	"fmt"
	"os"
)

// Load parses and checks one pipeline source. The diagnostics hold every
// error and warning; the file is nil when the source is not a pipeline at
// all.
func Load(name string, src []byte) (*File, Diagnostics) {
	return LoadWith(name, src, nil)
}

// LoadWith is Load with executor configurations also checked by
// checkExecutor (package executor's CheckConfig).
func LoadWith(name string, src []byte, checkExecutor ExecutorCheck) (*File, Diagnostics) {
	return loadIn(name, src, Env{CheckExecutor: checkExecutor})
}

// loadIn parses and checks one pipeline source in env. In a project,
// the file's use: entries resolve against the project's step library,
// and the errors of the library's files on their own are the file's, as
// the project's own problems are.
func loadIn(name string, src []byte, env Env) (*File, Diagnostics) {
	lib := LoadLibrary(env)
	f, ds := parse(name, src, lib)
	if env.Project != nil {
		ds = append(ds, projectDiagnostics(env.Project)...)
		ds = append(ds, lib.errors()...)
		applyExecutorDefaults(f, env.Project)
		applyNotificationDefaults(f, env.Project)
	}
	ds = append(ds, checkIn(f, env)...)
	return f, f.noteUses(ds).Sort()
}

// LoadFile reads, parses and checks the pipeline file at path.
func LoadFile(path string) (*File, Diagnostics, error) {
	return LoadFileWith(path, nil)
}

// LoadFileWith is LoadFile with executor configurations also checked.
func LoadFileWith(path string, checkExecutor ExecutorCheck) (*File, Diagnostics, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read pipeline: %w", err)
	}
	f, ds := LoadWith(path, src, checkExecutor)
	return f, ds, nil
}
