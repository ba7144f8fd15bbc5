package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// bedrockClient is a real Bedrock runtime client whose endpoint is the
// test server, with static credentials and the given number of attempts
// per request (1 unless given, so each test sees exactly the requests it
// scripts).
func bedrockClient(t *testing.T, srv *server, attempts ...int) *awsrest.BedrockRuntime {
	t.Helper()
	cfg := aws.Config{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
	}
	if len(attempts) > 0 {
		cfg.RetryMaxAttempts = attempts[0]
	}
	c, err := awsrest.NewBedrockRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=[a-z0-9;-]*content-type[a-z0-9;-]*, Signature=[0-9a-f]{64}$`)

// awsError answers like a restJson1 AWS service.
func awsError(status int, code, message string) http.HandlerFunc {
	return answer(status, `{"message":"`+message+`"}`, "X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/", "Content-Type", "application/json")
}

const okConverse = `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"llm_output","input":{"confidence":0.9,"summary":"disk full","next_step_context":"db-1"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":321,"outputTokens":45,"totalTokens":366},"metrics":{"latencyMs":812}}`

func TestBedrockConverseRequest(t *testing.T) {
	srv := newServer(t, answer(200, okConverse))
	reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv)})
	p := provider(t, reg, Call{Executor: Bedrock, Step: "triage", Config: map[string]any{
		"model":                           "us.anthropic.claude-sonnet-4-20250514-v1:0",
		"max_tokens":                      800,
		"temperature":                     0.1,
		"system":                          "You are the on-call triage agent.",
		"additional_model_request_fields": map[string]any{"top_k": 50},
	}})
	c, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last(t)
	if got.method != "POST" || got.path != "/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse" {
		t.Errorf("request = %s %s", got.method, got.path)
	}
	if !sigV4.MatchString(got.header.Get("Authorization")) || got.header.Get("X-Amz-Date") == "" {
		t.Errorf("request is not SigV4-signed for bedrock in us-east-1: Authorization %q", got.header.Get("Authorization"))
	}
	if got.header.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type %q", got.header.Get("Content-Type"))
	}
	var body struct {
		Messages []struct {
			Role    string              `json:"role"`
			Content []map[string]string `json:"content"`
		} `json:"messages"`
		System          []map[string]string `json:"system"`
		InferenceConfig map[string]float64  `json:"inferenceConfig"`
		ToolConfig      struct {
			Tools []struct {
				ToolSpec struct {
					Name        string `json:"name"`
					InputSchema struct {
						JSON map[string]any `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
			ToolChoice map[string]map[string]string `json:"toolChoice"`
		} `json:"toolConfig"`
		Additional map[string]any `json:"additionalModelRequestFields"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatalf("%v\n%s", err, got.body)
	}
	if len(body.Messages) != 1 || body.Messages[0].Role != "user" || body.Messages[0].Content[0]["text"] != "Triage the alert: disk full on db-1." {
		t.Errorf("messages = %+v", body.Messages)
	}
	if len(body.System) != 1 || body.System[0]["text"] != "You are the on-call triage agent.\n\nAnswer with the LLMOutput JSON." {
		t.Errorf("system = %+v", body.System)
	}
	if body.InferenceConfig["maxTokens"] != 800 || body.InferenceConfig["temperature"] < 0.099 || body.InferenceConfig["temperature"] > 0.101 {
		t.Errorf("inferenceConfig = %v", body.InferenceConfig)
	}
	tc := body.ToolConfig
	if len(tc.Tools) != 1 || tc.Tools[0].ToolSpec.Name != "llm_output" || tc.Tools[0].ToolSpec.InputSchema.JSON["type"] != "object" {
		t.Errorf("toolConfig.tools = %+v", tc.Tools)
	}
	if tc.ToolChoice["tool"]["name"] != "llm_output" {
		t.Errorf("toolChoice = %v", tc.ToolChoice)
	}
	if body.Additional["top_k"] != 50.0 {
		t.Errorf("additionalModelRequestFields = %v", body.Additional)
	}

	var answer map[string]any
	if err := json.Unmarshal([]byte(c.Content), &answer); err != nil || answer["summary"] != "disk full" || answer["confidence"] != 0.9 {
		t.Errorf("content = %s (%v)", c.Content, err)
	}
	if c.FinishReason != llmoutput.FinishStop || c.Provider != "bedrock" || c.Model != "us.anthropic.claude-sonnet-4-20250514-v1:0" {
		t.Errorf("finish/provider/model = %q %q %q", c.FinishReason, c.Provider, c.Model)
	}
	if c.Usage != (llmoutput.Usage{InputTokens: 321, OutputTokens: 45}) {
		t.Errorf("usage = %+v", c.Usage)
	}
	var rec map[string]any
	if err := json.Unmarshal(c.Raw, &rec); err != nil || rec["stopReason"] != "tool_use" || rec["latencyMs"] != 812.0 {
		t.Errorf("raw = %s", c.Raw)
	}
}

func TestBedrockReplies(t *testing.T) {
	cases := []struct {
		name    string
		toolUse bool
		handler http.HandlerFunc
		timeout time.Duration
		finish  string
		content string
		usage   llmoutput.Usage
		fault   string
		inMsg   string
	}{
		{name: "text answer", handler: answer(200, `{"output":{"message":{"role":"assistant","content":[{"text":"{\"confidence\":0.5,"},{"text":"\"summary\":\"s\",\"next_step_context\":\"\"}"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":4,"totalTokens":7}}`),
			finish: llmoutput.FinishStop, content: `{"confidence":0.5,"summary":"s","next_step_context":""}`, usage: llmoutput.Usage{InputTokens: 3, OutputTokens: 4}},
		{name: "max tokens", toolUse: true, handler: answer(200, `{"output":{"message":{"role":"assistant","content":[{"text":"{\"confid"}]}},"stopReason":"max_tokens","usage":{"inputTokens":3,"outputTokens":100,"totalTokens":103}}`),
			finish: llmoutput.FinishLength, content: `{"confid`, usage: llmoutput.Usage{InputTokens: 3, OutputTokens: 100}},
		{name: "guardrail", handler: answer(200, `{"output":{"message":{"role":"assistant","content":[{"text":"Sorry, the model cannot answer this question."}]}},"stopReason":"guardrail_intervened","usage":{"inputTokens":3,"outputTokens":0,"totalTokens":3}}`),
			finish: llmoutput.FinishContentFilter, content: "Sorry, the model cannot answer this question.", usage: llmoutput.Usage{InputTokens: 3}},
		{name: "content filtered", handler: answer(200, `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"content_filtered","usage":{"inputTokens":3,"outputTokens":0,"totalTokens":3}}`),
			finish: llmoutput.FinishContentFilter, usage: llmoutput.Usage{InputTokens: 3}},
		{name: "throttled", handler: awsError(429, "ThrottlingException", "Too many requests, please wait before trying again."),
			fault: fault.NameRateLimited, inMsg: "ThrottlingException"},
		{name: "quota", handler: awsError(429, "ServiceQuotaExceededException", "quota"), fault: fault.NameRateLimited},
		{name: "validation", handler: awsError(400, "ValidationException", "The provided model identifier is invalid."),
			fault: fault.NameExecutorRejected, inMsg: "model identifier is invalid"},
		{name: "access denied", handler: awsError(403, "AccessDeniedException", "You don't have access to the model with the specified model ID."),
			fault: fault.NameExecutorRejected, inMsg: "AccessDeniedException"},
		{name: "unknown model", handler: awsError(404, "ResourceNotFoundException", "Model not found"), fault: fault.NameExecutorRejected},
		{name: "internal", handler: awsError(500, "InternalServerException", "boom"), fault: fault.NameExecutorUnavailable, inMsg: "InternalServerException"},
		{name: "unavailable", handler: awsError(503, "ServiceUnavailableException", "later"), fault: fault.NameExecutorUnavailable},
		{name: "model timeout", handler: awsError(408, "ModelTimeoutException", "slow model"), fault: fault.NameExecutorTimeout},
		{name: "unknown 4xx code", handler: awsError(409, "SomethingNewException", "x"), fault: fault.NameExecutorRejected},
		{name: "unknown 429 code", handler: awsError(429, "SomethingNewException", "x"), fault: fault.NameRateLimited},
		{name: "5xx without a code", handler: answer(502, `<html>bad gateway</html>`, "Content-Type", "text/html"), fault: fault.NameExecutorUnavailable, inMsg: "HTTP 502"},
		{name: "malformed body", handler: answer(200, `{"output":{"message":`), fault: fault.NameExecutorUnavailable, inMsg: "malformed reply"},
		{name: "no message", handler: answer(200, `{"output":{},"stopReason":"end_turn"}`), fault: fault.NameExecutorUnavailable, inMsg: "no message"},
		{name: "reply too large", handler: answer(200, `{"output":{"message":{"role":"assistant","content":[{"text":"`+strings.Repeat("x", MaxBodyBytes)+`"}]}}}`),
			fault: fault.NameExecutorUnavailable, inMsg: "reply too large"},
		{name: "slow past the deadline", handler: stall, timeout: 150 * time.Millisecond, fault: fault.NameExecutorTimeout, inMsg: "within 150ms"},
		{name: "connection reset mid-body", handler: resetMidBody, fault: fault.NameExecutorUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, c.handler)
			reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv)})
			cfg := map[string]any{"model": "anthropic.claude-3-5-haiku-20241022-v1:0", "tool_use": c.toolUse}
			start := time.Now()
			got, err := provider(t, reg, Call{Executor: Bedrock, Config: cfg, Timeout: c.timeout}).Complete(context.Background(), request())
			if c.timeout > 0 && time.Since(start) > 3*time.Second {
				t.Errorf("call took %s", time.Since(start))
			}
			if c.fault != "" {
				assertFault(t, err, c.fault, c.inMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.FinishReason != c.finish || got.Content != c.content || got.Usage != c.usage {
				t.Errorf("completion = %q %q %+v, want %q %q %+v", got.FinishReason, got.Content, got.Usage, c.finish, c.content, c.usage)
			}
			_, hasTools := srv.last(t).json(t)["toolConfig"]
			if hasTools != c.toolUse {
				t.Errorf("toolConfig sent = %v, want %v", hasTools, c.toolUse)
			}
		})
	}
}

