package compiler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// repositoryProject is the repository's stepline.yaml with its agents:
// the project the example pipelines belong to.
func repositoryProject(t *testing.T) *project.Project {
	t.Helper()
	p, err := project.Load("../stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// agentProject writes a project with agents to a temporary directory and
// loads it.
func agentProject(t *testing.T, cfg string, files map[string]string) *project.Project {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{
		"stepline.yaml":            cfg,
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\ntools: [grafana]\n",
		"agents/triage/soul.md":    "{% if x %}You triage alerts.{% endif %}",
		"agents/local/agent.yaml":  "name: local\nmodel: llama3\ntools: [files]\n",
		"agents/local/soul.md":     "",
		"agents/judge/agent.yaml":  "name: judge\nmodel: openai/gpt-4o\n",
		"agents/judge/soul.md":     "judge",
	}
	for k, v := range files {
		all[k] = v
	}
	for name, body := range all {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(filepath.Join(root, "stepline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const agentConfig = `mcp_servers:
  grafana: {url: "https://grafana/mcp", headers: {Authorization: "Bearer ${GRAFANA_TOKEN}"}}
  files: {command: npx, args: [server-filesystem]}
executors:
  openai: {base_url: "https://gw.example/v1", api_key: "${GW_KEY}"}
`

// TestAgentSteps: what the compiler says of agent steps, each problem at
// the executor_config key it is about.
func TestAgentSteps(t *testing.T) {
	p := agentProject(t, agentConfig, nil)
	tests := []struct {
		name, src string
		want      []string
	}{
		{"agent step", "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage}\n", nil},
		{"unknown agent", "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config:\n      agent: triag\n", []string{
			`p.yaml:6:14: step "a": executor_config.agent: unknown agent "triag" (did you mean "triage"?) (agents in ` + p.Agents + `: judge, local, triage)`}},
		{"executor that runs no agent", "name: p\nsteps:\n  - name: a\n    executor: webhook\n    executor_config: {agent: triage, url: 'http://x'}\n", []string{
			`p.yaml:5:30: step "a": executor_config.agent: executor "webhook" cannot run an agent; use gateway, anthropic, bedrock`}},
		{"openclaw without executors.openclaw", "name: p\nsteps:\n  - name: a\n    executor: openclaw\n    executor_config: {agent: triage}\n", []string{
			`p.yaml:4:15: warning: step "a": executor openclaw is not configured: set executors.openclaw.url in stepline.yaml (the OpenClaw gateway); until then its steps fail with a ConfigError`}},
		{"bad overrides", "name: p\nsteps:\n  - name: a\n    executor: anthropic\n    executor_config: {agent: triage, thinking_level: hi, model: 'nope/x'}\n", []string{
			`p.yaml:5:54: step "a": executor_config.thinking_level: "hi" is not a thinking level: want one of off, minimal, low, medium, high, xhigh`,
			`p.yaml:5:65: step "a": executor_config.model: model "nope/x": unknown provider "nope" (known: anthropic, bedrock, ollama, openai, openrouter)`}},
		{"ignored keys warn", "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage, max_tokens: 10}\n", []string{
			`p.yaml:5:50: warning: step "a": executor_config.max_tokens: ignored on an agent step: agent "triage"'s profile decides it`}},
		{"verifier cannot run an agent", "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage}\n    verifier:\n      executor: gateway\n      executor_config: {agent: judge}\n", []string{
			`p.yaml:8:24: step "a" verifier: executor_config.agent: a verifier is one model call and cannot run an agent; give the agent's judgement its own step`}},
		{"branch and fan-out agents", `name: p
steps:
  - parallel:
      name: g
      steps:
        - name: b1
          executor: gateway
          executor_config: {agent: judge}
        - name: b2
          executor: bedrock
          executor_config: {agent: tirage}
  - fan_out:
      name: f
      over: "['api', 'db']"
      executor: anthropic
      executor_config: {agent: judge}
`, []string{
			`p.yaml:11:36: branch "b2" of parallel "g": executor_config.agent: unknown agent "tirage" (did you mean "triage"?) (agents in ` + p.Agents + `: judge, local, triage)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ds := BuildIn("p.yaml", []byte(tt.src), Env{Project: p})
			var got []string
			if len(ds) > 0 {
				got = strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestAgentStepWithoutProject: outside a project no step can name an agent.
func TestAgentStepWithoutProject(t *testing.T) {
	_, sm, ds := BuildIn("p.yaml", []byte("name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: sre-triage}\n"), Env{})
	want := `p.yaml:5:30: step "a": executor_config.agent: unknown agent "sre-triage": no stepline.yaml above p.yaml, so the pipeline has no agents (an agent is agents/<name>/agent.yaml beside stepline.yaml; or give --config)` + "\n"
	if sm != nil || ds.String() != want {
		t.Errorf("diagnostics:\n%swant:\n%s", ds, want)
	}
}

// TestAgentInlined: the resolved agent is in the step, branch and fan-out
// models and in their Tasks' static payload, so the step function needs
// no file of the project.
func TestAgentInlined(t *testing.T) {
	p := agentProject(t, agentConfig, nil)
	src := `name: p
steps:
  - name: a
    executor: gateway
    executor_config: {agent: triage}
  - parallel:
      name: g
      steps:
        - {name: b1, executor: gateway, executor_config: {agent: judge}}
        - {name: b2, executor: gateway, executor_config: {model: m}}
  - fan_out:
      name: f
      over: "['api', 'db']"
      executor: bedrock
      executor_config: {agent: local}
`
	f, sm, ds := BuildIn("p.yaml", []byte(src), Env{Project: p})
	if sm == nil {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	s := f.Pipeline.Steps[0].(*pipeline.Step)
	g := f.Pipeline.Steps[1].(*pipeline.Parallel)
	fo := f.Pipeline.Steps[2].(*pipeline.FanOut)
	if s.Agent == nil || s.Agent.Profile.Name != "triage" || g.Branches[0].Agent == nil || g.Branches[1].Agent != nil || fo.Agent == nil {
		t.Fatalf("agents: step %v, branches %v %v, fan-out %v", s.Agent, g.Branches[0].Agent, g.Branches[1].Agent, fo.Agent)
	}
	if want := (agent.Endpoint{Provider: "bedrock", API: agent.APIBedrock, Model: "llama3"}); !reflect.DeepEqual(fo.Agent.Models, []agent.Endpoint{want}) {
		t.Errorf("fan-out models %+v", fo.Agent.Models)
	}
	// A branch without an agent gets the project's gateway defaults.
	if cfg := g.Branches[1].ExecutorConfig; cfg["base_url"] != "https://gw.example/v1" || cfg["api_key"] != "${GW_KEY}" {
		t.Errorf("branch config %v", cfg)
	}
	def, err := Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		States map[string]struct {
			Arguments map[string]any `json:"Arguments"`
		} `json:"States"`
	}
	if err := json.Unmarshal(def, &doc); err != nil {
		t.Fatal(err)
	}
	payload, _ := doc.States["a"].Arguments["Payload"].(map[string]any)
	stepCfg, _ := payload["step"].(map[string]any)
	raw, _ := json.Marshal(stepCfg["agent"])
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("agent in the payload of Task a: %s: %v", raw, err)
	}
	prof, _ := got["profile"].(map[string]any)
	if prof["name"] != "triage" || prof["version"] != s.Agent.Profile.Version {
		t.Errorf("inlined profile %v", prof)
	}
	// The soul holds a Liquid tag: it is encoded so that Step Functions
	// does not evaluate it, as every static string is.
	if soul, _ := prof["soul"].(string); !strings.HasPrefix(soul, "{% '") || !strings.Contains(soul, "You triage alerts.") {
		t.Errorf("inlined soul %q", soul)
	}
	servers, _ := got["servers"].(map[string]any)
	grafana, _ := servers["grafana"].(map[string]any)
	if headers, _ := grafana["headers"].(map[string]any); headers["Authorization"] != "Bearer ${GRAFANA_TOKEN}" {
		t.Errorf("inlined server %v: the secret must stay a reference", grafana)
	}
}

// TestAgentPayloadBudget: the inlined agent counts toward the Task's
// payload budget.
func TestAgentPayloadBudget(t *testing.T) {
	soul := strings.Repeat(`"`, agent.MaxSoulBytes-1) // each quote is two bytes of JSON
	p := agentProject(t, agentConfig, map[string]string{
		"agents/big/agent.yaml": "name: big\nmodel: anthropic/x\n",
		"agents/big/soul.md":    soul,
	})
	prompt := strings.Repeat("x", 64<<10)
	step := func(cfg string) string {
		return "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: " + cfg + "\n    prompt_template: " + prompt + "\n"
	}
	if _, sm, ds := BuildIn("p.yaml", []byte(step("{model: m}")), Env{Project: p}); sm == nil {
		t.Fatalf("without the agent: %s", ds)
	}
	_, sm, ds := BuildIn("p.yaml", []byte(step("{agent: big}")), Env{Project: p})
	if sm != nil || !strings.Contains(ds.String(), `p.yaml:3:11: step "a": its configuration and templates take `) {
		t.Errorf("with the agent: %s", ds)
	}
}

// TestProjectDiagnosticsAreThePipelines: a problem of the project is an
// error of every pipeline in it.
func TestProjectDiagnosticsAreThePipelines(t *testing.T) {
	p := agentProject(t, "mcp_servers:\n  grafana: {url: 'https://g/mcp'}\ntool_policy: {default: never}\n", nil)
	_, sm, ds := BuildIn("p.yaml", []byte("name: p\nsteps:\n  - {name: a, executor: gateway, executor_config: {model: m, base_url: 'http://x'}}\n"), Env{Project: p})
	want := []string{
		filepath.Join(filepath.Dir(p.Path), "agents/local/agent.yaml") + `:3:9: tools: unknown MCP server "files" (declared: grafana)`,
		p.Path + `:3:24: tool_policy.default: want allow or deny, got "never"`,
	}
	got := strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
	if sm != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", ds, strings.Join(want, "\n"))
	}
}

// TestExecutorDefaults: executors.openai places gateway steps that set no
// endpoint, and only those.
func TestExecutorDefaults(t *testing.T) {
	p := agentProject(t, agentConfig, nil)
	p.Executors.OpenAI.APIKey = ""
	p.Executors.OpenAI.BaseURL = "https://gw/v1"
	src := `name: p
steps:
  - {name: a, executor: gateway, executor_config: {model: m}}
  - {name: b, executor: gateway, executor_config: {model: m, base_url: 'http://own/v1', api_key: ''}}
  - {name: c, executor: anthropic, executor_config: {model: m, api_key: '${K}'}}
`
	f, sm, ds := BuildIn("p.yaml", []byte(src), Env{Project: p})
	if sm == nil {
		t.Fatalf("diagnostics: %s", ds)
	}
	got := func(i int) map[string]any { return f.Pipeline.Steps[i].(*pipeline.Step).ExecutorConfig }
	if !reflect.DeepEqual(got(0), map[string]any{"model": "m", "base_url": "https://gw/v1"}) {
		t.Errorf("a: %v", got(0))
	}
	if !reflect.DeepEqual(got(1), map[string]any{"model": "m", "base_url": "http://own/v1", "api_key": ""}) {
		t.Errorf("b: %v", got(1))
	}
	if _, set := got(2)["base_url"]; set {
		t.Errorf("c: %v", got(2))
	}
}

// TestSeedExampleInRepositoryProject: the design document's gateway agent
// example (testdata/seed, copied unchanged) compiles in the repository's
// project, where agents/sre-triage exists.
func TestSeedExampleInRepositoryProject(t *testing.T) {
	f, sm, ds, err := BuildFileIn("testdata/seed/failure-webhook-example.yaml", Env{Project: repositoryProject(t)})
	if err != nil || sm == nil || ds.HasErrors() {
		t.Fatalf("%v\n%s", err, ds)
	}
	if a := f.Pipeline.Steps[1].(*pipeline.Step).Agent; a == nil || a.Profile.Name != "sre-triage" {
		t.Errorf("agent %+v", a)
	}
}
