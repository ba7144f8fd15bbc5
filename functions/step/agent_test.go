package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

// mcpServer serves one tool, grafana's "query", over streamable HTTP on
// loopback, and counts the sessions clients open.
func mcpServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "grafana", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "query", Description: "Run a PromQL query.", InputSchema: json.RawMessage(`{"type":"object","properties":{"expr":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error rate 0.31 for " + string(req.Params.Arguments)}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var sessions atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			sessions.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &sessions
}

// toolModel speaks the OpenAI chat-completions format: it calls the
// tool first, then answers from what the tool said.
func toolModel(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []map[string]any `json:"messages"`
			Tools    []any            `json:"tools"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.Header.Get("Authorization") != "Bearer test-key" || len(req.Tools) != 1 {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1]
		if last["role"] != "tool" {
			fmt.Fprint(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"grafana__query","arguments":"{\"expr\":\"errors\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
			return
		}
		content, _ := json.Marshal(fmt.Sprintf(`{"confidence": 0.88, "summary": "the tool said: %s", "next_step_context": ""}`, strings.ReplaceAll(last["content"].(string), `"`, `'`)))
		fmt.Fprintf(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":200,"completion_tokens":30}}`, content)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// agentEvent is a step Task whose config carries a resolved agent, as
// the compiler writes it.
func agentEvent(t *testing.T, runID, modelURL, mcpURL string) []byte {
	t.Helper()
	a := agent.Resolved{
		Profile: agent.Profile{Name: "sre-triage", Version: "v-test", Soul: "You are an SRE.", Model: "openai/gpt-4o-mini",
			Tools: []agent.ToolGrant{{Server: "grafana"}}},
		Servers: map[string]agent.Server{"grafana": {Name: "grafana", URL: mcpURL}},
		Policy:  agent.Policy{Default: agent.Allow},
		Models:  []agent.Endpoint{{Provider: "openai", API: agent.APIGateway, Model: "gpt-4o-mini", BaseURL: modelURL, APIKey: "${MODEL_API_KEY}"}},
	}
	ev := map[string]any{
		"mode":     task.ModeStep,
		"pipeline": map[string]any{"name": "rie-agent", "stage": "production"},
		"trigger":  map[string]any{"source": "alertmanager", "labels": map[string]any{"service": "checkout-api"}},
		"usage":    map[string]any{},
		"attempt":  1,
		"run":      map[string]any{"id": runID, "started_at": "2026-11-29T12:00:00.000Z"},
		"step": map[string]any{
			"name": "investigate", "executor": "gateway", "executor_config": map[string]any{"agent": "sre-triage"},
			"prompt_template": "Investigate {{ labels.service }}", "confidence_threshold": 0.75, "on_low_confidence": "escalate",
			"timeout_seconds": 60, "agent": a,
		},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgentStepThroughEmulator runs an agent step in the real bootstrap
// under the Runtime Interface Emulator: the model asks for a tool, the
// function calls the MCP server on loopback and feeds the answer back,
// and the record in DynamoDB Local holds the agent, the iterations and
// the trace. A second (warm) invocation reuses the MCP session.
func TestAgentStepThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	mcpSrv, sessions := mcpServer(t)
	model := toolModel(t)
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"MODEL_API_KEY=test-key",
	)
	st := dynamo.New(client, table)
	for i, runID := range []string{"run-rie-agent-1", "run-rie-agent-2"} {
		res := e.Invoke(t, agentEvent(t, runID, model.URL+"/v1", mcpSrv.URL))
		if res.ErrorType != "" {
			t.Fatalf("invocation %d: %s: %s\n%s", i+1, res.ErrorType, res.Message, e.Output())
		}
		var resp task.Response
		if err := json.Unmarshal(res.Body, &resp); err != nil {
			t.Fatalf("%v: %s", err, res.Body)
		}
		if resp.Status != task.StatusCompleted || !strings.Contains(string(resp.Output), "error rate 0.31") {
			t.Fatalf("invocation %d: %s %s", i+1, resp.Status, resp.Output)
		}
		steps, err := st.ListSteps(context.Background(), runID)
		if err != nil || len(steps) != 1 {
			t.Fatalf("%d records, %v", len(steps), err)
		}
		rec := steps[0]
		if rec.Agent != "sre-triage" || rec.AgentVersion != "v-test" || rec.Iterations != 2 || rec.InputTokens != 300 || rec.OutputTokens != 40 {
			t.Errorf("record: agent %q %q iterations %d tokens %d/%d", rec.Agent, rec.AgentVersion, rec.Iterations, rec.InputTokens, rec.OutputTokens)
		}
		var trace []agent.Event
		if err := json.Unmarshal(rec.Trace, &trace); err != nil || len(trace) != 3 ||
			trace[0].Type != agent.EventToolCall || trace[1].Type != agent.EventToolResult || trace[1].Name != "grafana.query" ||
			!strings.Contains(trace[1].Content, "error rate 0.31") {
			t.Errorf("trace %s (%v)", rec.Trace, err)
		}
	}
	if n := sessions.Load(); n != 1 {
		t.Errorf("%d MCP sessions opened over two invocations of one container, want 1", n)
	}
	if strings.Contains(e.Output(), "test-key") {
		t.Error("the API key appears in the function's logs")
	}
}