func TestBedrockWithoutClient(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	_, err := reg.Provider(Call{Executor: Bedrock, Config: map[string]any{"model": "m"}})
	assertFault(t, err, fault.NameConfigError, "no Bedrock client")
}

func TestParseConverseKeepsOnlyTheAnswerTool(t *testing.T) {
	srv := newServer(t, answer(200, `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"other_tool","input":{"x":1}}},{"toolUse":{"toolUseId":"b","name":"llm_output","input":{"confidence":1,"summary":"s","next_step_context":""}}}]}},"stopReason":"tool_use","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`))
	reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv)})
	c, err := provider(t, reg, Call{Executor: Bedrock, Config: map[string]any{"model": "m"}}).Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if json.Unmarshal([]byte(c.Content), &got); !reflect.DeepEqual(got, map[string]any{"confidence": 1.0, "summary": "s", "next_step_context": ""}) {
		t.Errorf("content = %s", c.Content)
	}
}

// TestBedrockRetriesThroughClient: the client retries a failure a retry
// can fix (here a 503) on its own, as the SDK client did.
func TestBedrockRetriesThroughClient(t *testing.T) {
	srv := newServer(t, awsError(503, "ServiceUnavailableException", "later"), answer(200, okConverse))
	reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv, 2)})
	c, err := provider(t, reg, Call{Executor: Bedrock, Config: map[string]any{"model": "m"}}).Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.seen()); n != 2 || c.Usage.InputTokens != 321 {
		t.Errorf("%d requests, usage %+v; want 2 and the answer's usage", n, c.Usage)
	}
}

