package pipeline_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
)

// compiled compiles a pipeline file through gate, as the CDK app does.
func compiled(t *testing.T, path string) *pipeline.Pipeline {
	t.Helper()
	proj, err := gate.Project(path, "")
	if err != nil {
		t.Fatal(err)
	}
	f, _, ds, err := gate.CompileFileIn(path, proj, settings.Defaults{})
	if err != nil || ds.HasErrors() || f == nil || f.Pipeline == nil {
		t.Fatalf("compile %s: %v %v", path, err, ds.Err())
	}
	return f.Pipeline
}

// TestModelRoundTrip reads back the model of every example pipeline and
// the compiler's group fixtures: the decoded pipeline marshals to the same
// JSON, with the same node types, names and fingerprint.
func TestModelRoundTrip(t *testing.T) {
	root := testenv.RepoRoot()
	files, _ := filepath.Glob(filepath.Join(root, "pipelines", "*.yaml"))
	lower, _ := filepath.Glob(filepath.Join(root, "compiler", "testdata", "lower", "groups.yaml"))
	files = append(files, lower...)
	if len(files) < 6 {
		t.Fatalf("only %d pipeline files", len(files))
	}
	kinds := map[string]bool{}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p := compiled(t, path)
			if p.Config == "" {
				t.Fatal("the compiled pipeline has no fingerprint")
			}
			raw, err := pipeline.MarshalModel(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := pipeline.UnmarshalModel(raw)
			if err != nil {
				t.Fatalf("UnmarshalModel: %v\n%s", err, raw)
			}
			again, err := pipeline.MarshalModel(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, again) {
				t.Errorf("the model changes on a round trip:\n%s\n%s", raw, again)
			}
			want, _ := json.Marshal(p)
			got, _ := json.Marshal(back)
			if !bytes.Equal(want, got) {
				t.Errorf("the decoded pipeline's JSON differs:\n%s\n%s", want, got)
			}
			if back.Config != p.Config || back.Name != p.Name || len(back.Steps) != len(p.Steps) {
				t.Fatalf("decoded %q (%s, %d steps), want %q (%s, %d)", back.Name, back.Config, len(back.Steps), p.Name, p.Config, len(p.Steps))
			}
			for i, n := range p.Steps {
				if got, want := typeName(back.Steps[i]), typeName(n); got != want || back.Steps[i].NodeName() != n.NodeName() {
					t.Errorf("steps[%d] = %s %q, want %s %q", i, got, back.Steps[i].NodeName(), want, n.NodeName())
				}
				kinds[typeName(n)] = true
			}
		})
	}
	for _, k := range []string{"step", "parallel", "fan_out"} {
		if !kinds[k] {
			t.Errorf("no pipeline has a node of kind %s", k)
		}
	}
}

func typeName(n pipeline.Node) string {
	switch n.(type) {
	case *pipeline.Step:
		return "step"
	case *pipeline.Parallel:
		return "parallel"
	case *pipeline.FanOut:
		return "fan_out"
	}
	return "?"
}

func TestMarshalModelRefuses(t *testing.T) {
	if _, err := pipeline.MarshalModel(nil); err == nil {
		t.Error("MarshalModel(nil) succeeded")
	}
	if _, err := pipeline.MarshalModel(&pipeline.Pipeline{Name: "p", Steps: []pipeline.Node{nil}}); err == nil || !strings.Contains(err.Error(), "steps[0]") {
		t.Errorf("a nil node: %v", err)
	}
}

func TestUnmarshalModelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"not JSON", `{`, "pipeline model: unexpected EOF"},
		{"not an object", `[]`, "cannot unmarshal array"},
		{"no pipeline", `{"config_fingerprint": "x", "step_kinds": []}`, "no pipeline"},
		{"unknown wrapper field", `{"pipeline": {}, "step_kinds": [], "extra": 1}`, `unknown field "extra"`},
		{"unknown pipeline field", `{"pipeline": {"name": "p", "stepz": []}, "step_kinds": []}`, `pipeline: json: unknown field "stepz"`},
		{"fewer kinds", `{"pipeline": {"name": "p", "steps": [{"name": "a"}]}, "step_kinds": []}`, `"p": 1 steps but 0 step kinds`},
		{"more kinds", `{"pipeline": {"name": "p"}, "step_kinds": ["step"]}`, `"p": 0 steps but 1 step kinds`},
		{"unknown kind", `{"pipeline": {"name": "p", "steps": [{"name": "a"}]}, "step_kinds": ["loop"]}`, `steps[0]: unknown kind "loop"`},
		{"step of the wrong shape", `{"pipeline": {"name": "p", "steps": [{"name": "a", "over": "x"}]}, "step_kinds": ["step"]}`, `steps[0]: json: unknown field "over"`},
		{"a field of the wrong type", `{"pipeline": {"name": "p", "steps": [{"name": 3}]}, "step_kinds": ["step"]}`, `steps[0]: json: cannot unmarshal number`},
		{"text after", `{"pipeline": {"name": "p"}, "step_kinds": []} {}`, "text after the value"},
		{"a closing bracket after", `{"pipeline": {"name": "p"}, "step_kinds": []}]`, "pipeline model:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pipeline.UnmarshalModel([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("UnmarshalModel = %v, %v; want an error with %q", p, err, tc.want)
			}
		})
	}
}

func TestUnmarshalModelKinds(t *testing.T) {
	doc := `{"config_fingerprint": "fp", "step_kinds": ["step", "parallel", "fan_out"], "pipeline": {"name": "p", "stage": "production",
		"trigger": {"match": [{"field": "labels.x", "op": "in", "value": ["a", 2]}], "dedup": {"window_seconds": 60}},
		"steps": [{"name": "a", "executor": "scripted"}, {"name": "g", "branches": [{"name": "b1"}]}, {"name": "f", "over": "items"}]}}`
	p, err := pipeline.UnmarshalModel([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p.Config != "fp" || p.Stage != pipeline.StageProduction || *p.Trigger.Dedup.WindowSeconds != 60 {
		t.Errorf("decoded %+v", p)
	}
	if v, ok := p.Trigger.Match[0].Value.([]any); !ok || v[0] != "a" || v[1] != 2.0 {
		t.Errorf("match value %#v", p.Trigger.Match[0].Value)
	}
	s, ok1 := p.Steps[0].(*pipeline.Step)
	g, ok2 := p.Steps[1].(*pipeline.Parallel)
	f, ok3 := p.Steps[2].(*pipeline.FanOut)
	if !ok1 || !ok2 || !ok3 || s.Executor != "scripted" || g.Branches[0].Name != "b1" || f.Over != "items" {
		t.Errorf("steps %#v", p.Steps)
	}
}
