package agent

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitModel(t *testing.T) {
	tests := []struct {
		name, in, provider, model string
		open                      bool
	}{
		{"provider and model", "anthropic/claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6", false},
		{"model with slashes", "openrouter/nvidia/nemotron:free", "openrouter", "nvidia/nemotron:free", false},
		{"no provider", "gpt-4o-mini", "", "gpt-4o-mini", true},
		{"bedrock arn", "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3", "", "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3", true},
		{"uppercase prefix is no provider", "Meta/Llama", "", "Meta/Llama", true},
		{"unknown provider still splits", "meta-llama/Llama-3", "meta-llama", "Llama-3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, m, open := SplitModel(tt.in)
			if p != tt.provider || m != tt.model || open != tt.open {
				t.Errorf("SplitModel(%q) = %q, %q, %v", tt.in, p, m, open)
			}
		})
	}
}

func TestProvidersResolve(t *testing.T) {
	ps := BuiltinProviders()
	ps["vllm"] = Provider{API: APIGateway, BaseURL: "http://gpu:8000/v1", APIKey: "${VLLM_KEY}"}
	transport := Endpoint{Provider: "gateway", API: APIGateway, BaseURL: "https://gw.example/v1"}
	tests := []struct {
		name, model string
		want        Endpoint
		err         string
	}{
		{"anthropic", "anthropic/claude-sonnet-4-6", Endpoint{Provider: "anthropic", API: APIAnthropic, Model: "claude-sonnet-4-6", APIKey: "${ANTHROPIC_API_KEY}"}, ""},
		{"bedrock", "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", Endpoint{Provider: "bedrock", API: APIBedrock, Model: "anthropic.claude-3-5-sonnet-20240620-v1:0"}, ""},
		{"openrouter", "openrouter/nvidia/nemotron:free", Endpoint{Provider: "openrouter", API: APIGateway, Model: "nvidia/nemotron:free", BaseURL: "https://openrouter.ai/api/v1", APIKey: "${OPENROUTER_API_KEY}"}, ""},
		{"ollama", "ollama/llama3", Endpoint{Provider: "ollama", API: APIGateway, Model: "llama3", BaseURL: "http://localhost:11434/v1"}, ""},
		{"custom", "vllm/qwen", Endpoint{Provider: "vllm", API: APIGateway, Model: "qwen", BaseURL: "http://gpu:8000/v1", APIKey: "${VLLM_KEY}"}, ""},
		{"open goes through the transport", "gpt-4o-mini", Endpoint{Provider: "gateway", API: APIGateway, Model: "gpt-4o-mini", BaseURL: "https://gw.example/v1"}, ""},
		{"unknown provider", "meta-llama/Llama-3", Endpoint{}, `model "meta-llama/Llama-3": unknown provider "meta-llama" (known: anthropic, bedrock, ollama, openai, openrouter, vllm)`},
		{"typo", "antropic/claude", Endpoint{}, `model "antropic/claude": unknown provider "antropic" (known: anthropic, bedrock, ollama, openai, openrouter, vllm) (did you mean "anthropic"?)`},
		{"reference provider", "yolo/m", Endpoint{}, `model "yolo/m": unknown provider "yolo" (known: anthropic, bedrock, ollama, openai, openrouter, vllm): declare it under providers: in stepline.yaml with its base_url (an OpenAI-compatible endpoint)`},
		{"no model", "openai/", Endpoint{}, `model "openai/" names no model after "openai/"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ps.Resolve(tt.model, transport)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tt.err || got != tt.want {
				t.Errorf("Resolve(%q) = %+v, %q\nwant %+v, %q", tt.model, got, msg, tt.want, tt.err)
			}
		})
	}
}

// TestCheckProfile: what a profile's project decides, exactly and at its
// position.
func TestCheckProfile(t *testing.T) {
	servers := map[string]Server{"grafana": {Name: "grafana", URL: "https://g/mcp"}, "runbooks": {Name: "runbooks", URL: "https://r/mcp"}}
	allowGrafana := Policy{Default: Deny, Rules: []Rule{{Effect: Allow, Server: "grafana"}, {Effect: Allow, Server: "runbooks", Tool: "search_*"}}}
	tests := []struct {
		name, src string
		servers   map[string]Server
		policy    Policy
		want      []string
	}{
		{"fine", "name: x\nmodel: anthropic/c\ntools: [grafana]\n", servers, allowGrafana, nil},
		{"open model", "name: x\nmodel: gpt-4o\n", servers, Policy{}, nil},
		{"unknown provider", "name: x\nmodel: antropic/c\nmodel_fallbacks: [openai/gpt-4o, nope/m]\n", servers, Policy{}, []string{
			`agents/x/agent.yaml:2:8: model: model "antropic/c": unknown provider "antropic" (known: anthropic, bedrock, ollama, openai, openrouter) (did you mean "anthropic"?)`,
			`agents/x/agent.yaml:3:34: model_fallbacks[1]: model "nope/m": unknown provider "nope" (known: anthropic, bedrock, ollama, openai, openrouter)`}},
		{"temperature at anthropic's top", "name: x\nmodel: anthropic/c\ntemperature: 1\n", servers, Policy{}, nil},
		{"temperature above anthropic's top", "name: x\nmodel: anthropic/c\ntemperature: 1.2\n", servers, Policy{}, []string{
			`agents/x/agent.yaml:3:14: temperature: 1.2 is above 1, the most the anthropic API takes (model "anthropic/c")`}},
		{"temperature above bedrock's top, on a fallback", "name: x\nmodel: openai/gpt\nmodel_fallbacks: [bedrock/m]\ntemperature: 1.5\n", servers, Policy{}, []string{
			`agents/x/agent.yaml:4:14: temperature: 1.5 is above 1, the most the bedrock API takes (model_fallbacks[0] "bedrock/m")`}},
		{"temperature fits openai", "name: x\nmodel: openai/gpt\ntemperature: 2\n", servers, Policy{}, nil},
		{"unknown server", "name: x\nmodel: a\ntools: [grafna]\n", servers, Policy{}, []string{
			`agents/x/agent.yaml:3:9: tools: unknown MCP server "grafna" (did you mean "grafana"?) (declared: grafana, runbooks)`}},
		{"no servers declared", "name: x\nmodel: a\ntools: [grafana]\n", nil, Policy{}, []string{
			`agents/x/agent.yaml:3:9: tools: unknown MCP server "grafana": stepline.yaml declares no mcp_servers`}},
		{"server never allowed", "name: x\nmodel: a\ntools: [grafana, runbooks]\n", servers, Policy{Default: Deny, Rules: []Rule{{Effect: Allow, Server: "grafana"}}}, []string{
			`agents/x/agent.yaml:3:18: warning: tools: the tool policy never allows agent "x" a call to server "runbooks": every call it makes there is denied`}},
		{"scoped tool never allowed", "name: x\nmodel: a\ntools:\n  - runbooks: [search_docs, get_page, 'list_*']\n", servers, allowGrafana, []string{
			`agents/x/agent.yaml:4:29: warning: tools: the tool policy never allows agent "x" a call to runbooks.get_page`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ds := parseX(t, tt.src)
			if len(ds) != 0 {
				t.Fatalf("parse: %s", ds)
			}
			ds = CheckProfile(l, BuiltinProviders(), tt.servers, tt.policy)
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

func TestProfileGrants(t *testing.T) {
	p := Profile{Tools: []ToolGrant{{Server: "fs"}, {Server: "grafana", Tools: []string{"query_*", "search_dashboards"}}}}
	tests := []struct {
		server, tool string
		want         bool
	}{
		{"fs", "read_file", true},
		{"grafana", "query_loki", true},
		{"grafana", "search_dashboards", true},
		{"grafana", "delete_dashboard", false},
		{"jira", "get_issue", false},
	}
	for _, tt := range tests {
		if got := p.Grants(tt.server, tt.tool); got != tt.want {
			t.Errorf("Grants(%q, %q) = %v, want %v", tt.server, tt.tool, got, tt.want)
		}
	}
}
