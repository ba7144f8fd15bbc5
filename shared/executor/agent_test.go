package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

var toolSchema = json.RawMessage(`{"type":"object","properties":{"expr":{"type":"string"}},"required":["expr"]}`)

// firstTurn is the first request of a loop: the prompt and one tool.
func firstTurn() agent.ModelRequest {
	return agent.ModelRequest{
		System:   "You are an SRE.",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "Why is checkout slow?"}},
		Tools:    []agent.ToolSpec{{Name: "grafana__query", Description: "Run a PromQL query.", InputSchema: toolSchema}},
	}
}

// secondTurn answers the first reply's call.
func secondTurn(first agent.ModelReply) agent.ModelRequest {
	req := firstTurn()
	req.Messages = append(req.Messages,
		agent.Message{Role: agent.RoleAssistant, Text: first.Text, Calls: first.Calls, Native: first.Native, NativeFormat: first.NativeFormat},
		agent.Message{Role: agent.RoleUser, Results: []agent.ToolResult{{CallID: first.Calls[0].ID, Name: "grafana__query", Content: "0.31", IsError: true}}})
	return req
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// pick reads a path of keys and indexes in decoded JSON.
func pick(v any, path ...any) any {
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

// TestAgentToolCallingWireFormats runs two turns of a tool loop against
// each API faked by an httptest server and checks the requests field by
// field against the providers' documented formats.
func TestAgentToolCallingWireFormats(t *testing.T) {
	cases := []struct {
		name        string
		ep          agent.Endpoint
		firstReply  string
		secondReply string
		checkFirst  func(t *testing.T, body any)
		checkSecond func(t *testing.T, body any)
	}{
		{
			name:        "openai-compatible tools and tool_calls",
			ep:          agent.Endpoint{Provider: "openai", API: agent.APIGateway, Model: "gpt-4o", APIKey: "${API_KEY}"},
			firstReply:  `{"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"grafana__query","arguments":"{\"expr\":\"rate(errors[5m])\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":12}}`,
			secondReply: `{"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"{\"confidence\":0.8,\"summary\":\"key sk-test-0123456789abcdef\",\"next_step_context\":\"\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":80,"completion_tokens":20}}`,
			checkFirst: func(t *testing.T, b any) {
				want := decode(t, `[{"type":"function","function":{"name":"grafana__query","description":"Run a PromQL query.","parameters":`+string(toolSchema)+`}}]`)
				if !reflect.DeepEqual(pick(b, "tools"), want) || pick(b, "tool_choice") != "auto" {
					t.Errorf("tools %v, tool_choice %v", pick(b, "tools"), pick(b, "tool_choice"))
				}
				if pick(b, "messages", 0, "role") != "system" || pick(b, "messages", 1, "content") != "Why is checkout slow?" {
					t.Errorf("messages %v", pick(b, "messages"))
				}
			},
			checkSecond: func(t *testing.T, b any) {
				call := decode(t, `{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"grafana__query","arguments":"{\"expr\":\"rate(errors[5m])\"}"}}]}`)
				if !reflect.DeepEqual(pick(b, "messages", 2), call) {
					t.Errorf("assistant turn %v", pick(b, "messages", 2))
				}
				res := decode(t, `{"role":"tool","tool_call_id":"call_abc","content":"ERROR: 0.31"}`)
				if !reflect.DeepEqual(pick(b, "messages", 3), res) {
					t.Errorf("tool message %v", pick(b, "messages", 3))
				}
			},
		},
		{
			name:        "anthropic tool_use and tool_result",
			ep:          agent.Endpoint{Provider: "anthropic", API: agent.APIAnthropic, Model: "claude-sonnet-4-5", APIKey: "${API_KEY}"},
			firstReply:  `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"check errors","signature":"sig=="},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"grafana__query","input":{"expr":"rate(errors[5m])"}}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":12}}`,
			secondReply: `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"{\"confidence\":0.8,\"summary\":\"key sk-test-0123456789abcdef\",\"next_step_context\":\"\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":80,"output_tokens":20}}`,
			checkFirst: func(t *testing.T, b any) {
				want := decode(t, `[{"name":"grafana__query","description":"Run a PromQL query.","input_schema":`+string(toolSchema)+`}]`)
				if !reflect.DeepEqual(pick(b, "tools"), want) || !reflect.DeepEqual(pick(b, "tool_choice"), map[string]any{"type": "auto"}) {
					t.Errorf("tools %v, tool_choice %v", pick(b, "tools"), pick(b, "tool_choice"))
				}
				if pick(b, "system") != "You are an SRE." || pick(b, "messages", 0, "content", 0, "text") != "Why is checkout slow?" {
					t.Errorf("system %v, messages %v", pick(b, "system"), pick(b, "messages"))
				}
			},
			checkSecond: func(t *testing.T, b any) {
				native := decode(t, `[{"type":"thinking","thinking":"check errors","signature":"sig=="},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"grafana__query","input":{"expr":"rate(errors[5m])"}}]`)
				if pick(b, "messages", 1, "role") != "assistant" || !reflect.DeepEqual(pick(b, "messages", 1, "content"), native) {
					t.Errorf("assistant turn (thinking kept verbatim) %v", pick(b, "messages", 1))
				}
				res := decode(t, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"0.31","is_error":true}]}`)
				if !reflect.DeepEqual(pick(b, "messages", 2), res) {
					t.Errorf("tool result turn %v", pick(b, "messages", 2))
				}
			},
		},
		{
			name:        "bedrock converse toolConfig",
			ep:          agent.Endpoint{Provider: "bedrock", API: agent.APIBedrock, Model: "us.anthropic.claude-sonnet-4-20250514-v1:0"},
			firstReply:  `{"output":{"message":{"role":"assistant","content":[{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_1","name":"grafana__query","input":{"expr":"rate(errors[5m])"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":50,"outputTokens":12}}`,
			secondReply: `{"output":{"message":{"role":"assistant","content":[{"text":"{\"confidence\":0.8,\"summary\":\"done\",\"next_step_context\":\"\"}"}]}},"stopReason":"end_turn","usage":{"inputTokens":80,"outputTokens":20}}`,
			checkFirst: func(t *testing.T, b any) {
				want := decode(t, `{"tools":[{"toolSpec":{"name":"grafana__query","description":"Run a PromQL query.","inputSchema":{"json":`+string(toolSchema)+`}}}]}`)
				if !reflect.DeepEqual(pick(b, "toolConfig"), want) {
					t.Errorf("toolConfig %v", pick(b, "toolConfig"))
				}
				if pick(b, "system", 0, "text") != "You are an SRE." || pick(b, "messages", 0, "content", 0, "text") != "Why is checkout slow?" {
					t.Errorf("system %v, messages %v", pick(b, "system"), pick(b, "messages"))
				}
			},
			checkSecond: func(t *testing.T, b any) {
				native := decode(t, `[{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_1","name":"grafana__query","input":{"expr":"rate(errors[5m])"}}}]`)
				if pick(b, "messages", 1, "role") != "assistant" || !reflect.DeepEqual(pick(b, "messages", 1, "content"), native) {
					t.Errorf("assistant turn %v", pick(b, "messages", 1))
				}
				res := decode(t, `{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"0.31"}],"status":"error"}}]}`)
				if !reflect.DeepEqual(pick(b, "messages", 2), res) {
					t.Errorf("tool result turn %v", pick(b, "messages", 2))
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, c.firstReply), answer(200, c.secondReply))
			ep := c.ep
			deps := Deps{}
			if ep.API == agent.APIBedrock {
				deps.Bedrock = bedrockClient(t, srv)
			} else {
				ep.BaseURL = srv.URL + "/v1"
			}
			reg, _ := newRegistry(t, deps)
			model, _, err := reg.Agent(Call{Executor: ep.API, Step: "investigate", Config: map[string]any{"agent": "sre"}},
				&agent.Resolved{Profile: agent.Profile{Name: "sre"}, Models: []agent.Endpoint{ep}})
			if err != nil {
				t.Fatal(err)
			}
			first, err := model.Turn(context.Background(), firstTurn())
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Calls) != 1 || first.Calls[0].Name != "grafana__query" || string(first.Calls[0].Arguments) != `{"expr":"rate(errors[5m])"}` || first.Calls[0].ID == "" {
				t.Fatalf("calls %+v", first.Calls)
			}
			if first.Usage.InputTokens != 50 || first.FinishReason != llmoutput.FinishStop {
				t.Errorf("usage %+v finish %q", first.Usage, first.FinishReason)
			}
			second, err := model.Turn(context.Background(), secondTurn(first))
			if err != nil {
				t.Fatal(err)
			}
			if len(second.Calls) != 0 || !strings.Contains(second.Text, `"confidence":0.8`) {
				t.Errorf("final reply %+v", second)
			}
			assertNoSecret(t, second.Text)
			seen := srv.seen()
			if len(seen) != 2 {
				t.Fatalf("%d requests", len(seen))
			}
			c.checkFirst(t, decode(t, string(seen[0].body)))
			c.checkSecond(t, decode(t, string(seen[1].body)))
		})
	}
}

// TestAgentThinkingLevels checks how thinking_level reaches each API.
func TestAgentThinkingLevels(t *testing.T) {
	final := map[string]string{
		agent.APIGateway:   `{"model":"o3","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`,
		agent.APIAnthropic: `{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{}}`,
	}
	cases := []struct {
		api, level string
		path       []any
		want       any
	}{
		{agent.APIGateway, "low", []any{"reasoning_effort"}, "low"},
		{agent.APIGateway, "xhigh", []any{"reasoning_effort"}, "high"},
		{agent.APIGateway, "off", []any{"reasoning_effort"}, nil},
		{agent.APIAnthropic, "medium", []any{"thinking", "budget_tokens"}, 8192.0},
		{agent.APIAnthropic, "medium", []any{"max_tokens"}, 8192.0 + settings.AnthropicMaxTokens},
		{agent.APIAnthropic, "off", []any{"thinking"}, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.api, " ", c.level, " ", c.path), func(t *testing.T) {
			srv := newServer(t, answer(200, final[c.api]))
			reg, _ := newRegistry(t, Deps{})
			model, _, err := reg.Agent(Call{Executor: c.api, Step: "s"}, &agent.Resolved{Profile: agent.Profile{Name: "a"},
				Models: []agent.Endpoint{{Provider: "p", API: c.api, Model: "m", BaseURL: srv.URL, APIKey: "${API_KEY}"}}})
			if err != nil {
				t.Fatal(err)
			}
			req := firstTurn()
			req.ThinkingLevel = c.level
			if _, err := model.Turn(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := pick(decode(t, string(srv.last(t).body)), c.path...); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%v = %v, want %v", c.path, got, c.want)
			}
		})
	}
}

func testSecretsWith(extra map[string]string) secret.Resolver {
	return secret.Env(func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		return map[string]string{"API_KEY": testKey, "TOKEN": testToken}[k]
	})
}

// TestAgentFallbacks checks that a retryable failure moves to the next
// model and a rejection does not.
func TestAgentFallbacks(t *testing.T) {
	ok := `{"model":"b","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}]}`
	cases := []struct {
		name     string
		first    int
		wantErr  string
		requests int
	}{
		{"unavailable: the fallback answers", 503, "", 2},
		{"rate limited: the fallback answers", 429, "", 2},
		{"rejected: no fallback", 400, fault.NameExecutorRejected, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(c.first, `{"error":{"message":"no"}}`), answer(200, ok))
			reg, _ := newRegistry(t, Deps{MaxRetryWait: -1})
			ep := agent.Endpoint{Provider: "p", API: agent.APIGateway, BaseURL: srv.URL, APIKey: "${API_KEY}"}
			a, b := ep, ep
			a.Model, b.Model = "a", "b"
			model, _, err := reg.Agent(Call{Executor: Gateway, Step: "s"}, &agent.Resolved{Profile: agent.Profile{Name: "x"}, Models: []agent.Endpoint{a, b}})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := model.Turn(context.Background(), firstTurn())
			if fault.Name(err) != c.wantErr || len(srv.seen()) != c.requests {
				t.Fatalf("err %v, %d requests", err, len(srv.seen()))
			}
			if err == nil && (rep.Text != "fine" || rep.Model != "b") {
				t.Errorf("reply %+v", rep)
			}
		})
	}
}

