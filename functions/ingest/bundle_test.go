package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/catalog"
	"github.com/stepline/stepline/shared/executor/settings"
)

// testBundle compiles the test pipelines as the CDK app does (package
// plan, through gate) and returns them as bundled (catalog.NewFile), in
// file-name order. The function itself never compiles: only its tests
// link the compiler.
var testBundle = sync.OnceValues(func() ([]catalog.File, error) {
	dir := filepath.Join("testdata", "pipelines")
	ps, err := plan.Load(dir, settings.Defaults{})
	if err != nil {
		return nil, err
	}
	files := make([]catalog.File, 0, len(ps))
	for _, p := range ps {
		src, err := os.ReadFile(p.File)
		if err != nil {
			return nil, err
		}
		f, err := catalog.NewFile(filepath.Base(p.File), string(src), p.Model)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
})

// bundled returns the test pipelines as bundled.
func bundled(t testing.TB) []catalog.File {
	t.Helper()
	files, err := testBundle()
	if err != nil {
		t.Fatalf("compile the test pipelines: %v", err)
	}
	if len(files) != 3 {
		t.Fatalf("%d test pipelines, want 3", len(files))
	}
	return files
}
