package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/project"
)

const rewriteSource = `name: p
notifications:
  escalate:
    - channel: slack
      config: {url: "${SLACK_URL}"}
  stopped: {channel: log, template: "x"}
steps:
  - name: g
    executor: gateway
    executor_config: {model: m, api_key: "${OPENAI_KEY}"}
    verifier:
      executor: anthropic
      executor_config: {model: c}
  - name: b
    executor: bedrock
    executor_config: {model: anthropic.claude}
  - name: w
    executor: webhook
    executor_config: {url: "{{ base }}/x", timeout_seconds: 20}
    on_failure: {policy: continue, webhook: {url: "https://ops/hook"}}
  - name: n
    executor: notify
    executor_config: {url: "https://n"}
    prompt_template: "costs $${NOT_A_SECRET}"
  - name: h
    executor: human
  - parallel:
      name: grp
      steps:
        - {name: left, executor: gateway}
        - {name: right, executor: anthropic, executor_config: {model: c}}
  - fan_out:
      name: fan
      over: steps.g.items
      executor: gateway
      executor_config: {model: m}
`

func rewritten(t *testing.T, src, responses string) (map[string]any, Variant) {
	t.Helper()
	script, err := ParseScript([]byte(responses))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Rewrite([]byte(src), "sc", &Fake{URL: "http://fake"}, script, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(v.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, v
}

// at follows a path of map keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestRewrite(t *testing.T) {
	doc, v := rewritten(t, rewriteSource, "w: [{error: timeout}]\nfan/1: [{error: timeout}]\n")
	steps := doc["steps"]
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"gateway base_url", at(steps, 0, "executor_config", "base_url"), "http://fake/s/sc/m/g/v1"},
		{"gateway keeps its api_key", at(steps, 0, "executor_config", "api_key"), "${OPENAI_KEY}"},
		{"verifier key", at(steps, 0, "verifier", "executor_config", "base_url"), "http://fake/s/sc/m/g:verifier"},
		{"bedrock model names the step", at(steps, 1, "executor_config", "model"), "anthropic.claude~sc~b"},
		{"webhook url", at(steps, 2, "executor_config", "url"), "http://fake/s/sc/h/w"},
		{"timed-out step's timeout", at(steps, 2, "timeout_seconds"), TimeoutSeconds},
		{"timed-out webhook's own timeout", at(steps, 2, "executor_config", "timeout_seconds"), TimeoutSeconds},
		{"failure webhook", at(steps, 2, "on_failure", "webhook", "url"), "http://fake/s/sc/n/failure-w"},
		{"notify url", at(steps, 3, "executor_config", "url"), "http://fake/s/sc/h/n"},
		{"notify without timeout replies keeps no timeout", at(steps, 3, "timeout_seconds"), nil},
		{"prompt untouched", at(steps, 3, "prompt_template"), "costs $${NOT_A_SECRET}"},
		{"human untouched", at(steps, 4), map[string]any{"name": "h", "executor": "human"}},
		{"branch without config gets one", at(steps, 5, "parallel", "steps", 0, "executor_config", "base_url"), "http://fake/s/sc/m/left/v1"},
		{"anthropic branch", at(steps, 5, "parallel", "steps", 1, "executor_config", "base_url"), "http://fake/s/sc/m/right"},
		{"fan-out key is a template", at(steps, 6, "fan_out", "executor_config", "base_url"), "http://fake/s/sc/m/fan/{{ fan_out_index }}/v1"},
		{"fan-out api_key for a templated base_url", at(steps, 6, "fan_out", "executor_config", "api_key"), ""},
		{"fan-out item's timeout", at(steps, 6, "fan_out", "timeout_seconds"), TimeoutSeconds},
		{"notification url", at(doc, "notifications", "escalate", 0, "config", "url"), "http://fake/s/sc/n/notification-escalate"},
		{"notification without url untouched", at(doc, "notifications", "stopped", "config"), nil},
		{"secrets named, $$ escapes not", strings.Join(v.Secrets, ","), "OPENAI_KEY,SLACK_URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if g, w := yamlText(c.got), yamlText(c.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

// TestRewriteTimeoutKeys: only a timeout scripted for the step itself, its
// verifier or, for a fan-out, one of its items shortens its timeout.
func TestRewriteTimeoutKeys(t *testing.T) {
	src := "name: p\nsteps:\n  - {name: a, executor: gateway}\n  - fan_out: {name: f, over: steps.a.x, executor: gateway}\n"
	for _, c := range []struct {
		responses string
		a, f      bool
	}{
		{"a: [{error: timeout}]", true, false},
		{"a:verifier: [{error: timeout after 3s}]", true, false},
		{"a: [{error: \"http 504\"}]", false, false},
		{"ab: [{error: timeout}]", false, false},
		{"f/12: [{error: timeout}]", false, true},
		{"f/x: [{error: timeout}]", false, false},
		{"f/: [{error: timeout}]", false, false},
		{"f: [{error: timeout}]", false, false},
	} {
		t.Run(c.responses, func(t *testing.T) {
			doc, _ := rewritten(t, src, c.responses)
			if got := at(doc, "steps", 0, "timeout_seconds") != nil; got != c.a {
				t.Errorf("step a shortened: %v, want %v", got, c.a)
			}
			if got := at(doc, "steps", 1, "fan_out", "timeout_seconds") != nil; got != c.f {
				t.Errorf("fan-out f shortened: %v, want %v", got, c.f)
			}
		})
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"openclaw", "name: p\nsteps: [{name: a, executor: openclaw}]\n", `step "a": the box has no counterpart of executor "openclaw"`},
		{"bedrock fan-out", "name: p\nsteps: [{fan_out: {name: f, over: x, executor: bedrock, executor_config: {model: m}}}]\n", "a bedrock fan-out cannot name each item"},
		{"not a mapping", "- a\n", "not a pipeline mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rewrite([]byte(c.src), "sc", &Fake{URL: "http://fake"}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func yamlText(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

// agentProject is a project with agents on each API: a model without a
// provider (open), a Bedrock model, a project provider's model with a
// Bedrock fallback, and one that needs a stdio MCP server.
var agentProject = map[string]string{
	"stepline.yaml": `pipelines: flows
mcp_servers:
  grafana:
    url: https://grafana.example.com/mcp
    headers: {Authorization: "Bearer ${GRAFANA_TOKEN}"}
  local: {command: npx, args: [server]}
providers:
  anthropic: {api_key: "${ANTHROPIC_API_KEY}"}
  vllm: {base_url: "http://gpu:8000/v1", api_key: "${VLLM_KEY}"}
  bedrock: {region: eu-west-1}
tool_policy:
  default: deny
  rules:
    - allow: {server: grafana}
`,
	"agents/open/agent.yaml":  "name: open\nmodel: gpt-4o-mini\ntools: [grafana]\n",
	"agents/open/soul.md":     "soul\n",
	"agents/rock/agent.yaml":  "name: rock\nmodel: bedrock/anthropic.claude-v2\nmodel_fallbacks: [anthropic/claude-sonnet-4-6]\ntools: [grafana]\n",
	"agents/rock/soul.md":     "soul\n",
	"agents/named/agent.yaml": "name: named\nmodel: vllm/llama\nmodel_fallbacks: [bedrock/anthropic.claude-v2]\n",
	"agents/named/soul.md":    "soul\n",
	"agents/stdio/agent.yaml": "name: stdio\nmodel: gpt-4o-mini\ntools: [local]\n",
	"agents/stdio/soul.md":    "soul\n",
}

func loadProject(t *testing.T, files map[string]string) (*project.Project, []byte) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proj, err := project.Load(filepath.Join(dir, project.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range proj.Diagnostics {
		if !d.Warning {
			t.Fatalf("the test project has an error: %v", d)
		}
	}
	return proj, []byte(files[project.FileName])
}

func TestRewriteAgentSteps(t *testing.T) {
	proj, _ := loadProject(t, agentProject)
	src := `name: p
steps:
  - {name: g, executor: gateway, executor_config: {agent: open}}
  - {name: a, executor: anthropic, executor_config: {agent: open, api_key: "${ANTHROPIC_API_KEY}"}}
  - {name: r, executor: bedrock, executor_config: {agent: rock}, timeout_seconds: 1800}
  - {name: o, executor: bedrock, executor_config: {agent: open, model: bedrock/meta.llama3}}
  - {name: n, executor: gateway, executor_config: {agent: named}}
  - {name: v, executor: gateway, executor_config: {model: m}, verifier: {executor: bedrock, executor_config: {agent: rock}}}
  - parallel:
      name: grp
      steps:
        - {name: left, executor: anthropic, executor_config: {agent: rock}}
`
	v, err := Rewrite([]byte(src), "sc", &Fake{URL: "http://fake"}, nil, proj)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(v.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	steps := doc["steps"]
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"open model: the gateway step's own endpoint", at(steps, 0, "executor_config"), map[string]any{"agent": "open", "base_url": "http://fake/s/sc/m/g/v1"}},
		{"open model: the anthropic step's own endpoint, its key kept", at(steps, 1, "executor_config"), map[string]any{"agent": "open", "api_key": "${ANTHROPIC_API_KEY}", "base_url": "http://fake/s/sc/m/a"}},
		{"bedrock first model named to the fake", at(steps, 2, "executor_config"), map[string]any{"agent": "rock", "model": "bedrock/anthropic.claude-v2~sc~r"}},
		{"the rest of the step untouched", at(steps, 2, "timeout_seconds"), 1800},
		{"the step's own bedrock model named to the fake", at(steps, 3, "executor_config", "model"), "bedrock/meta.llama3~sc~o"},
		{"every model names its provider: no base_url", at(steps, 4, "executor_config"), map[string]any{"agent": "named"}},
		{"a verifier agent", at(steps, 5, "verifier", "executor_config", "model"), "bedrock/anthropic.claude-v2~sc~v:verifier"},
		{"a branch's agent", at(steps, 6, "parallel", "steps", 0, "executor_config"), map[string]any{"agent": "rock", "model": "bedrock/anthropic.claude-v2~sc~left"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if g, w := yamlText(c.got), yamlText(c.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
	// Steps whose agents call a project's provider (OpenAI-compatible or
	// Anthropic), by provider; Bedrock models have no provider route.
	want := map[string][]string{"anthropic": {"r", "v:verifier", "left"}, "vllm": {"n"}}
	if got := marshal(v.Providers); got != marshal(want) {
		t.Errorf("Providers = %s, want %s", got, marshal(want))
	}
}

func TestRewriteAgentRefuses(t *testing.T) {
	proj, _ := loadProject(t, agentProject)
	for _, c := range []struct {
		name, src string
		proj      *project.Project
		want      string
	}{
		{"no project", "name: p\nsteps: [{name: g, executor: gateway, executor_config: {agent: open}}]\n", nil, `step "g" runs an agent, but no stepline.yaml governs the pipeline`},
		{"unknown agent", "name: p\nsteps: [{name: g, executor: gateway, executor_config: {agent: nobody}}]\n", proj, `step "g": executor_config.agent: unknown agent "nobody"`},
		{"a stdio MCP server", "name: p\nsteps: [{name: g, executor: gateway, executor_config: {agent: stdio}}]\n", proj, `needs MCP server "local", which runs a command (stdio)`},
		{"an agent fan-out", "name: p\nsteps: [{fan_out: {name: f, over: x, executor: gateway, executor_config: {agent: open}}}]\n", proj, "an agent fan-out cannot name each item"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rewrite([]byte(c.src), "sc", &Fake{URL: "http://fake"}, nil, c.proj)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestRewriteProject(t *testing.T) {
	proj, src := loadProject(t, agentProject)
	out, err := RewriteProject(src, proj, "sc", &Fake{URL: "http://fake"})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(proj.Path)
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"pipelines as written, made absolute", doc["pipelines"], filepath.Join(dir, "flows")},
		{"agents, the default, written out", doc["agents"], filepath.Join(dir, "agents")},
		{"steps, the default, written out", doc["steps"], filepath.Join(dir, "steps")},
		{"an MCP server's url", at(doc, "mcp_servers", "grafana", "url"), "http://fake/s/sc/mcp/grafana"},
		{"its headers kept", at(doc, "mcp_servers", "grafana", "headers"), map[string]any{"Authorization": "Bearer ${GRAFANA_TOKEN}"}},
		{"a stdio server untouched", at(doc, "mcp_servers", "local"), map[string]any{"command": "npx", "args": []any{"server"}}},
		{"anthropic routed, its key kept", at(doc, "providers", "anthropic"), map[string]any{"api_key": "${ANTHROPIC_API_KEY}", "base_url": "http://fake/s/sc/p/anthropic"}},
		{"a declared provider routed", at(doc, "providers", "vllm", "base_url"), "http://fake/s/sc/p/vllm/v1"},
		{"built-in providers routed too", at(doc, "providers", "openai"), map[string]any{"base_url": "http://fake/s/sc/p/openai/v1"}},
		{"ollama", at(doc, "providers", "ollama", "base_url"), "http://fake/s/sc/p/ollama/v1"},
		{"bedrock keeps its region and gets no route", at(doc, "providers", "bedrock"), map[string]any{"region": "eu-west-1"}},
		{"the policy untouched", at(doc, "tool_policy", "rules", 0), map[string]any{"allow": map[string]any{"server": "grafana"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if g, w := yamlText(c.got), yamlText(c.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
	// The variant loads as a project with the same agents, versions and
	// policy, from wherever it is written.
	moved := filepath.Join(t.TempDir(), project.FileName)
	if err := os.WriteFile(moved, out, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := project.Load(moved)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range again.Diagnostics {
		if !d.Warning {
			t.Errorf("the variant has an error: %v", d)
		}
	}
	for _, name := range proj.AgentNames() {
		if a, b := proj.Profiles[name], again.Profiles[name]; b == nil || a.Profile.Version != b.Profile.Version {
			t.Errorf("agent %s: version %v, then %v", name, a, b)
		}
	}
	// An empty project file gets the directories and the routes.
	empty, _ := loadProject(t, map[string]string{project.FileName: ""})
	out, err = RewriteProject(nil, empty, "sc", &Fake{URL: "http://fake"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "base_url: http://fake/s/sc/p/anthropic\n") || !strings.Contains(string(out), "agents: "+filepath.Join(filepath.Dir(empty.Path), "agents")) {
		t.Errorf("empty project rewritten as\n%s", out)
	}
}

// TestRewriteLibrarySteps: an entry that names a library step is
// rewritten as the step it resolves to, and only what changed is written
// as its own keys (executor_config's keys merge over the library's; any
// other key replaces the library's whole).
func TestRewriteLibrarySteps(t *testing.T) {
	files := map[string]string{
		"steps/investigate.yaml": "name: investigate\ndescription: d\ntags: [x]\nexecutor: bedrock\nexecutor_config: {agent: rock}\ntimeout_seconds: 1800\n",
		"steps/notify-ops.yaml": `name: notify-ops
executor: webhook
executor_config: {url: "https://ops/hook", headers: {X: "1"}}
verifier: {executor: gateway, executor_config: {model: m}}
on_failure: {policy: continue, webhook: {url: "https://ops/failed"}}
`,
	}
	for k, v := range agentProject {
		files[k] = v
	}
	proj, _ := loadProject(t, files)
	src := `name: p
steps:
  - {use: investigate}
  - {use: investigate, name: again, confidence_threshold: 0.7}
  - {use: notify-ops, executor_config: {headers: {Y: "2"}}}
  - fan_out: {use: notify-ops, name: fan, over: x}
`
	v, err := Rewrite([]byte(src), "sc", &Fake{URL: "http://fake"}, nil, proj)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(v.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	steps := doc["steps"]
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"an agent's model, named by the library step's name", at(steps, 0), map[string]any{
			"use": "investigate", "executor_config": map[string]any{"model": "bedrock/anthropic.claude-v2~sc~investigate"}}},
		{"renamed: the local name is the key", at(steps, 1), map[string]any{
			"use": "investigate", "name": "again", "confidence_threshold": 0.7, "executor_config": map[string]any{"model": "bedrock/anthropic.claude-v2~sc~again"}}},
		{"a webhook's url over the library's, local keys kept", at(steps, 2, "executor_config"), map[string]any{"headers": map[string]any{"Y": "2"}, "url": "http://fake/s/sc/h/notify-ops"}},
		{"the library's verifier, rewritten, written whole", at(steps, 2, "verifier"), map[string]any{
			"executor": "gateway", "executor_config": map[string]any{"model": "m", "base_url": "http://fake/s/sc/m/notify-ops:verifier/v1"}}},
		{"the library's failure webhook, rewritten, written whole", at(steps, 2, "on_failure"), map[string]any{
			"policy": "continue", "webhook": map[string]any{"url": "http://fake/s/sc/n/failure-notify-ops"}}},
		{"a fan-out's key", at(steps, 3, "fan_out", "executor_config", "url"), "http://fake/s/sc/h/fan/{{ fan_out_index }}"},
		{"nothing else", at(steps, 3, "fan_out", "executor"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if g, w := yamlText(c.got), yamlText(c.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
	for _, c := range []struct {
		name, src string
		proj      *project.Project
		want      string
	}{
		{"unknown library step", "name: p\nsteps: [{use: nothing}]\n", proj, `use: no library step "nothing"`},
		{"no project", "name: p\nsteps: [{use: investigate}]\n", nil, `use: "investigate" names a library step, but no stepline.yaml governs the pipeline`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rewrite([]byte(c.src), "sc", &Fake{URL: "http://fake"}, nil, c.proj)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
