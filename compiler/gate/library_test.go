package gate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
)

// TestLibraryThroughTheGate: a pipeline compiles with its project's step
// library; a library step is checked on its own with the executor checks
// the compiler alone does not run, and those errors are every pipeline's.
func TestLibraryThroughTheGate(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"stepline.yaml":       "",
		"steps/classify.yaml": "name: classify\ndescription: Classify.\nexecutor: gateway\nexecutor_config: {model: m, base_url: 'https://llm.example.com/v1', temperature: 0.5}\n",
		"steps/hot.yaml":      "name: hot\nexecutor: gateway\nexecutor_config: {model: m, base_url: 'https://llm.example.com/v1', temperature: 7}\n",
		"pipelines/p.yaml":    "name: p\nsteps:\n  - {use: classify, name: first}\n",
	})
	t.Chdir(root)
	p, err := gate.Project("pipelines/p.yaml", "")
	if err != nil {
		t.Fatal(err)
	}

	const hot = `steps/hot.yaml:3:18: step "hot": executor_config.temperature: must be between 0 and 2, got 7`
	_, ds, err := gate.CheckStepFile("steps/hot.yaml", p, settings.Defaults{})
	if err != nil || ds.String() != hot+"\n" {
		t.Errorf("hot on its own: %v\n%s\nwant %s", err, ds, hot)
	}
	ls, ds, err := gate.CheckStepFile("steps/classify.yaml", p, settings.Defaults{})
	if err != nil || len(ds) != 0 || ls.Name != "classify" || ls.Description != "Classify." {
		t.Errorf("classify on its own: %v %+v\n%s", err, ls, ds)
	}
	if _, _, err := gate.CheckStepFile("steps/missing.yaml", p, settings.Defaults{}); err == nil || !strings.HasPrefix(err.Error(), "read library step: ") {
		t.Errorf("a missing file: %v", err)
	}

	lib := gate.Library(p, settings.Defaults{})
	var names []string
	for _, s := range lib.Steps() {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "classify hot" || lib.Diagnostics().String() != hot+"\n" {
		t.Errorf("library %v\n%s", names, lib.Diagnostics())
	}

	// hot's error is the pipeline's, though it does not use hot.
	f, sm, ds, err := gate.CompileFile(filepath.Join("pipelines", "p.yaml"), settings.Defaults{})
	if err != nil || sm != nil || ds.String() != hot+"\n" {
		t.Fatalf("with hot in the library: %v\n%s", err, ds)
	}
	if s := f.Pipeline.Steps[0].(*pipeline.Step); s.Name != "first" || s.ExecutorConfig["temperature"] != 0.5 {
		t.Errorf("resolved %+v", s)
	}
	write(t, root, map[string]string{"steps/hot.yaml": "name: hot\nexecutor: gateway\nexecutor_config: {model: m, base_url: 'https://llm.example.com/v1', temperature: 1}\n"})
	if _, sm, ds, err = gate.CompileFile(filepath.Join("pipelines", "p.yaml"), settings.Defaults{}); err != nil || sm == nil || len(ds) != 0 {
		t.Errorf("once hot is fixed: %v\n%s", err, ds)
	}
}
