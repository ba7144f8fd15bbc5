package project

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
)

func lines(ds agent.Diagnostics) []string {
	if len(ds) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
}

// TestParseErrors: every problem of stepline.yaml, with its exact message
// and position.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"reference gateway key", "agents_dir: x\n", []string{
			`stepline.yaml:1:1: unknown field "agents_dir": it belongs to the reference gateway's config.yaml; the agents directory is "agents"`}},
		{"unknown key", "pipeline: p\n", []string{
			`stepline.yaml:1:1: unknown field "pipeline" (did you mean "pipelines"?) (fields: pipelines, agents, steps, providers, mcp_servers, tool_policy, executors, notifications, human_approval)`}},
		{"not a mapping", "[1]\n", []string{`stepline.yaml:1:1: a project file: want a mapping, got a list`}},
		{"empty directory", "steps: ''\n", []string{`stepline.yaml:1:8: steps: must not be empty`}},
		{"directory not a string", "agents: [a]\n", []string{`stepline.yaml:1:9: agents: want a string, got a list`}},
		{"not utf-8", "agents: \xff\n", []string{`stepline.yaml:1:1: the file is not valid UTF-8`}},
		{"duplicate key", "agents: a\nagents: b\n", []string{`stepline.yaml:2:1: a project file: key "agents" is written twice (first at 1:1)`}},

		{"reserved provider name", "providers:\n  gateway: {base_url: 'http://x'}\n", []string{
			`stepline.yaml:2:3: providers.gateway: the provider name "gateway" is reserved for models a gateway step carries without a provider`}},
		{"bad provider name", "providers:\n  Big: {base_url: 'http://x'}\n", []string{
			`stepline.yaml:2:3: providers.Big: "Big" is not a provider name (lowercase letters, digits, _ and -, at most 40, starting with a letter)`}},
		{"custom provider without base_url", "providers:\n  vllm: {api_key: '${K}'}\n", []string{
			`stepline.yaml:2:3: providers.vllm: base_url: required: a provider Stepline does not build in is an OpenAI-compatible endpoint at its base_url (built in: anthropic, bedrock, ollama, openai, openrouter)`}},
		{"literal api key", "providers:\n  anthropic: {api_key: sk-123}\n", []string{
			`stepline.yaml:2:24: providers.anthropic.api_key: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"api key with text around the reference", "providers:\n  openai: {api_key: 'Bearer ${K}'}\n", []string{
			`stepline.yaml:2:21: providers.openai.api_key: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"region on anthropic", "providers:\n  anthropic: {region: eu-west-1}\n", []string{
			`stepline.yaml:2:15: providers.anthropic: region does not apply to provider "anthropic"`}},
		{"base_url on bedrock", "providers:\n  bedrock: {base_url: 'http://x'}\n", []string{
			`stepline.yaml:2:13: providers.bedrock: base_url does not apply to provider "bedrock"`}},
		{"provider url scheme", "providers:\n  openai: {base_url: 'ftp://x'}\n", []string{
			`stepline.yaml:2:22: providers.openai.base_url: want an absolute http or https URL, got "ftp://x"`}},
		{"provider unknown key", "providers:\n  openai: {org: x}\n", []string{
			`stepline.yaml:2:12: providers.openai: unknown field "org" (fields: base_url, api_key)`}},

		{"server url and command", "mcp_servers:\n  a: {url: 'http://a', command: x}\n", []string{
			`stepline.yaml:2:24: mcp_servers.a: give url (streamable HTTP) or command (stdio), not both`}},
		{"server with neither", "mcp_servers:\n  b: {}\n", []string{
			`stepline.yaml:2:3: mcp_servers.b: needs url (streamable HTTP, everywhere) or command (stdio, local runs only)`}},
		{"env on an http server", "mcp_servers:\n  c: {url: 'http://c', env: {A: b}}\n", []string{
			`stepline.yaml:2:7: mcp_servers.c: args and env are for a stdio server (command); an HTTP server takes headers`}},
		{"headers on a stdio server", "mcp_servers:\n  d: {command: x, headers: {A: b}}\n", []string{
			`stepline.yaml:2:7: mcp_servers.d: headers are for an HTTP server (url); a stdio server takes env`}},
		{"server url not a url", "mcp_servers:\n  e: {url: not-a-url}\n", []string{
			`stepline.yaml:2:12: mcp_servers.e.url: want an absolute http or https URL, got "not-a-url"`}},
		{"literal credential header", "mcp_servers:\n  f:\n    url: 'http://f'\n    headers: {Authorization: Bearer abc}\n", []string{
			`stepline.yaml:4:30: warning: mcp_servers.f.headers.Authorization: a credential written out would be compiled into every state machine that uses the server: write it as a ${NAME} secret reference`}},
		{"bad header name", "mcp_servers:\n  f:\n    url: 'http://f'\n    headers: {'bad name': x}\n", []string{
			`stepline.yaml:4:27: mcp_servers.f.headers: "bad name" is not a valid header name`}},
		{"unclosed placeholder", "mcp_servers:\n  f:\n    url: 'http://f'\n    headers: {X-Org: '${ORG'}\n", []string{
			`stepline.yaml:4:22: mcp_servers.f.headers.X-Org: placeholder "${ORG" is not closed with }`}},
		{"bad placeholder in env", "mcp_servers:\n  g:\n    command: npx\n    env: {TOKEN: '${A-B}'}\n", []string{
			`stepline.yaml:4:18: mcp_servers.g.env.TOKEN: placeholder "${A-B}": a secret name holds letters, digits and _`}},
		{"args not strings", "mcp_servers:\n  g: {command: npx, args: [a, 1]}\n", []string{
			`stepline.yaml:2:31: mcp_servers.g.args[1]: want a string, got a number`}},
		{"bad server name", "mcp_servers:\n  'h h': {url: 'http://h'}\n", []string{
			`stepline.yaml:2:3: mcp_servers.h h: "h h" is not an MCP server name (letters, digits, _ and -, at most 40, starting with a letter or digit)`}},
		{"server unknown key", "mcp_servers:\n  i: {url: 'http://i', timeout: 5}\n", []string{
			`stepline.yaml:2:24: mcp_servers.i: unknown field "timeout" (fields: url, headers, command, args, env)`}},

		{"policy default", "tool_policy: {default: maybe}\n", []string{`stepline.yaml:1:24: tool_policy.default: want allow or deny, got "maybe"`}},
		{"rule with two actions", "tool_policy:\n  rules:\n    - {allow: {server: g}, deny: {}}\n", []string{
			`stepline.yaml:3:7: tool_policy.rules[0]: a rule has exactly one of allow or deny, got allow and deny`}},
		{"rule with none", "tool_policy:\n  rules: [{}]\n", []string{`stepline.yaml:2:11: tool_policy.rules[0]: a rule has exactly one of allow or deny, got none`}},
		{"require_approval", "tool_policy:\n  rules: [{require_approval: {tool: x}}]\n", []string{
			`stepline.yaml:2:11: tool_policy.rules[0]: require_approval is not supported: a rule allows or denies`}},
		{"deny without reason", "tool_policy:\n  rules: [{deny: {tool: x}}]\n", []string{
			`stepline.yaml:2:11: tool_policy.rules[0]: a deny rule needs a reason: the model is told it, and the step record keeps it`}},
		{"bad globs and regex", "tool_policy:\n  rules:\n    - allow: {tool: '[x', agent: 'a[z-a]', input_regex: '(?=x)'}\n", []string{
			`stepline.yaml:3:21: tool_policy.rules[0].allow.tool: glob "[x": [ is not closed with ]`,
			`stepline.yaml:3:34: tool_policy.rules[0].allow.agent: glob "a[z-a]": range z-a is backwards`,
			"stepline.yaml:3:57: tool_policy.rules[0].allow.input_regex: not an RE2 regular expression: invalid or unsupported Perl syntax: `(?=`"}},
		{"regex at its length limit", "tool_policy:\n  rules:\n    - allow: {input_regex: '" + strings.Repeat("a", MaxRegexLength) + "'}\n", nil},
		{"regex past its length limit", "tool_policy:\n  rules:\n    - allow: {input_regex: '" + strings.Repeat("a", MaxRegexLength+1) + "'}\n", []string{
			`stepline.yaml:3:28: tool_policy.rules[0].allow.input_regex: 1001 characters, more than 1000`}},
		{"match typo", "tool_policy:\n  rules:\n    - allow: {sever: g}\n", []string{
			`stepline.yaml:3:15: tool_policy.rules[0].allow: unknown field "sever" (did you mean "server"?) (fields: server, tool, agent, input_regex)`}},
		{"rule after a catch-all", "tool_policy:\n  rules:\n    - allow:\n    - deny: {tool: x}\n      reason: r\n", []string{
			`stepline.yaml:4:7: warning: tool_policy.rules[1]: never reached: tool_policy.rules[0] matches every call first`}},
		{"rule for an undeclared server", "mcp_servers: {grafana: {url: 'http://g'}}\ntool_policy:\n  rules:\n    - allow: {server: grafna}\n", []string{
			`stepline.yaml:4:23: warning: tool_policy.rules[0]: no MCP server "grafna" is declared (did you mean "grafana"?): the rule never matches`}},

		{"executor url", "executors:\n  openai: {base_url: x}\n", []string{
			`stepline.yaml:2:22: executors.openai.base_url: want an absolute http or https URL, got "x"`}},
		{"executor literal key", "executors:\n  openai: {api_key: sk-1}\n", []string{
			`stepline.yaml:2:21: executors.openai.api_key: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"gateway token", "executors:\n  gateway: {url: 'wss://gw', token: t}\n", []string{
			`stepline.yaml:2:37: executors.gateway.token: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"unknown executor", "executors:\n  webhook: {}\n", []string{
			`stepline.yaml:2:3: executors: unknown field "webhook" (fields: gateway, openai, openclaw)`}},
		{"unknown executor key", "executors:\n  openclaw: {token: x}\n", []string{
			`stepline.yaml:2:14: executors.openclaw: unknown field "token" (fields: url, identity)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse("stepline.yaml", []byte(tt.src))
			if got := lines(p.Diagnostics); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestParseBounds: the file's size and the counts it may hold, at and past
// each limit.
func TestParseBounds(t *testing.T) {
	servers := func(n int) string {
		var b strings.Builder
		b.WriteString("mcp_servers:\n")
		for i := range n {
			b.WriteString("  s" + strconv.Itoa(i) + ": {url: 'http://s'}\n")
		}
		return b.String()
	}
	rules := func(n int) string {
		return "tool_policy:\n  rules:\n" + strings.Repeat("    - allow: {tool: x}\n", n)
	}
	pad := func(n int) string { return "# " + strings.Repeat("x", n-3) + "\n" }
	tests := []struct {
		name, src string
		want      []string
	}{
		{"file at its limit", pad(MaxFileBytes), nil},
		{"file past its limit", pad(MaxFileBytes + 1), []string{`stepline.yaml:1:1: the file is larger than 1 MiB`}},
		{"servers at their limit", servers(MaxServers), nil},
		{"servers past their limit", servers(MaxServers + 1), []string{`stepline.yaml:2:3: mcp_servers: 101 servers, more than 100`}},
		{"rules at their limit", rules(MaxRules), nil},
		{"rules past their limit", rules(MaxRules + 1), []string{`stepline.yaml:3:5: tool_policy.rules: 1001 rules, more than 1000`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse("stepline.yaml", []byte(tt.src))
			if got := lines(p.Diagnostics); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestParseValues: what a full project file reads as.
func TestParseValues(t *testing.T) {
	src := `pipelines: flows
agents: /srv/agents
providers:
  anthropic: {api_key: "${CLAUDE_KEY}"}
  bedrock: {region: eu-west-1}
  vllm: {base_url: "http://gpu:8000/v1", api_key: "${VLLM_KEY}"}
mcp_servers:
  grafana:
    url: https://grafana-mcp.example.com/mcp
    headers: {Authorization: "Bearer ${GRAFANA_TOKEN}"}
  files:
    command: npx
    args: ["-y", "server-filesystem", "/tmp"]
    env: {ROOT: "${FILES_ROOT}"}
tool_policy:
  default: deny
  rules:
    - deny: {server: grafana, tool: "delete_*"}
      reason: read-only
    - allow: {server: grafana, agent: "sre-*", input_regex: "prod"}
executors:
  openai: {base_url: "https://api.openai.com/v1", api_key: "${OPENAI_API_KEY}"}
  gateway: {url: "wss://gw.example.com/rpc", token: "${GATEWAY_TOKEN}"}
  openclaw: {url: "ws://127.0.0.1:18789", identity: identity/device.json}
`
	p := Parse("proj/stepline.yaml", []byte(src))
	if len(p.Diagnostics) != 0 {
		t.Fatalf("diagnostics:\n%s", p.Diagnostics)
	}
	if p.Pipelines != filepath.Join("proj", "flows") || p.Agents != "/srv/agents" || p.Steps != filepath.Join("proj", "steps") {
		t.Errorf("directories %q %q %q", p.Pipelines, p.Agents, p.Steps)
	}
	wantProviders := agent.BuiltinProviders()
	wantProviders["anthropic"] = agent.Provider{API: agent.APIAnthropic, APIKey: "${CLAUDE_KEY}"}
	wantProviders["bedrock"] = agent.Provider{API: agent.APIBedrock, Region: "eu-west-1"}
	wantProviders["vllm"] = agent.Provider{API: agent.APIGateway, BaseURL: "http://gpu:8000/v1", APIKey: "${VLLM_KEY}"}
	if !reflect.DeepEqual(p.Providers, wantProviders) {
		t.Errorf("providers\n got %+v\nwant %+v", p.Providers, wantProviders)
	}
	wantServers := map[string]agent.Server{
		"grafana": {Name: "grafana", URL: "https://grafana-mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${GRAFANA_TOKEN}"}},
		"files":   {Name: "files", Command: "npx", Args: []string{"-y", "server-filesystem", "/tmp"}, Env: map[string]string{"ROOT": "${FILES_ROOT}"}},
	}
	if !reflect.DeepEqual(p.Servers, wantServers) {
		t.Errorf("servers\n got %+v\nwant %+v", p.Servers, wantServers)
	}
	wantPolicy := agent.Policy{Default: agent.Deny, Rules: []agent.Rule{
		{Effect: agent.Deny, Server: "grafana", Tool: "delete_*", Reason: "read-only"},
		{Effect: agent.Allow, Server: "grafana", Agent: "sre-*", InputRegex: "prod"},
	}}
	if !reflect.DeepEqual(p.Policy, wantPolicy) {
		t.Errorf("policy\n got %+v\nwant %+v", p.Policy, wantPolicy)
	}
	wantExec := Executors{
		OpenAI:   OpenAIDefaults{BaseURL: "https://api.openai.com/v1", APIKey: "${OPENAI_API_KEY}"},
		Gateway:  GatewayConfig{URL: "wss://gw.example.com/rpc", Token: "${GATEWAY_TOKEN}"},
		OpenClaw: OpenClawConfig{URL: "ws://127.0.0.1:18789", Identity: "identity/device.json"},
	}
	if p.Executors != wantExec {
		t.Errorf("executors\n got %+v\nwant %+v", p.Executors, wantExec)
	}
	// An empty file is a project with every default.
	e := Parse("stepline.yaml", nil)
	if len(e.Diagnostics) != 0 || e.Policy.Default != agent.Allow || e.Agents != "agents" || len(e.Providers) != 5 {
		t.Errorf("empty project: %+v", e)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
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

func TestFind(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"stepline.yaml":                 "",
		"pipelines/a.yaml":              "",
		"pipelines/deep/b.yaml":         "",
		"sub/stepline.yaml":             "",
		"sub/pipelines/c.yaml":          "",
		"sub/pipelines/stepline.yaml/x": "", // a directory of that name is not a project file
	})
	tests := []struct {
		name, path, want string
	}{
		{"beside the pipelines directory", "pipelines/a.yaml", "stepline.yaml"},
		{"two levels up", "pipelines/deep/b.yaml", "stepline.yaml"},
		{"the nearest wins", "sub/pipelines/c.yaml", filepath.Join("sub", "stepline.yaml")},
		{"from a directory", "pipelines", "stepline.yaml"},
		{"a file that does not exist yet", "pipelines/new.yaml", "stepline.yaml"},
	}
	t.Chdir(root)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.path)
			if err != nil || got != tt.want {
				t.Errorf("Find(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
	// Outside the working directory the path stays absolute.
	other := t.TempDir()
	writeFiles(t, other, map[string]string{"stepline.yaml": "", "p/x.yaml": ""})
	if got, err := Find(filepath.Join(other, "p", "x.yaml")); err != nil || got != filepath.Join(other, "stepline.yaml") {
		t.Errorf("Find outside = %q, %v", got, err)
	}
	// No project anywhere above: "".
	none := t.TempDir()
	if got, err := Find(filepath.Join(none, "x.yaml")); err != nil || (got != "" && !strings.HasPrefix(none, filepath.Dir(got))) {
		t.Errorf("Find without a project = %q, %v", got, err)
	}
}

// TestLoad reads a project with its profiles: the profiles' problems and
// the checks against the project are the project's diagnostics.
func TestLoad(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"stepline.yaml":            "mcp_servers:\n  grafana: {url: 'http://g'}\ntool_policy: {default: deny}\n",
		"agents/ok/agent.yaml":     "name: ok\nmodel: anthropic/c\n",
		"agents/ok/soul.md":        "ok",
		"agents/tools/agent.yaml":  "name: tools\nmodel: anthropic/c\ntools: [grafana, jira]\n",
		"agents/tools/soul.md":     "",
		"agents/broken/agent.yaml": "name: broken\nmodel: nope/m\n",
		"agents/broken/soul.md":    "",
	})
	t.Chdir(root)
	p, err := Load("stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`agents/broken/agent.yaml:2:8: model: model "nope/m": unknown provider "nope" (known: anthropic, bedrock, ollama, openai, openrouter)`,
		`agents/tools/agent.yaml:3:9: warning: tools: the tool policy never allows agent "tools" a call to server "grafana": every call it makes there is denied`,
		`agents/tools/agent.yaml:3:18: tools: unknown MCP server "jira" (declared: grafana)`,
	}
	if got := lines(p.Diagnostics); !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := p.AgentNames(); !reflect.DeepEqual(got, []string{"broken", "ok", "tools"}) {
		t.Errorf("agents %v", got)
	}
	if _, err := Load("missing.yaml"); err == nil || !strings.HasPrefix(err.Error(), "read project: ") {
		t.Errorf("Load of a missing file: %v", err)
	}
	// An agents directory written out that does not exist is a warning.
	writeFiles(t, root, map[string]string{"other/stepline.yaml": "agents: gone\n"})
	p, err = Load("other/stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`other/stepline.yaml:1:9: warning: agents: directory other/gone does not exist: the project has no agents`}
	if got := lines(p.Diagnostics); !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExampleProject: the repository's stepline.yaml and agents load
// without a problem.
func TestExampleProject(t *testing.T) {
	p, err := Load("../../stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Diagnostics) != 0 {
		t.Errorf("diagnostics:\n%s", p.Diagnostics)
	}
	if len(p.Profiles) < 3 || len(p.Servers) < 2 {
		t.Errorf("agents %v, servers %v", p.AgentNames(), p.ServerNames())
	}
}
