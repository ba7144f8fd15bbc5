package executor

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

func TestGatewayRequest(t *testing.T) {
	srv := newServer(t, answer(200, okChat))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Gateway, Step: "triage", Stage: StageProduction, Config: map[string]any{
		"base_url":    srv.URL + "/v1/",
		"model":       "openai/gpt-4o",
		"api_key":     "${API_KEY}",
		"temperature": 0.2,
		"max_tokens":  "512", // a rendered template is a string
		"headers":     map[string]any{"OpenAI-Organization": "org-1", "X-Trace": "${TOKEN}"},
		"extra_body":  map[string]any{"seed": 7},
	}})
	c, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last(t)
	if got.method != "POST" || got.path != "/v1/chat/completions" {
		t.Errorf("request = %s %s", got.method, got.path)
	}
	if a := got.header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q", a)
	}
	if got.header.Get("OpenAI-Organization") != "org-1" || got.header.Get("X-Trace") != testToken {
		t.Errorf("extra headers = %v", got.header)
	}
	body := got.json(t)
	if body["model"] != "openai/gpt-4o" {
		t.Errorf("model = %v (a router must get the name as written)", body["model"])
	}
	if body["temperature"] != 0.2 || body["max_tokens"] != 512.0 || body["seed"] != 7.0 {
		t.Errorf("sampling fields = %v %v %v", body["temperature"], body["max_tokens"], body["seed"])
	}
	msgs, _ := json.Marshal(body["messages"])
	if string(msgs) != `[{"content":"Answer with the LLMOutput JSON.","role":"system"},{"content":"Triage the alert: disk full on db-1.","role":"user"}]` {
		t.Errorf("messages = %s", msgs)
	}
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "llm_output" || js["strict"] != nil {
		t.Errorf("response_format = %v", body["response_format"])
	}
	if schema, _ := js["schema"].(map[string]any); schema["type"] != "object" {
		t.Errorf("response_format schema = %v", js["schema"])
	}

	want := llmoutput.Completion{
		Content:      `{"confidence":0.9,"summary":"disk full","next_step_context":"db-1"}`,
		FinishReason: llmoutput.FinishStop,
		Model:        "gpt-4o-2024-08-06",
		Provider:     "openai",
		Usage:        llmoutput.Usage{InputTokens: 120, OutputTokens: 30},
	}
	raw := c.Raw
	c.Raw = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("completion = %+v\nwant %+v", c, want)
	}
	if string(raw) != okChat {
		t.Errorf("raw = %s", raw)
	}
}

