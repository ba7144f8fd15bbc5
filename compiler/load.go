package compiler

import (
	"fmt"
	"os"
)

// Load parses and checks one pipeline source. The diagnostics hold every
// error and warning; the file is nil when the source is not a pipeline at
// all.
func Load(name string, src []byte) (*File, Diagnostics) {
	f, ds := Parse(name, src)
	ds = append(ds, Check(f)...)
	return f, ds.Sort()
}

// LoadFile reads, parses and checks the pipeline file at path.
func LoadFile(path string) (*File, Diagnostics, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read pipeline: %w", err)
	}
	f, ds := Load(path, src)
	return f, ds, nil
}
