package project

import (
	"reflect"
	"testing"

	"github.com/stepline/stepline/shared/agent"
)

func testProject(t *testing.T) *Project {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"stepline.yaml": `providers:
  anthropic: {api_key: "${CLAUDE_KEY}"}
  bedrock: {region: eu-west-1}
mcp_servers:
  grafana: {url: "https://g/mcp"}
  runbooks: {url: "https://r/mcp"}
  jira: {url: "https://j/mcp"}
tool_policy:
  default: deny
  rules:
    - allow: {server: grafana}
    - allow: {server: jira, agent: "other-*"}
    - deny: {tool: "drop_*"}
      reason: no drops
    - allow: {server: runbooks, agent: "sre-*"}
executors:
  openai: {base_url: "https://gw.example/v1", api_key: "${GW_KEY}"}
`,
		"agents/sre-triage/agent.yaml": "name: sre-triage\nmodel: anthropic/claude-sonnet-4-6\nmodel_fallbacks: [openai/gpt-4o]\nthinking_level: low\ntools: [grafana, runbooks]\n",
		"agents/sre-triage/soul.md":    "triage",
		"agents/open/agent.yaml":       "name: open\nmodel: some-model\ntemperature: 1.5\n",
		"agents/open/soul.md":          "",
		"agents/cool/agent.yaml":       "name: cool\nmodel: plain-model\n",
		"agents/cool/soul.md":          "",
		"agents/broken/agent.yaml":     "name: broken\nmodel: nope/x\n",
		"agents/broken/soul.md":        "",
	})
	p, err := Load(root + "/stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestResolve: an agent step's executor_config against its project: the
// resolved endpoints, overrides, servers and policy, and each issue
// exactly.
func TestResolve(t *testing.T) {
	p := testProject(t)
	claude := agent.Endpoint{Provider: "anthropic", API: agent.APIAnthropic, Model: "claude-sonnet-4-6", APIKey: "${CLAUDE_KEY}"}
	gpt := agent.Endpoint{Provider: "openai", API: agent.APIGateway, Model: "gpt-4o", BaseURL: "https://api.openai.com/v1", APIKey: "${OPENAI_API_KEY}"}
	tests := []struct {
		name     string
		executor string
		cfg      map[string]any
		models   []agent.Endpoint // nil: not checked
		thinking string
		issues   []Issue
		ok       bool
	}{
		{"profile models", "gateway", map[string]any{"agent": "sre-triage"}, []agent.Endpoint{claude, gpt}, "low", nil, true},
		{"model and thinking overrides", "bedrock", map[string]any{"agent": "sre-triage", "model": "bedrock/anthropic.claude-3", "thinking_level": "high", "session_key": "agent:sre-triage:x"},
			[]agent.Endpoint{{Provider: "bedrock", API: agent.APIBedrock, Model: "anthropic.claude-3", Region: "eu-west-1"}, gpt}, "high", nil, true},
		{"open model on gateway takes executors.openai", "gateway", map[string]any{"agent": "cool"},
			[]agent.Endpoint{{Provider: "gateway", API: agent.APIGateway, Model: "plain-model", BaseURL: "https://gw.example/v1", APIKey: "${GW_KEY}"}}, "", nil, true},
		{"open model on gateway, step's endpoint", "gateway", map[string]any{"agent": "cool", "base_url": "http://localhost:11434/v1", "api_key": ""},
			[]agent.Endpoint{{Provider: "gateway", API: agent.APIGateway, Model: "plain-model", BaseURL: "http://localhost:11434/v1"}}, "", nil, true},
		{"open model on anthropic takes providers.anthropic", "anthropic", map[string]any{"agent": "cool"},
			[]agent.Endpoint{{Provider: "anthropic", API: agent.APIAnthropic, Model: "plain-model", APIKey: "${CLAUDE_KEY}"}}, "", nil, true},
		{"open model on bedrock takes its region", "bedrock", map[string]any{"agent": "cool"},
			[]agent.Endpoint{{Provider: "bedrock", API: agent.APIBedrock, Model: "plain-model", Region: "eu-west-1"}}, "", nil, true},
		{"open model with a temperature gateway takes", "gateway", map[string]any{"agent": "open"}, nil, "", nil, true},
		{"open model with a temperature anthropic does not take", "anthropic", map[string]any{"agent": "open"}, nil, "",
			[]Issue{{Key: "agent", Msg: `agent "open": temperature 1.5 is above 1, the most the anthropic API takes (model "some-model")`}}, false},
		{"unknown agent", "gateway", map[string]any{"agent": "sre-triag"}, nil, "",
			[]Issue{{Key: "agent", Msg: `unknown agent "sre-triag" (did you mean "sre-triage"?) (agents in ` + p.Agents + `: broken, cool, open, sre-triage)`}}, false},
		{"agent not a string", "gateway", map[string]any{"agent": 5}, nil, "",
			[]Issue{{Key: "agent", Msg: "want a string, got a number"}}, false},
		{"agent empty", "gateway", map[string]any{"agent": ""}, nil, "",
			[]Issue{{Key: "agent", Msg: "must name an agent"}}, false},
		{"executor that runs no agent", "webhook", map[string]any{"agent": "cool"}, nil, "",
			[]Issue{{Key: "agent", Msg: `executor "webhook" cannot run an agent; use gateway, anthropic, bedrock`}}, false},
		{"broken profile", "gateway", map[string]any{"agent": "broken"}, nil, "",
			[]Issue{{Key: "agent", Msg: `agent "broken" does not load: see the errors in ` + p.Profiles["broken"].Path}}, false},
		{"model override with unknown provider", "gateway", map[string]any{"agent": "cool", "model": "antropic/x"}, nil, "",
			[]Issue{{Key: "model", Msg: `model "antropic/x": unknown provider "antropic" (known: anthropic, bedrock, ollama, openai, openrouter) (did you mean "anthropic"?)`}}, false},
		{"model override as a template", "gateway", map[string]any{"agent": "cool", "model": "{{ vars.model }}"}, nil, "",
			[]Issue{{Key: "model", Msg: `"{{ vars.model }}" is a template: a model is written out`}}, false},
		{"bad thinking override", "gateway", map[string]any{"agent": "cool", "thinking_level": "max"}, nil, "",
			[]Issue{{Key: "thinking_level", Msg: `"max" is not a thinking level: want one of off, minimal, low, medium, high, xhigh`}}, false},
		{"templated base_url", "gateway", map[string]any{"agent": "cool", "base_url": "{{ vars.url }}"}, nil, "",
			[]Issue{{Key: "base_url", Msg: "a template cannot place an agent's models: write it out (a ${NAME} reference is allowed)"}}, false},
		{"base_url not a url", "anthropic", map[string]any{"agent": "cool", "base_url": "api.anthropic.com"}, nil, "",
			[]Issue{{Key: "base_url", Msg: "want an absolute http or https URL"}}, false},
		{"transport keys ignored when every model names its provider", "gateway", map[string]any{"agent": "sre-triage", "base_url": "http://x", "api_key": "${K}"}, []agent.Endpoint{claude, gpt}, "low",
			[]Issue{
				{Key: "api_key", Msg: `ignored: every model of agent "sre-triage" names its provider, so the gateway executor carries none of them`, Warning: true},
				{Key: "base_url", Msg: `ignored: every model of agent "sre-triage" names its provider, so the gateway executor carries none of them`, Warning: true},
			}, true},
		{"single-call keys ignored", "anthropic", map[string]any{"agent": "cool", "max_tokens": 5, "system": "x"}, nil, "",
			[]Issue{
				{Key: "max_tokens", Msg: `ignored on an agent step: agent "cool"'s profile decides it`, Warning: true},
				{Key: "system", Msg: `ignored on an agent step: agent "cool"'s profile decides it`, Warning: true},
			}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, issues := p.Resolve(tt.executor, tt.cfg)
			if !reflect.DeepEqual(issues, tt.issues) {
				t.Errorf("issues\n got %+v\nwant %+v", issues, tt.issues)
			}
			if (r != nil) != tt.ok {
				t.Fatalf("resolved %v, want %v", r != nil, tt.ok)
			}
			if r == nil {
				return
			}
			if tt.models != nil && !reflect.DeepEqual(r.Models, tt.models) {
				t.Errorf("models\n got %+v\nwant %+v", r.Models, tt.models)
			}
			if r.ThinkingLevel != tt.thinking {
				t.Errorf("thinking level %q, want %q", r.ThinkingLevel, tt.thinking)
			}
		})
	}
}

