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
	f, ds := Parse(name, src)
	ds = append(ds, CheckWith(f, checkExecutor)...)
	return f, ds.Sort()
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