// TestAgentKeysStayWithTheirProvider: the step's api_key goes only to an
// endpoint of the step's own API; a gateway endpoint of another provider
// without a key sends none (not the default OPENAI_API_KEY).
func TestAgentKeysStayWithTheirProvider(t *testing.T) {
	ok := `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`
	srv := newServer(t, answer(200, ok))
	reg, _ := newRegistry(t, Deps{Secrets: testSecretsWith(map[string]string{"OPENAI_API_KEY": "sk-openai-default"})})
	model, _, err := reg.Agent(Call{Executor: Anthropic, Step: "s", Config: map[string]any{"api_key": "${API_KEY}", "agent": "x"}},
		&agent.Resolved{Profile: agent.Profile{Name: "x"}, Models: []agent.Endpoint{{Provider: "ollama", API: agent.APIGateway, Model: "m", BaseURL: srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.Turn(context.Background(), firstTurn()); err != nil {
		t.Fatal(err)
	}
	h := srv.last(t).header
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
		t.Errorf("credentials sent to another provider: %v", h)
	}
}

func TestScriptedToolLoopParse(t *testing.T) {
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"ok", `
s:
  - {tool_calls: [{name: grafana.query, arguments: {expr: up}}], text: looking}
  - '{"confidence": 1, "summary": "x", "next_step_context": ""}'
tool_results:
  grafana.query: ['{"v": 1}', {error: down}, {value: 2}]
`, ""},
		{"name without a server", `s: [{tool_calls: [{name: query}]}]`, `responses.yaml:1:26: tool_calls[0].name: want server.tool, got "query"`},
		{"arguments not a mapping", `s: [{tool_calls: [{name: a.b, arguments: [1]}]}]`, `tool_calls[0].arguments: want a mapping`},
		{"empty list", `s: [{tool_calls: []}]`, `tool_calls: want a list of calls`},
		{"unknown key in a call", `s: [{tool_calls: [{name: a.b, args: {}}]}]`, `unknown key "args"`},
		{"tool_results not a mapping", `tool_results: [a]`, `tool_results: want a mapping from server.tool`},
		{"tool_results key without a server", `tool_results: {query: [a]}`, `want server.tool, got "query"`},
		{"a decision as a tool answer", `tool_results: {a.b: [approve, {decision: approve}]}`, `want a tool's answer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseResponses("responses.yaml", []byte(c.yaml))
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}

func TestScriptedToolLoop(t *testing.T) {
	rs, err := ParseResponses("r.yaml", []byte(`
s:
  - {tool_calls: [{name: grafana.query, arguments: {expr: up}}], text: looking, input_tokens: 5}
  - '{"confidence": 1, "summary": "x", "next_step_context": ""}'
other: [{tool_calls: [{name: grafana.query}]}]
tool_results:
  grafana.query: ['{"v": 1}', {error: down}]
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(Deps{Responses: rs})
	model, tools, err := reg.Agent(Call{Executor: Gateway, Step: "s"}, &agent.Resolved{Profile: agent.Profile{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r1, err := model.Turn(ctx, agent.ModelRequest{})
	if err != nil || r1.Text != "looking" || len(r1.Calls) != 1 || r1.Calls[0].Name != "grafana.query" || string(r1.Calls[0].Arguments) != `{"expr":"up"}` || r1.Usage.InputTokens != 5 {
		t.Fatalf("turn 1: %+v, %v", r1, err)
	}
	listed, err := tools.Tools(ctx, agent.Server{Name: "grafana"})
	if err != nil || len(listed) != 1 || listed[0].Name != "query" {
		t.Fatalf("tools: %+v, %v", listed, err)
	}
	if none, _ := tools.Tools(ctx, agent.Server{Name: "jira"}); len(none) != 0 {
		t.Errorf("jira lists %+v", none)
	}
	out, err := tools.Call(ctx, agent.Server{Name: "grafana"}, "query", nil)
	if err != nil || out.Content != `{"v": 1}` || out.IsError {
		t.Errorf("call 1: %+v, %v", out, err)
	}
	out, err = tools.Call(ctx, agent.Server{Name: "grafana"}, "query", nil)
	if err != nil || out.Content != "down" || !out.IsError {
		t.Errorf("call 2: %+v, %v", out, err)
	}
	if _, err := tools.Call(ctx, agent.Server{Name: "grafana"}, "query", nil); fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), "no scripted answer left") {
		t.Errorf("call 3: %v", err)
	}
	if got := rs.Consumed()["tool_results/grafana.query"]; got != 2 {
		t.Errorf("consumed %d tool answers, want 2 (kept for a resumed run)", got)
	}
	r2, err := model.Turn(ctx, agent.ModelRequest{})
	if err != nil || !strings.Contains(r2.Text, `"summary": "x"`) || len(r2.Calls) != 0 {
		t.Errorf("turn 2: %+v, %v", r2, err)
	}
	// A tool-calling turn is refused where a step makes one plain call.
	p, err := reg.Provider(Call{Executor: Gateway, Step: "other", Config: map[string]any{"model": "m", "base_url": "http://x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(ctx, request()); fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), "for a step that runs an agent") {
		t.Errorf("plain call on a tool turn: %v", err)
	}
}