func TestBedrockToolInputForms(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  string
	}{
		{"object with spaces", `{ "confidence" : 1, "summary": "s" }`, `{"confidence":1,"summary":"s"}`},
		{"absent", ``, `{}`},
		{"null", `,"input":null`, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			input := c.input
			if input != "" && input[0] == '{' {
				input = `,"input":` + input
			}
			srv := newServer(t, answer(200, `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"llm_output"`+input+`}}]}},"stopReason":"tool_use"}`))
			reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv)})
			got, err := provider(t, reg, Call{Executor: Bedrock, Config: map[string]any{"model": "m"}}).Complete(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != c.want {
				t.Errorf("content = %s, want %s", got.Content, c.want)
			}
		})
	}
}

func TestBedrockLogsOneDebugLine(t *testing.T) {
	srv := newServer(t, answer(200, okConverse))
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg, _ := newRegistry(t, Deps{Bedrock: bedrockClient(t, srv), Logger: logger})
	if _, err := provider(t, reg, Call{Executor: Bedrock, Step: "triage", Config: map[string]any{"model": "m"}}).Complete(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "executor aws call") || !strings.Contains(got, "step=triage") || !strings.Contains(got, "error=false") {
		t.Errorf("log = %q", got)
	}
}

type failingConverse struct{ err error }

func (f failingConverse) Converse(context.Context, string, []byte) ([]byte, error) { return nil, f.err }

// TestBedrockConfigurationErrorsAreNotRetried: a client that cannot be
// configured (no region, no credentials) fails the call with a
// ConfigError, which Retry does not match; anything else it cannot say
// stays ExecutorUnavailable.
func TestBedrockConfigurationErrorsAreNotRetried(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fault.Errorf[fault.ConfigError]("no AWS region is configured"), fault.NameConfigError},
		{fmt.Errorf("load: %w", fault.Errorf[fault.ConfigError]("no credentials")), fault.NameConfigError},
		{errors.New("connection reset"), fault.NameExecutorUnavailable},
	} {
		reg, _ := newRegistry(t, Deps{Bedrock: failingConverse{c.err}})
		_, err := provider(t, reg, Call{Executor: Bedrock, Config: map[string]any{"model": "m"}}).Complete(context.Background(), request())
		if fault.Name(err) != c.want || !strings.HasPrefix(err.Error(), "bedrock: m: ") {
			t.Errorf("%v: got %s %v, want %s", c.err, fault.Name(err), err, c.want)
		}
	}
}
