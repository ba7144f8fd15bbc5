package gate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompileFileProject: a file compiles in the project above it, or in
// the one given, whatever lies above it; outside any project an agent step
// names no agent.
func TestCompileFileProject(t *testing.T) {
	const pipe = "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: helper}\n"
	root, other, bare := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, root, map[string]string{
		"stepline.yaml":            "",
		"agents/helper/agent.yaml": "name: helper\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/helper/soul.md":    "Help.",
		"pipelines/p.yaml":         pipe,
	})
	write(t, other, map[string]string{"stepline.yaml": "", "pipelines/p.yaml": pipe})
	write(t, bare, map[string]string{"p.yaml": pipe})

	f, sm, ds, err := gate.CompileFile(filepath.Join(root, "pipelines", "p.yaml"), settings.Defaults{})
	if err != nil || sm == nil {
		t.Fatalf("in its project: %v\n%s", err, ds)
	}
	if a := f.Pipeline.Steps[0].(*pipeline.Step).Agent; a == nil || a.Profile.Soul != "Help." {
		t.Errorf("agent %+v", a)
	}

	// The project above other/ has no agent helper...
	_, sm, ds, err = gate.CompileFile(filepath.Join(other, "pipelines", "p.yaml"), settings.Defaults{})
	if err != nil || sm != nil || !strings.Contains(ds.String(), `unknown agent "helper": `) {
		t.Errorf("in a project without the agent: %v\n%s", err, ds)
	}
	// ...but the project given is the one that counts.
	p, err := gate.Project(filepath.Join(other, "pipelines", "p.yaml"), filepath.Join(root, "stepline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, sm, ds, err = gate.CompileFileIn(filepath.Join(other, "pipelines", "p.yaml"), p, settings.Defaults{}); err != nil || sm == nil {
		t.Errorf("in the project given: %v\n%s", err, ds)
	}

	// Outside any project (unless a stepline.yaml lies above the temporary
	// directory) there are no agents.
	_, sm, ds, err = gate.CompileFile(filepath.Join(bare, "p.yaml"), settings.Defaults{})
	if err != nil || sm != nil || !strings.Contains(ds.String(), `unknown agent "helper"`) {
		t.Errorf("outside a project: %v\n%s", err, ds)
	}
	// A project file that cannot be read is the compile's error.
	if _, err := gate.Project("p.yaml", filepath.Join(bare, "missing.yaml")); err == nil {
		t.Error("a missing --config file was accepted")
	}
}
