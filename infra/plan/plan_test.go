package plan_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/secret"
)

// writePipelines writes name → YAML files into a new directory.
func writePipelines(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func byName(t *testing.T, ps []*plan.Pipeline) map[string]*plan.Pipeline {
	t.Helper()
	out := map[string]*plan.Pipeline{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// taskTimeouts reads the definition as plain JSON and returns the
// TimeoutSeconds of every Task that invokes the step function.
func taskTimeouts(t *testing.T, def string) []float64 {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(def), &doc); err != nil {
		t.Fatal(err)
	}
	var out []float64
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["Type"] == "Task" && v["Resource"] == "arn:aws:states:::lambda:invoke" {
				if args, ok := v["Arguments"].(map[string]any); ok && args["FunctionName"] == "${StepFunctionArn}" {
					out = append(out, v["TimeoutSeconds"].(float64))
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return out
}

func TestLoadExamples(t *testing.T) {
	ps, err := plan.Load("../../pipelines", settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(t, ps)
	tests := []struct {
		name      string
		secrets   []string
		defaults  []string // DefaultSecrets
		models    []string
		approvals bool
		trigger   bool
		exact     bool
	}{
		{name: "sre-alert-triage", secrets: []string{"AUTOMATION_TOKEN", "OPENAI_API_KEY", "SLACK_WEBHOOK_URL"},
			models: []string{"anthropic.claude-3-5-sonnet-20240620-v1:0"}, approvals: true, trigger: true, exact: true},
		{name: "order-intake", secrets: []string{"ANTHROPIC_API_KEY", "OPS_HOOK_KEY", "WAREHOUSE_TOKEN"}, trigger: true, exact: true},
		{name: "research-brief", secrets: []string{"ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"}},
		{name: "multi-service-health", defaults: []string{"OPENAI_API_KEY"}, trigger: true, exact: true},
		{name: "sre-investigation", secrets: []string{"ANTHROPIC_API_KEY", "AUTOMATION_TOKEN", "GRAFANA_MCP_TOKEN"},
			models: []string{"anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-haiku-20240307-v1:0"}, approvals: true, trigger: true, exact: true},
	}
	if len(ps) != len(tests) {
		t.Fatalf("loaded %d pipelines, want %d", len(ps), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := got[tt.name]
			if !ok {
				t.Fatalf("pipeline %q not loaded", tt.name)
			}
			if !reflect.DeepEqual(p.Secrets, tt.secrets) && (len(p.Secrets) > 0 || len(tt.secrets) > 0) {
				t.Errorf("Secrets = %v, want %v", p.Secrets, tt.secrets)
			}
			if !reflect.DeepEqual(p.DefaultSecrets, tt.defaults) && (len(p.DefaultSecrets) > 0 || len(tt.defaults) > 0) {
				t.Errorf("DefaultSecrets = %v, want %v", p.DefaultSecrets, tt.defaults)
			}
			if !reflect.DeepEqual(p.Models, tt.models) && (len(p.Models) > 0 || len(tt.models) > 0) {
				t.Errorf("Models = %v, want %v", p.Models, tt.models)
			}
			if p.Approvals() != tt.approvals {
				t.Errorf("Approvals() = %v, want %v", p.Approvals(), tt.approvals)
			}
			if (p.Trigger != nil) != tt.trigger {
				t.Fatalf("Trigger = %v, want present %v", p.Trigger, tt.trigger)
			}
			if p.Trigger != nil && p.Trigger.Exact != tt.exact {
				t.Errorf("Trigger.Exact = %v, want %v", p.Trigger.Exact, tt.exact)
			}
			src, err := os.ReadFile(p.File)
			if err != nil {
				t.Fatal(err)
			}
			// In the project above the file, as the stack compiles it.
			proj, err := project.ForFile(p.File)
			if err != nil {
				t.Fatal(err)
			}
			_, sm, ds := compiler.BuildIn(p.File, src, compiler.Env{Project: proj})
			if ds.HasErrors() {
				t.Fatal(ds)
			}
			def, _ := compiler.MarshalCompact(sm)
			if p.Definition != string(def) {
				t.Error("Definition differs from the compiler's compact output")
			}
			var longest float64
			for _, s := range taskTimeouts(t, p.Definition) {
				longest = max(longest, s)
			}
			if p.StepTimeout != int(longest) || p.StepTimeout > plan.MaxLambdaTimeout {
				t.Errorf("StepTimeout = %d, want the longest step Task timeout %v (≤ 900)", p.StepTimeout, longest)
			}
		})
	}
	if got := got["sre-alert-triage"].StepTimeout; got != 735 {
		t.Errorf("sre-alert-triage StepTimeout = %d, want 735 (triage: 120 s × 6 calls + 15)", got)
	}
	if got := got["order-intake"].StepTimeout; got != plan.MaxLambdaTimeout {
		t.Errorf("order-intake StepTimeout = %d, want %d (a step without timeout_seconds)", got, plan.MaxLambdaTimeout)
	}
}

func TestLoadLinksChildren(t *testing.T) {
	dir := writePipelines(t, map[string]string{
		"parent.yaml": `name: parent
steps:
  - name: run-child
    executor: pipeline
    executor_config: {pipeline: child-one}
    timeout_seconds: 30
`,
		"child.yml": `name: child-one
workflow: standard # a sub-pipeline is a Standard workflow
steps:
  - name: hook
    executor: webhook
    executor_config: {url: "https://example.com/x", headers: {Authorization: "Bearer ${HOOK_TOKEN}"}}
    timeout_seconds: 20
`,
		"notes.txt": "not a pipeline",
	})
	ps, err := plan.Load(dir, settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(t, ps)
	if len(ps) != 2 {
		t.Fatalf("loaded %d pipelines, want 2", len(ps))
	}
	want := map[string]string{compiler.ChildPlaceholder("child-one"): "child-one"}
	if !reflect.DeepEqual(got["parent"].Children, want) {
		t.Errorf("parent Children = %v, want %v", got["parent"].Children, want)
	}
	if c := got["child-one"]; c.StepTimeout >= plan.MaxLambdaTimeout || c.StepTimeout < 20 {
		t.Errorf("child-one StepTimeout = %d, want the bounded step's Task timeout", c.StepTimeout)
	}
	if !reflect.DeepEqual(got["child-one"].Secrets, []string{"HOOK_TOKEN"}) {
		t.Errorf("child-one Secrets = %v", got["child-one"].Secrets)
	}
}

func TestLoadErrors(t *testing.T) {
	const step = "steps:\n  - {name: a, executor: webhook, executor_config: {url: \"https://example.com\"}}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "no files", files: map[string]string{"readme.md": "x"}, want: []string{"no *.yaml or *.yml file"}},
		{name: "every file's errors", files: map[string]string{
			"a.yaml": "name: a\nsteps: []\n",
			"b.yaml": "steps:\n  - {name: x, executor: nope}\n",
		}, want: []string{"a.yaml:", "b.yaml:"}},
		{name: "duplicate name", files: map[string]string{
			"a.yaml": "name: same\n" + step,
			"b.yaml": "name: same\n" + step,
		}, want: []string{`pipeline name "same" is already used by`}},
		{name: "unknown child", files: map[string]string{
			"a.yaml": "name: a\nsteps:\n  - {name: c, executor: pipeline, executor_config: {pipeline: missing}}\n",
		}, want: []string{`a.yaml:3:52: step "c": executor_config.pipeline "missing": no pipeline file in `}},
		{name: "placeholder collision", files: map[string]string{
			"a.yaml": "name: a-b\n" + step,
			"b.yaml": "name: a_b\n" + step,
		}, want: []string{"share the substitution ${PipelineABArn}"}},
		{name: "templated bedrock model", files: map[string]string{
			"a.yaml": "name: a\nsteps:\n  - {name: s, executor: bedrock, executor_config: {model: \"{{ model }}\"}}\n",
		}, want: []string{`a.yaml:3:51: step "s": executor_config.model "{{ model }}" is a template`}},
		{name: "inexpressible schedule", files: map[string]string{
			"a.yaml": "name: a\nschedule: {cron: \"0 9 1 * mon\"}\n" + step,
		}, want: []string{`schedule.cron "0 9 1 * mon": restricts both day of month and day of week`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Load(writePipelines(t, tt.files), settings.Defaults{})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	ps := []*plan.Pipeline{
		{Name: "a", Secrets: []string{"API_KEY", "TOKEN"}},
		{Name: "b", Secrets: []string{"TOKEN"}},
	}
	t.Run("mapped", func(t *testing.T) {
		refs, err := plan.Secrets(ps, map[string]string{
			"API_KEY": "secretsmanager:prod/api#key",
			"TOKEN":   "ssm:/stepline/token",
			"UNUSED":  "ssm:/unused",
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := refs["UNUSED"]; ok {
			t.Error("a mapping no pipeline uses was kept")
		}
		env := plan.RefsEnv(refs)
		if want := "API_KEY=secretsmanager:prod/api#key,TOKEN=ssm:/stepline/token"; env != want {
			t.Errorf("RefsEnv = %q, want %q", env, want)
		}
		back, err := secret.ParseRefs(env)
		if err != nil || !reflect.DeepEqual(back, refs) {
			t.Errorf("ParseRefs(RefsEnv) = %v, %v; want %v", back, err, refs)
		}
	})
	t.Run("unmapped", func(t *testing.T) {
		_, err := plan.Secrets(ps, map[string]string{"API_KEY": "secretsmanager:x"})
		if err == nil || !strings.Contains(err.Error(), `secret "TOKEN" (used by a, b) has no mapping`) {
			t.Errorf("error = %v, want it to name TOKEN and its pipelines", err)
		}
	})
	t.Run("default secrets", func(t *testing.T) {
		ps := []*plan.Pipeline{
			{Name: "a", Secrets: []string{"TOKEN"}, DefaultSecrets: []string{"OPENAI_API_KEY"}},
			{Name: "b", Secrets: []string{"OPENAI_API_KEY"}, DefaultSecrets: []string{"OPENAI_API_KEY"}},
		}
		cases := []struct {
			name    string
			mapping map[string]string
			want    string
			err     string
		}{
			{"mapped: read by the functions", map[string]string{"TOKEN": "ssm:/t", "OPENAI_API_KEY": "secretsmanager:o"}, "OPENAI_API_KEY=secretsmanager:o,TOKEN=ssm:/t", ""},
			{"unmapped, but named by b", map[string]string{"TOKEN": "ssm:/t"}, "", `secret "OPENAI_API_KEY" (used by b) has no mapping`},
			{"unmapped and only a default", map[string]string{"TOKEN": "ssm:/t"}, "TOKEN=ssm:/t", ""},
		}
		for i, c := range cases {
			in := ps
			if i == 2 {
				in = ps[:1]
			}
			refs, err := plan.Secrets(in, c.mapping)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s: error = %v, want %q", c.name, err, c.err)
				}
			case err != nil:
				t.Errorf("%s: %v", c.name, err)
			case plan.RefsEnv(refs) != c.want:
				t.Errorf("%s: RefsEnv = %q, want %q", c.name, plan.RefsEnv(refs), c.want)
			}
		}
	})
	t.Run("bad reference", func(t *testing.T) {
		_, err := plan.Secrets(ps, map[string]string{"API_KEY": "vault:x", "TOKEN": "ssm:/t"})
		if err == nil || !strings.Contains(err.Error(), `secret "API_KEY" (used by a)`) || !strings.Contains(err.Error(), "unknown store") {
			t.Errorf("error = %v, want the parse error for API_KEY", err)
		}
	})
}
