package executor

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

func TestAnthropicRequestWithToolUse(t *testing.T) {
	srv := newServer(t, answer(200, okMessages))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Anthropic, Step: "triage", Config: map[string]any{
		"base_url":    srv.URL,
		"api_key":     "${API_KEY}",
		"model":       "claude-sonnet-4-5",
		"max_tokens":  1024,
		"temperature": 0,
		"system":      "You are the on-call triage agent.",
		"headers":     map[string]any{"anthropic-beta": "feature-x"},
	}})
	req := request()
	// A re-ask: the runner appends the bad answer and its feedback.
	req.Messages = append(req.Messages,
		llmoutput.Message{Role: llmoutput.RoleAssistant, Content: "not json"},
		llmoutput.Message{Role: llmoutput.RoleUser, Content: "That was not JSON."},
		llmoutput.Message{Role: llmoutput.RoleUser, Content: "Answer again."})
	c, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last(t)
	if got.path != "/v1/messages" {
		t.Errorf("path = %s", got.path)
	}
	if got.header.Get("x-api-key") != testKey || got.header.Get("anthropic-version") != "2023-06-01" || got.header.Get("anthropic-beta") != "feature-x" {
		t.Errorf("headers = %v", got.header)
	}
	var body struct {
		Model       string              `json:"model"`
		MaxTokens   int                 `json:"max_tokens"`
		System      string              `json:"system"`
		Temperature *float64            `json:"temperature"`
		Messages    []map[string]string `json:"messages"`
		Tools       []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
		ToolChoice map[string]string `json:"tool_choice"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-sonnet-4-5" || body.MaxTokens != 1024 || body.Temperature == nil || *body.Temperature != 0 {
		t.Errorf("model/max_tokens/temperature = %q %d %v", body.Model, body.MaxTokens, body.Temperature)
	}
	if body.System != "You are the on-call triage agent.\n\nAnswer with the LLMOutput JSON." {
		t.Errorf("system = %q", body.System)
	}
	wantMsgs := []map[string]string{
		{"role": "user", "content": "Triage the alert: disk full on db-1."},
		{"role": "assistant", "content": "not json"},
		{"role": "user", "content": "That was not JSON.\n\nAnswer again."},
	}
	if !reflect.DeepEqual(body.Messages, wantMsgs) {
		t.Errorf("messages = %v", body.Messages)
	}
	if len(body.Tools) != 1 || body.Tools[0].Name != "llm_output" || body.Tools[0].InputSchema["type"] != "object" {
		t.Errorf("tools = %+v", body.Tools)
	}
	if !reflect.DeepEqual(body.ToolChoice, map[string]string{"type": "tool", "name": "llm_output"}) {
		t.Errorf("tool_choice = %v", body.ToolChoice)
	}

	raw := c.Raw
	c.Raw = nil
	want := llmoutput.Completion{
		Content:      `{"confidence":0.9,"summary":"disk full","next_step_context":"db-1"}`,
		FinishReason: llmoutput.FinishStop,
		Model:        "claude-sonnet-4-5-20250929",
		Provider:     "anthropic",
		Usage:        llmoutput.Usage{InputTokens: 200, OutputTokens: 40},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("completion = %+v\nwant %+v", c, want)
	}
	if string(raw) != okMessages {
		t.Errorf("raw = %s", raw)
	}
}

func TestAnthropicReplies(t *testing.T) {
	cases := []struct {
		name    string
		toolUse bool
		body    string
		want    llmoutput.Completion
		fault   string
		inMsg   string
	}{
		{name: "text answer", body: `{"type":"message","model":"claude-x","content":[{"type":"text","text":"{\"confidence\":0.8,"},{"type":"text","text":"\"summary\":\"s\",\"next_step_context\":\"\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":20}}`,
			want: llmoutput.Completion{Content: `{"confidence":0.8,"summary":"s","next_step_context":""}`, FinishReason: llmoutput.FinishStop, Model: "claude-x", Usage: llmoutput.Usage{InputTokens: 10, OutputTokens: 20}}},
		{name: "max_tokens", toolUse: true, body: `{"type":"message","model":"claude-x","content":[{"type":"tool_use","id":"t","name":"llm_output","input":{}}],"stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":1024}}`,
			want: llmoutput.Completion{Content: `{}`, FinishReason: llmoutput.FinishLength, Model: "claude-x", Usage: llmoutput.Usage{InputTokens: 10, OutputTokens: 1024}}},
		{name: "refusal", body: `{"type":"message","model":"claude-x","content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal","usage":{"input_tokens":10,"output_tokens":8}}`,
			want: llmoutput.Completion{Content: "I can't help with that.", Refusal: "I can't help with that.", FinishReason: llmoutput.FinishRefusal, Model: "claude-x", Usage: llmoutput.Usage{InputTokens: 10, OutputTokens: 8}}},
		{name: "tool use beside text", toolUse: true, body: `{"type":"message","model":"claude-x","content":[{"type":"text","text":"Here:"},{"type":"tool_use","id":"t","name":"llm_output","input":{"confidence":1,"summary":"a","next_step_context":"b"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			want: llmoutput.Completion{Content: `{"confidence":1,"summary":"a","next_step_context":"b"}`, FinishReason: llmoutput.FinishStop, Model: "claude-x", Usage: llmoutput.Usage{InputTokens: 1, OutputTokens: 2}}},
		{name: "cache tokens count as input", body: `{"type":"message","model":"claude-x","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":5}}`,
			want: llmoutput.Completion{Content: "x", FinishReason: llmoutput.FinishStop, Model: "claude-x", Usage: llmoutput.Usage{InputTokens: 1110, OutputTokens: 5}}},
		{name: "malformed body", body: `{"type":"message","content":[`, fault: fault.NameExecutorUnavailable, inMsg: "malformed reply"},
		{name: "not a message", body: `{"hello":"world"}`, fault: fault.NameExecutorUnavailable, inMsg: "not a message"},
		{name: "error object with 200", body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, fault: fault.NameExecutorUnavailable, inMsg: "api_error: Internal server error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, c.body))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			cfg := map[string]any{"base_url": srv.URL, "api_key": "${API_KEY}", "model": "claude-x", "tool_use": c.toolUse}
			got, err := provider(t, reg, Call{Executor: Anthropic, Config: cfg}).Complete(context.Background(), request())
			if c.fault != "" {
				assertFault(t, err, c.fault, c.inMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Raw = nil
			c.want.Provider = "anthropic"
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("completion = %+v\nwant %+v", got, c.want)
			}
			sent := srv.last(t).json(t)
			if _, has := sent["tool_choice"]; has != c.toolUse {
				t.Errorf("tool_choice sent = %v, want %v", has, c.toolUse)
			}
		})
	}
}

func TestAnthropicNeedsAUserMessage(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	p := provider(t, reg, Call{Executor: Anthropic, Config: map[string]any{"api_key": "k", "model": "m", "base_url": "http://127.0.0.1:1"}})
	_, err := p.Complete(context.Background(), llmoutput.Request{Messages: []llmoutput.Message{{Role: llmoutput.RoleSystem, Content: "only system"}}})
	assertFault(t, err, fault.NameConfigError, "no user message")
}
