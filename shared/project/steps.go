package project

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stepline/stepline/shared/agent"
)

// Bounds of the step library (the steps directory).
const (
	// MaxStepFiles is the most step files one steps directory holds.
	MaxStepFiles = 1000
	// MaxStepFileBytes bounds one step file: a step with a long prompt
	// fits many times over.
	MaxStepFileBytes = 1 << 20
)

// StepFile is one file of the project's step library, as read: package
// compiler parses it (a library step, which a pipeline names with use:).
type StepFile struct {
	Path string // the steps directory joined with the file's name
	Src  []byte
}

// IsStepFile reports whether path names a file of the project's steps
// directory (whether or not it exists): what stepline validate reads as a
// library step rather than a pipeline.
func (p *Project) IsStepFile(path string) bool {
	if p == nil {
		return false
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return false
	}
	steps, err := filepath.Abs(p.Steps)
	return err == nil && dir == steps && isStepFileName(filepath.Base(path))
}

// isStepFileName reports whether a file of the steps directory is a step
// file: *.yaml or *.yml, not hidden and not starting with _ (as the
// agents directory skips such entries).
func isStepFileName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return (ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

// loadStepFiles reads the step files of dir, in name order. A missing
// directory is an empty library; a file that cannot be read, one over
// MaxStepFileBytes, and files past MaxStepFiles are errors.
func loadStepFiles(dir string) ([]StepFile, agent.Diagnostics) {
	var ds agent.Diagnostics
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		ds.Errorf(agent.Pos{File: dir}, "read steps: %v", err)
		return nil, ds
	}
	var out []StepFile
	for _, e := range entries { // os.ReadDir sorts by name
		if e.IsDir() || !isStepFileName(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if len(out) == MaxStepFiles {
			ds.Errorf(agent.Pos{File: dir}, "more than %d step files in one directory", MaxStepFiles)
			break
		}
		src, err := readStepFile(path)
		if err != nil {
			ds.Errorf(agent.Pos{File: path, Line: 1, Col: 1}, "%v", err)
			continue
		}
		out = append(out, StepFile{Path: path, Src: src})
	}
	return out, ds
}

// readStepFile reads a step file of at most MaxStepFileBytes.
func readStepFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxStepFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxStepFileBytes {
		return nil, fmt.Errorf("the file is larger than %d MiB", MaxStepFileBytes>>20)
	}
	return b, nil
}