func TestGatewayReplies(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		want   llmoutput.Completion
		fault  string
		inMsg  string
		config map[string]any
	}{
		{name: "length", body: `{"model":"m","choices":[{"message":{"content":"{\"confidence\":0.9,"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":16}}`,
			want: llmoutput.Completion{Content: `{"confidence":0.9,`, FinishReason: llmoutput.FinishLength, Model: "m", Usage: llmoutput.Usage{InputTokens: 5, OutputTokens: 16}}},
		{name: "refusal", body: `{"model":"m","choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6}}`,
			want: llmoutput.Completion{FinishReason: llmoutput.FinishRefusal, Refusal: "I can't help with that.", Model: "m", Usage: llmoutput.Usage{InputTokens: 5, OutputTokens: 6}}},
		{name: "content filter", body: `{"model":"m","choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`,
			want: llmoutput.Completion{FinishReason: llmoutput.FinishContentFilter, Model: "m"}},
		{name: "content parts", body: `{"choices":[{"message":{"content":[{"type":"text","text":"{\"a\":"},{"type":"text","text":"1}"}]},"finish_reason":"stop"}]}`,
			want: llmoutput.Completion{Content: `{"a":1}`, FinishReason: llmoutput.FinishStop, Model: "gpt-4o"}},
		{name: "unknown finish reason kept", body: `{"choices":[{"message":{"content":"x"},"finish_reason":"eos"}]}`,
			want: llmoutput.Completion{Content: "x", FinishReason: "eos", Model: "gpt-4o"}},
		{name: "malformed body", body: `{"choices":[{"message":`, fault: fault.NameExecutorUnavailable, inMsg: "malformed reply"},
		{name: "html body", body: `<html>gateway</html>`, fault: fault.NameExecutorUnavailable, inMsg: "malformed reply"},
		{name: "no choices", body: `{"id":"x","choices":[]}`, fault: fault.NameExecutorUnavailable, inMsg: "no choices"},
		{name: "error with status 200, rate limit", body: `{"error":{"code":429,"message":"Rate limit exceeded upstream"}}`,
			fault: fault.NameRateLimited, inMsg: "Rate limit exceeded upstream"},
		{name: "error with status 200, upstream down", body: `{"error":{"code":502,"message":"Provider returned error"}}`,
			fault: fault.NameExecutorUnavailable, inMsg: "Provider returned error"},
		{name: "error with status 200, bad request", body: `{"error":{"code":400,"message":"context too long"}}`,
			fault: fault.NameExecutorRejected, inMsg: "context too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, c.body))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			cfg := map[string]any{"base_url": srv.URL, "model": "gpt-4o", "provider": "openai"}
			got, err := provider(t, reg, Call{Executor: Gateway, Config: cfg}).Complete(context.Background(), request())
			if c.fault != "" {
				assertFault(t, err, c.fault, c.inMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Raw = nil
			c.want.Provider = "openai"
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("completion = %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestGatewayStructuredOutputModes(t *testing.T) {
	cases := []struct {
		name     string
		config   map[string]any
		baseHost string // "" = the test server
		want     string // response_format.type, "" = none
	}{
		{"default for openai provider", map[string]any{"provider": "openai"}, "", "json_schema"},
		{"default for openrouter prefix", map[string]any{"model": "openrouter/auto"}, "", "json_schema"},
		{"default elsewhere is off", map[string]any{"model": "llama3.1"}, "", ""},
		{"forced on", map[string]any{"model": "llama3.1", "structured_output": true}, "", "json_schema"},
		{"json_object", map[string]any{"model": "llama3.1", "structured_output": "json_object"}, "", "json_object"},
		{"off for openai", map[string]any{"provider": "openai", "structured_output": "false"}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, okChat))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			cfg := map[string]any{"base_url": srv.URL, "model": "gpt-4o"}
			for k, v := range c.config {
				cfg[k] = v
			}
			if _, err := provider(t, reg, Call{Executor: Gateway, Config: cfg}).Complete(context.Background(), request()); err != nil {
				t.Fatal(err)
			}
			rf, _ := srv.last(t).json(t)["response_format"].(map[string]any)
			if got, _ := rf["type"].(string); got != c.want {
				t.Errorf("response_format.type = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("no schema, no response_format", func(t *testing.T) {
		srv := newServer(t, answer(200, okChat))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		req := request()
		req.Schema = nil
		if _, err := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": srv.URL, "model": "gpt-4o", "provider": "openai"}}).Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if _, ok := srv.last(t).json(t)["response_format"]; ok {
			t.Error("response_format sent without a schema")
		}
	})
}

func TestGatewayAzureStyle(t *testing.T) {
	srv := newServer(t, answer(200, okChat))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{
		"base_url":       srv.URL + "/openai/deployments/gpt4o?api-version=2024-10-21",
		"model":          "gpt-4o",
		"provider":       "azure",
		"api_key":        "${API_KEY}",
		"api_key_header": "api-key",
	}})
	c, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last(t)
	if got.path != "/openai/deployments/gpt4o/chat/completions" || got.query != "api-version=2024-10-21" {
		t.Errorf("URL = %s?%s", got.path, got.query)
	}
	if got.header.Get("api-key") != testKey || got.header.Get("Authorization") != "" {
		t.Errorf("auth headers = %v", got.header)
	}
	if c.Provider != "azure" {
		t.Errorf("provider = %q", c.Provider)
	}
}

func TestGatewayNaming(t *testing.T) {
	cases := []struct {
		configured, model, host string
		provider, wire          string
	}{
		{"", "gpt-4o", "api.openai.com", "openai", "gpt-4o"},
		{"", "openai/gpt-4o", "api.openai.com", "openai", "gpt-4o"},
		{"", "anthropic/claude-sonnet-4-5", "openrouter.ai", "anthropic", "anthropic/claude-sonnet-4-5"},
		{"", "gpt-4o", "openrouter.ai", "openrouter", "gpt-4o"},
		{"", "gpt-4o", "myres.openai.azure.com", "azure", "gpt-4o"},
		{"", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "api.together.xyz", "together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"},
		{"", "openai/gpt-oss-120b", "api.groq.com", "groq", "openai/gpt-oss-120b"},
		{"", "llama3.1", "localhost:11434", "ollama", "llama3.1"},
		{"", "qwen", "127.0.0.1:8000", "", "qwen"},
		{"", "bedrock/claude", "litellm.internal:4000", "bedrock", "bedrock/claude"},
		{"", "m", "litellm.internal:4000", "litellm.internal", "m"},
		{"vllm", "openai/gpt-4o", "api.openai.com", "vllm", "gpt-4o"},
	}
	for _, c := range cases {
		if got := gatewayProvider(c.configured, c.model, c.host); got != c.provider {
			t.Errorf("gatewayProvider(%q, %q, %q) = %q, want %q", c.configured, c.model, c.host, got, c.provider)
		}
		if got := wireModel(c.model, c.host); got != c.wire {
			t.Errorf("wireModel(%q, %q) = %q, want %q", c.model, c.host, got, c.wire)
		}
	}
}

func TestGatewayLocalServerProviderFallsBackToReplyThenHost(t *testing.T) {
	srv := newServer(t,
		answer(200, `{"model":"m","provider":"Fireworks","choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`),
		answer(200, `{"model":"m","choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": srv.URL, "model": "m"}})
	c, _ := p.Complete(context.Background(), request())
	if c.Provider != "fireworks" {
		t.Errorf("provider = %q, want the reply's", c.Provider)
	}
	c, _ = p.Complete(context.Background(), request())
	if !strings.HasPrefix(c.Provider, "127.0.0.1") {
		t.Errorf("provider = %q, want the host", c.Provider)
	}
}

func TestToolName(t *testing.T) {
	cases := map[string]string{"llm_output": "llm_output", "LLM Output v2": "LLM_Output_v2", "": "llm_output", "***": "llm_output", strings.Repeat("a", 70): strings.Repeat("a", 64)}
	for in, want := range cases {
		if got := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
}