// TestResolveServersAndPolicy: a resolved agent carries the servers its
// tools name and the rules that can decide its calls, in order.
func TestResolveServersAndPolicy(t *testing.T) {
	p := testProject(t)
	r, issues := p.Resolve("gateway", map[string]any{"agent": "sre-triage"})
	if r == nil {
		t.Fatalf("issues: %v", issues)
	}
	if want := map[string]agent.Server{"grafana": p.Servers["grafana"], "runbooks": p.Servers["runbooks"]}; !reflect.DeepEqual(r.Servers, want) {
		t.Errorf("servers %+v, want %+v", r.Servers, want)
	}
	want := agent.Policy{Default: agent.Deny, Rules: []agent.Rule{
		{Effect: agent.Allow, Server: "grafana"},
		{Effect: agent.Deny, Tool: "drop_*", Reason: "no drops"},
		{Effect: agent.Allow, Server: "runbooks", Agent: "sre-*"},
	}}
	if !reflect.DeepEqual(r.Policy, want) {
		t.Errorf("policy\n got %+v\nwant %+v", r.Policy, want)
	}
	if r.Profile.Name != "sre-triage" || r.Profile.Soul != "triage" || r.Profile.Version == "" {
		t.Errorf("profile %+v", r.Profile)
	}
	// Pruning keeps every decision: the agent's calls are decided alike.
	for _, call := range []struct{ server, tool string }{{"grafana", "q"}, {"runbooks", "drop_all"}, {"runbooks", "search"}, {"jira", "get"}} {
		a1, r1 := p.Policy.Decide("sre-triage", call.server, call.tool, nil)
		a2, r2 := r.Policy.Decide("sre-triage", call.server, call.tool, nil)
		if call.server != "jira" && (a1 != a2 || r1 != r2) {
			t.Errorf("%v: project decides %v %q, resolved %v %q", call, a1, r1, a2, r2)
		}
	}
	r, _ = p.Resolve("gateway", map[string]any{"agent": "cool"})
	if r == nil || r.Servers != nil || len(r.Policy.Rules) != 1 {
		t.Errorf("agent without tools: %+v", r)
	}
}

func TestStdioServers(t *testing.T) {
	r := &agent.Resolved{Servers: map[string]agent.Server{
		"files": {Name: "files", Command: "npx"},
		"git":   {Name: "git", Command: "uvx"},
		"http":  {Name: "http", URL: "https://h"},
	}}
	if got := StdioServers(r); !reflect.DeepEqual(got, []string{"files", "git"}) {
		t.Errorf("StdioServers = %v", got)
	}
	if got := StdioServers(nil); got != nil {
		t.Errorf("StdioServers(nil) = %v", got)
	}
}
