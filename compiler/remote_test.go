package compiler

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

const remoteConfig = agentConfig + `  gateway: {url: "wss://agents.example/rpc", token: "${AGENT_GATEWAY_TOKEN}"}
  openclaw: {url: "ws://openclaw.internal:18789", identity: oc-identity}
`

func diagnostics(ds Diagnostics) []string {
	if len(ds) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
}

// TestRemoteAgentSteps: what the compiler says of openclaw steps and of
// gateway steps whose agent runs on the remote gateway, each problem at
// the executor_config key it is about.
func TestRemoteAgentSteps(t *testing.T) {
	remote := agentProject(t, remoteConfig, nil)
	local := agentProject(t, agentConfig, nil)
	step := func(exec, cfg string) string {
		return "name: p\nsteps:\n  - name: a\n    executor: " + exec + "\n    executor_config: " + cfg + "\n"
	}
	long := "agent:sre:" + strings.Repeat("k", project.MaxSessionKeyTemplate-len("agent:sre:"))
	tests := []struct {
		name string
		p    *project.Project
		src  string
		want []string
	}{
		{"openclaw", remote, step("openclaw", "{agent: sre, model: anthropic/claude-opus-4-7, thinking_level: low}"), nil},
		{"openclaw session key with the agent", remote, step("openclaw", `{agent: sre, session_key: "agent:{{ agent }}:ticket:{{ trigger.fingerprint }}"}`), nil},
		{"openclaw session key of another agent", remote, step("openclaw", `{agent: sre, session_key: "agent:ops:{{pipeline_run_id}}"}`), []string{
			`p.yaml:5:48: step "a": executor_config.session_key: "agent:ops:{{pipeline_run_id}}" must start with "agent:sre:": the gateway refuses a session key of another agent`}},
		{"openclaw session key templated prefix", remote, step("openclaw", `{agent: sre, session_key: "{{vars.k}}:x"}`), []string{
			`p.yaml:5:48: step "a": executor_config.session_key: "{{vars.k}}:x" must start with "agent:sre:": the gateway refuses a session key of another agent`}},
		{"openclaw session key at its bound", remote, step("openclaw", `{agent: sre, session_key: "`+long+`"}`), nil},
		{"openclaw session key past its bound", remote, step("openclaw", `{agent: sre, session_key: "`+long+`k"}`), []string{
			`p.yaml:5:48: step "a": executor_config.session_key: 1001 characters, more than 1000`}},
		{"openclaw thinking level", remote, step("openclaw", "{agent: sre, thinking_level: hihg}"), []string{
			`p.yaml:5:51: step "a": executor_config.thinking_level: "hihg" is not a thinking level: want one of off, minimal, low, medium, high, xhigh`}},
		{"openclaw model is written out", remote, step("openclaw", `{agent: sre, model: "{{vars.m}}"}`), []string{
			`p.yaml:5:42: step "a": executor_config.model: "{{vars.m}}" is a template: a model is written out`}},
		{"openclaw needs an agent name", remote, step("openclaw", `{agent: "sre triage"}`), []string{
			`p.yaml:5:30: step "a": executor_config.agent: "sre triage" is not an agent name (letters, digits, _ and -, at most 80, starting with a letter or digit)`}},
		{"openclaw ignores other keys", remote, step("openclaw", "{agent: sre, base_url: 'http://x'}"), []string{
			`p.yaml:5:45: warning: step "a": executor_config.base_url: ignored: agent "sre" runs on the OpenClaw gateway, whose own profile decides it`}},
		{"openclaw not configured, warned once", local, "name: p\nsteps:\n  - {name: a, executor: openclaw, executor_config: {agent: x}}\n  - {name: b, executor: openclaw, executor_config: {agent: y}}\n", []string{
			`p.yaml:3:25: warning: step "a": executor openclaw is not configured: set executors.openclaw.url in stepline.yaml (the OpenClaw gateway); until then its steps fail with a ConfigError`}},
		{"openclaw cannot verify", remote, "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {model: m}\n    verifier: {executor: openclaw, executor_config: {model: m}}\n", []string{
			`p.yaml:6:26: step "a" verifier: executor "openclaw" runs an agent, and a verifier is one model call; give the agent's judgement its own step`}},
		{"a local profile wins over the remote gateway", remote, step("gateway", "{agent: triage}"), nil},
		{"another agent runs on the remote gateway", remote, step("gateway", "{agent: sre-investigator, trace_max_chars: 1}"), nil},
		{"trace_max_chars at its top", remote, step("gateway", "{agent: sre-investigator, trace_max_chars: 1000000}"), nil},
		{"trace_max_chars below its range", remote, step("gateway", "{agent: sre-investigator, trace_max_chars: 0}"), []string{
			`p.yaml:5:65: step "a": executor_config.trace_max_chars: want a whole number in 1..1000000, got 0`}},
		{"trace_max_chars above its range", remote, step("gateway", "{agent: sre-investigator, trace_max_chars: 1000001}"), []string{
			`p.yaml:5:65: step "a": executor_config.trace_max_chars: want a whole number in 1..1000000, got 1000001`}},
		{"the remote gateway ignores transport keys", remote, step("gateway", "{agent: sre-investigator, base_url: 'http://x'}"), []string{
			`p.yaml:5:58: warning: step "a": executor_config.base_url: ignored: agent "sre-investigator" runs on the remote agent gateway, whose own profile decides it`}},
		{"no remote gateway: the agent is unknown", local, step("gateway", "{agent: sre-investigator}"), []string{
			`p.yaml:5:30: step "a": executor_config.agent: unknown agent "sre-investigator" (agents in ` + local.Agents + `: judge, local, triage)`}},
		{"a remote agent at the invocation's 900 s", remote, step("gateway", "{agent: sre-investigator}") + "    timeout_seconds: 900\n", nil},
		{"a remote agent past the invocation's 900 s", remote, step("gateway", "{agent: sre-investigator}") + "    timeout_seconds: 901\n", []string{
			`p.yaml:6:22: step "a": timeout_seconds 901 is over 900: agent "sre-investigator" runs on a remote runtime, in one call from one Lambda invocation, which stops at 900 s`}},
		{"a local agent past the invocation's 900 s", remote, step("gateway", "{agent: triage}") + "    timeout_seconds: 901\n", nil},
		{"the remote gateway serves gateway steps only", remote, step("anthropic", "{agent: sre-investigator}"), []string{
			`p.yaml:5:30: step "a": executor_config.agent: unknown agent "sre-investigator" (agents in ` + remote.Agents + `: judge, local, triage)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ds := BuildIn("p.yaml", []byte(tt.src), Env{Project: tt.p})
			if got := diagnostics(ds); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestRemoteAgentResolved: a remote agent step carries where it runs and
// the session key it sends, for the step function to render.
func TestRemoteAgentResolved(t *testing.T) {
	p := agentProject(t, remoteConfig, nil)
	src := `name: p
steps:
  - {name: a, executor: openclaw, executor_config: {agent: sre, thinking_level: high}}
  - {name: b, executor: gateway, executor_config: {agent: sre-investigator, session_key: "agent:{{agent}}:{{pipeline_run_id}}"}}
  - {name: c, executor: gateway, executor_config: {agent: triage}}
`
	f, sm, ds := BuildIn("p.yaml", []byte(src), Env{Project: p})
	if sm == nil {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	a, b, c := f.Pipeline.Steps[0].(*pipeline.Step), f.Pipeline.Steps[1].(*pipeline.Step), f.Pipeline.Steps[2].(*pipeline.Step)
	wantA := &agent.Resolved{Profile: agent.Profile{Name: "sre"}, ThinkingLevel: "high", Remote: &agent.Remote{
		Runtime: agent.RuntimeOpenClaw, URL: "ws://openclaw.internal:18789", Identity: p.Dir + "/oc-identity",
		Device: "${OPENCLAW_DEVICE}", DeviceAuth: "${OPENCLAW_DEVICE_AUTH}"}}
	if !reflect.DeepEqual(a.Agent, wantA) {
		t.Errorf("openclaw step's agent\n got %+v %+v\nwant %+v %+v", a.Agent, a.Agent.Remote, wantA, wantA.Remote)
	}
	if k := a.ExecutorConfig["session_key"]; k != "agent:sre:pipeline:{{pipeline_run_id}}:{{current_step}}" {
		t.Errorf("default session key %q", k)
	}
	if r := b.Agent.Remote; r == nil || r.Runtime != agent.RuntimeGateway || r.URL != "wss://agents.example/rpc" || r.Token != "${AGENT_GATEWAY_TOKEN}" {
		t.Errorf("remote gateway step's agent %+v", b.Agent)
	}
	if k := b.ExecutorConfig["session_key"]; k != "agent:sre-investigator:{{pipeline_run_id}}" {
		t.Errorf("session key %q", k)
	}
	if c.Agent == nil || c.Agent.Remote != nil || c.Agent.Profile.Soul == "" {
		t.Errorf("the local profile should run in-process: %+v", c.Agent)
	}
	if _, set := c.ExecutorConfig["session_key"]; set {
		t.Errorf("an in-process step got a session key")
	}
}

// TestWhenExampleWithOpenClaw: the design document's when: example (a
// verbatim copy) validates unchanged once executors.openclaw is
// configured.
func TestWhenExampleWithOpenClaw(t *testing.T) {
	src, err := os.ReadFile("testdata/seed/when-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := agentProject(t, remoteConfig, nil)
	f, sm, ds := BuildIn("when-example.yaml", src, Env{Project: p})
	if sm == nil || len(ds) != 0 {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	for _, n := range f.Pipeline.Steps[:2] {
		if s := n.(*pipeline.Step); s.Agent == nil || s.Agent.Remote == nil || s.Agent.Remote.Runtime != agent.RuntimeOpenClaw {
			t.Errorf("step %q: agent %+v", s.Name, s.Agent)
		}
	}
}
