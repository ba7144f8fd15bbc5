package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/agent/mcp"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// agentScript scripts a tool loop of three model calls: two tools in the
// first turn (one scripted id), a second turn whose call answers with a
// tool error, then the answer; one tool is scripted and never called.
const agentScript = `
s:
  - text: looking
    tool_calls:
      - {name: grafana.query, arguments: {expr: up, range: {from: "17:00"}}}
      - {name: runbooks.get, arguments: {id: RB-1}, id: my-call}
    input_tokens: 5
    output_tokens: 2
  - tool_calls: [{name: grafana.query}]
  - reply: '{"confidence": 0.8, "summary": "done", "next_step_context": ""}'
    input_tokens: 7
tool_results:
  grafana.query: ['0.31', {error: no data}]
  runbooks.get: ['RB-1: restart it']
  runbooks.unused: ['never asked']
`

func TestParseScriptAgent(t *testing.T) {
	s, err := ParseScript([]byte(agentScript))
	if err != nil {
		t.Fatal(err)
	}
	turns := s.Replies("s")
	if len(turns) != 3 || len(turns[0].Calls) != 2 || len(turns[1].Calls) != 1 || len(turns[2].Calls) != 0 {
		t.Fatalf("turns %+v", turns)
	}
	first := turns[0]
	if first.Text != "looking" || first.InputTokens != 5 || first.OutputTokens != 2 {
		t.Errorf("first turn %+v", first)
	}
	// Arguments are the JSON `stepline run` sends: keys sorted, {} when left out.
	for i, want := range []string{`{"expr":"up","range":{"from":"17:00"}}`, `{"id":"RB-1"}`} {
		if got := string(first.Calls[i].Arguments); got != want {
			t.Errorf("call %d arguments %s, want %s", i, got, want)
		}
	}
	if c := first.Calls[1]; c.ID != "my-call" || c.Name != "runbooks.get" {
		t.Errorf("second call %+v", c)
	}
	if got := string(turns[1].Calls[0].Arguments); got != "{}" {
		t.Errorf("arguments left out: %s, want {}", got)
	}
	if got := strings.Join(s.Tools(), ","); got != "grafana.query,runbooks.get,runbooks.unused" {
		t.Errorf("Tools = %s", got)
	}
	if slices.Contains(s.Keys(), executor.ToolResultsKey) {
		t.Error("tool_results is read as a step")
	}
	for _, c := range []struct{ name, src, want string }{
		{"a call without a server", "s: [{tool_calls: [{name: query}]}]", `want server.tool, got "query"`},
		{"no calls", "s: [{tool_calls: []}]", "want a list of calls"},
		{"tool_results not a mapping", "tool_results: [a]", "want a mapping"},
		{"a tool without a server", "tool_results: {query: [a]}", `want server.tool, got "query"`},
		{"a decision as a tool's answer", "tool_results: {a.b: [{decision: approve}]}", "want a tool's answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseScript([]byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestFakeAgentLoop runs package agent's tool loop with the executor's
// real models (OpenAI-compatible, Anthropic, Bedrock Converse) and the
// real MCP client against the fake: the loop must see each scripted turn
// as native tool calls, reach each tool through the fake MCP servers and
// carry every result back, and end with the scripted answer.
func TestFakeAgentLoop(t *testing.T) {
	f, err := StartFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, err := awsenv.Load([]string{"AWS_REGION=" + Region, "AWS_ACCESS_KEY_ID=box", "AWS_SECRET_ACCESS_KEY=box", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME=" + f.BedrockEndpoint()})
	if err != nil {
		t.Fatal(err)
	}
	bedrock, err := awsrest.NewBedrockRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	secrets := secret.Env(func(name string) string { return map[string]string{"MCP_TOKEN": "tok-123"}[name] })
	for _, c := range []struct {
		kind, prefix string
		endpoint     func(id string) agent.Endpoint
	}{
		{"gateway", "call_box", func(id string) agent.Endpoint {
			return agent.Endpoint{Provider: "gateway", API: agent.APIGateway, Model: "gpt-box", BaseURL: f.Base(id) + "/m/s/v1", APIKey: "k"}
		}},
		{"anthropic", "toolu_box", func(id string) agent.Endpoint {
			return agent.Endpoint{Provider: "anthropic", API: agent.APIAnthropic, Model: "claude-box", BaseURL: f.Base(id) + "/m/s", APIKey: "k"}
		}},
		{"bedrock", "tooluse_box", func(id string) agent.Endpoint {
			return agent.Endpoint{Provider: "bedrock", API: agent.APIBedrock, Model: BedrockModel("anthropic.claude-box", id, "s")}
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			id := "loop-" + c.kind
			script, err := ParseScript([]byte(agentScript))
			if err != nil {
				t.Fatal(err)
			}
			f.Load(id, script)
			reg := executor.NewRegistry(executor.Deps{HTTP: &http.Client{}, Bedrock: bedrock, Secrets: secrets})
			t.Cleanup(func() { reg.Close() })
			resolved := &agent.Resolved{
				Profile: agent.Profile{Name: "box-test", Model: "m", Tools: []agent.ToolGrant{{Server: "grafana"}, {Server: "runbooks", Tools: []string{"get"}}}},
				Servers: map[string]agent.Server{
					"grafana":  {Name: "grafana", URL: f.MCPURL(id, "grafana"), Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"}},
					"runbooks": {Name: "runbooks", URL: f.MCPURL(id, "runbooks")},
				},
				Policy: agent.Policy{Default: agent.Allow},
				Models: []agent.Endpoint{c.endpoint(id)},
			}
			model, tools, err := reg.Agent(executor.Call{Executor: c.kind, Step: "s", Config: map[string]any{}}, resolved)
			if err != nil {
				t.Fatal(err)
			}
			loop := &agent.Loop{Agent: resolved, Model: model, Tools: tools, Runner: &llmoutput.Runner{}, Schema: llmoutput.ContractSchema()}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conv, err := loop.Run(ctx, "investigate", time.Now().Add(time.Minute))
			if err != nil {
				t.Fatalf("loop: %v (fake calls %+v)", err, script.Calls())
			}
			if conv.Output == nil || conv.Output.Summary != "done" || conv.Iterations != 3 {
				t.Fatalf("output %+v after %d iterations", conv.Output, conv.Iterations)
			}
			var got []string
			for _, ev := range conv.Trace {
				got = append(got, fmt.Sprintf("%d %s %s %s %s %v", ev.Iteration, ev.Type, ev.ID, ev.Name, ev.Content+string(ev.Arguments), ev.IsError))
			}
			p := c.prefix
			want := []string{
				"1 text   looking false",
				"1 tool_call " + p + "1_1 grafana.query {\"expr\":\"up\",\"range\":{\"from\":\"17:00\"}} false",
				"1 tool_result " + p + "1_1 grafana.query 0.31 false",
				"1 tool_call my-call runbooks.get {\"id\":\"RB-1\"} false",
				"1 tool_result my-call runbooks.get RB-1: restart it false",
				"2 tool_call " + p + "2_1 grafana.query {} false",
				"2 tool_result " + p + "2_1 grafana.query no data true",
				`3 text   {"confidence": 0.8, "summary": "done", "next_step_context": ""} false`,
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var in int64
			for _, u := range conv.Usage {
				in += u.InputTokens
			}
			if in != 12 {
				t.Errorf("input tokens %d, want 12 (5 + 0 + 7)", in)
			}
			models, mcpRequests := 0, 0
			for _, call := range script.Calls() {
				switch call.Kind {
				case c.kind:
					models++
					if call.Status != http.StatusOK {
						t.Errorf("model call %d answered %d: %s", models, call.Status, call.Body)
					}
				case "mcp":
					mcpRequests++
					if want := map[string]string{"grafana": "Bearer tok-123"}[call.Key]; call.Header.Get("Authorization") != want {
						t.Errorf("MCP request to %s carried Authorization %q, want %q", call.Key, call.Header.Get("Authorization"), want)
					}
				}
			}
			if models != 3 || mcpRequests == 0 {
				t.Errorf("%d model calls and %d MCP requests, want 3 and some", models, mcpRequests)
			}
			if got := strings.Join(script.Unused(), ";"); got != "tool_results/runbooks.unused: 1 left" {
				t.Errorf("Unused = %s", got)
			}
		})
	}
}

// TestFakeMCPTools: a fake MCP server lists the tools the script gives
// its server (and only those), and answers each call in order: text, a
// tool error, and a tool error once none is left.
func TestFakeMCPTools(t *testing.T) {
	f, _ := startFake(t)
	script, err := ParseScript([]byte(agentScript))
	if err != nil {
		t.Fatal(err)
	}
	f.Load("sc", script)
	client := &mcp.Client{}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		server string
		want   string
	}{
		{"grafana", "query"},
		{"runbooks", "get,unused"},
		{"nothing", ""},
	} {
		tools, err := client.Tools(ctx, agent.Server{Name: c.server, URL: f.MCPURL("sc", c.server)})
		if err != nil {
			t.Fatalf("%s: %v", c.server, err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
			if tool.Description != ToolDescription(c.server+"."+tool.Name) {
				t.Errorf("%s.%s described %q", c.server, tool.Name, tool.Description)
			}
		}
		if got := strings.Join(names, ","); got != c.want {
			t.Errorf("%s lists %q, want %q", c.server, got, c.want)
		}
	}
	grafana := agent.Server{Name: "grafana", URL: f.MCPURL("sc", "grafana")}
	for i, want := range []agent.ToolOutput{
		{Content: "0.31"},
		{Content: "no data", IsError: true},
		{Content: "the box has no scripted answer left for tool grafana.query", IsError: true},
	} {
		out, err := client.Call(ctx, grafana, "query", json.RawMessage(`{"expr":"up"}`))
		if err != nil || out != want {
			t.Errorf("call %d: %+v (%v), want %+v", i+1, out, err, want)
		}
	}
	var tools []Call
	for _, c := range script.Calls() {
		if c.Kind == "tool" {
			tools = append(tools, c)
		}
	}
	if len(tools) != 3 || tools[0].Key != "grafana.query" || tools[0].Body != `{"expr":"up"}` || tools[2].Status != http.StatusBadRequest {
		t.Errorf("tool calls recorded: %+v", tools)
	}
}

// TestModelAnswer: each provider's wire format, the tool named as the
// request offers it (by its ToolDescription), IDs as the provider would
// give them unless scripted.
func TestModelAnswer(t *testing.T) {
	rep := Reply{Text: "checking", InputTokens: 3, OutputTokens: 1, Calls: []ToolCall{
		{Name: "grafana.query", Arguments: json.RawMessage(`{"expr":"up"}`)},
		{Name: "runbooks.get", ID: "mine", Arguments: json.RawMessage(`{}`)},
	}}
	desc := ToolDescription("grafana.query")
	for _, c := range []struct {
		kind, request, want string
	}{
		{"gateway", `{"model": "m", "tools": [{"type": "function", "function": {"name": "grafana__query", "description": "` + desc + `"}}]}`,
			`{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"content":"checking","role":"assistant","tool_calls":[` +
				`{"function":{"arguments":"{\"expr\":\"up\"}","name":"grafana__query"},"id":"call_box4_1","type":"function"},` +
				`{"function":{"arguments":"{}","name":"runbooks.get"},"id":"mine","type":"function"}]}}],` +
				`"id":"chatcmpl-box","model":"m","object":"chat.completion","usage":{"completion_tokens":1,"prompt_tokens":3,"total_tokens":4}}`},
		{"anthropic", `{"model": "c", "tools": [{"name": "grafana__query", "description": "` + desc + `"}]}`,
			`{"content":[{"text":"checking","type":"text"},{"id":"toolu_box4_1","input":{"expr":"up"},"name":"grafana__query","type":"tool_use"},` +
				`{"id":"mine","input":{},"name":"runbooks.get","type":"tool_use"}],"id":"msg_box","model":"c","role":"assistant","stop_reason":"tool_use","type":"message",` +
				`"usage":{"input_tokens":3,"output_tokens":1}}`},
		{"bedrock", `{"toolConfig": {"tools": [{"toolSpec": {"name": "grafana__query", "description": "` + desc + `"}}]}}`,
			`{"metrics":{"latencyMs":1},"output":{"message":{"content":[{"text":"checking"},{"toolUse":{"input":{"expr":"up"},"name":"grafana__query","toolUseId":"tooluse_box4_1"}},` +
				`{"toolUse":{"input":{},"name":"runbooks.get","toolUseId":"mine"}}],"role":"assistant"}},"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4}}`},
	} {
		t.Run(c.kind, func(t *testing.T) {
			a := modelAnswer(c.kind, rep, []byte(c.request), 4)
			got, _ := json.Marshal(a.body)
			if string(got) != c.want {
				t.Errorf("answer\n%s\nwant\n%s", got, c.want)
			}
			if strings.Join(a.ids, ",") != map[string]string{"gateway": "call_box4_1", "anthropic": "toolu_box4_1", "bedrock": "tooluse_box4_1"}[c.kind]+",mine" {
				t.Errorf("ids %v", a.ids)
			}
		})
	}
	// A final answer asks for no tools.
	for _, kind := range []string{"gateway", "anthropic", "bedrock"} {
		a := modelAnswer(kind, Reply{Text: `{"confidence": 1}`}, []byte(`{}`), 1)
		b, _ := json.Marshal(a.body)
		if len(a.ids) != 0 || strings.Contains(string(b), "tool") {
			t.Errorf("%s: a final answer %s asks for tools %v", kind, b, a.ids)
		}
	}
}

// TestFakeRefusesUnansweredCalls: after a tool-calling turn, the step's
// next model request must carry a result for every call, in its
// provider's format, or the fake answers 400 naming the call (and keeps
// the reply for a request that does).
func TestFakeRefusesUnansweredCalls(t *testing.T) {
	const script = "s:\n  - tool_calls: [{name: a.x, id: c1}, {name: a.y, id: c2}]\n  - '{\"confidence\": 1}'\n"
	for _, c := range []struct {
		kind, path string
		none, one  string // requests answering no call, only c1
		both       string
	}{
		{"gateway", "/m/s/v1/chat/completions",
			`{"messages": [{"role": "assistant", "tool_calls": [{"id": "c1"}, {"id": "c2"}]}]}`,
			`{"messages": [{"role": "tool", "tool_call_id": "c1"}]}`,
			`{"messages": [{"role": "tool", "tool_call_id": "c1"}, {"role": "tool", "tool_call_id": "c2"}]}`},
		{"anthropic", "/m/s/v1/messages",
			`{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "c1"}, {"type": "tool_use", "id": "c2"}]}]}`,
			`{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]}]}`,
			`{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}, {"type": "tool_result", "tool_use_id": "c2"}]}]}`},
		{"bedrock", "",
			`{"messages": [{"role": "assistant", "content": [{"toolUse": {"toolUseId": "c1"}}, {"toolUse": {"toolUseId": "c2"}}]}]}`,
			`{"messages": [{"role": "user", "content": [{"toolResult": {"toolUseId": "c1"}}]}]}`,
			`{"messages": [{"role": "user", "content": [{"toolResult": {"toolUseId": "c1"}}, {"toolResult": {"toolUseId": "c2"}}]}]}`},
	} {
		t.Run(c.kind, func(t *testing.T) {
			f, _ := startFake(t)
			s, err := ParseScript([]byte(script))
			if err != nil {
				t.Fatal(err)
			}
			f.Load("sc", s)
			u := f.Base("sc") + c.path
			if c.kind == "bedrock" {
				u = f.BedrockEndpoint() + "/model/" + BedrockModel("m", "sc", "s") + "/converse"
			}
			for i, step := range []struct {
				body   string
				status int
				want   string
			}{
				{`{}`, 200, "c2"},
				{c.none, 400, "does not answer tool call c1"},
				{c.one, 400, "does not answer tool call c2"},
				{c.both, 200, "confidence"},
			} {
				status, body := call(t, "POST", u, step.body)
				if status != step.status || !strings.Contains(body, step.want) {
					t.Errorf("request %d: HTTP %d %s; want %d with %q", i+1, status, body, step.status, step.want)
				}
			}
		})
	}
}

// TestFakeProviderRoute: a provider route answers for the one step whose
// agent calls the provider, and refuses when none or several do.
func TestFakeProviderRoute(t *testing.T) {
	f, _ := startFake(t)
	s, err := ParseScript([]byte("a: ['from a']\nb: ['from b']\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetRoutes(map[string][]string{"anthropic": {"a"}, "openai": {"a", "b"}})
	s.SetRoutes(map[string][]string{"anthropic": {"a"}}) // again: still one step
	f.Load("sc", s)
	for _, c := range []struct {
		name, url string
		status    int
		want      string
	}{
		{"one step", f.ProviderURL("sc", "anthropic", agent.APIAnthropic) + "/v1/messages", 200, "from a"},
		{"several steps", f.ProviderURL("sc", "openai", agent.APIGateway) + "/chat/completions", 400, "provider openai serves the agents of steps a, b"},
		{"no step", f.ProviderURL("sc", "openrouter", agent.APIGateway) + "/chat/completions", 400, "no agent step of the scenario calls provider openrouter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := call(t, "POST", c.url, `{}`)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("HTTP %d %s; want %d with %q", status, body, c.status, c.want)
			}
		})
	}
}
