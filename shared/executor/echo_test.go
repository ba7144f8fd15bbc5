package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// Providers that echo the credential they were sent: in the reply text
// (inside a JSON string of an LLMOutput field, in an extra field, escaped
// with \uXXXX, in plain text around the JSON), in the reported model, in a
// response header and in error bodies. The secret must appear nowhere in
// what the executor returns, nor in what the structured-output runner
// makes of it.

// echoAnswer is the model's reply text echoing v: prose, then a fenced
// answer holding v in contract fields, reasoning, an artifact, extras, and
// once with its first character written as a \u escape.
func echoAnswer(v string) string {
	return "Sure, I was called with " + v + ".\n```json\n" + echoObject(v) + "\n```\nThat key again: " + v
}

// echoObject is the answer object echoing v, as JSON text.
func echoObject(v string) string {
	esc := fmt.Sprintf(`\u%04x`, v[0]) + v[1:]
	return `{"confidence": 0.9, "summary": "called with ` + v + `", "next_step_context": "use ` + v + `",` +
		` "reasoning": {"supports": ["` + v + `"]}, "artifacts": {"log.txt": "key=` + v + `"},` +
		` "echo": "` + v + `", "escaped": "` + esc + `", "nested": {"k": ["` + v + `"]}}`
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// secretOf reads the credential a request carried, as each API sends it.
func secretOf(t *testing.T, r *http.Request, body []byte) string {
	t.Helper()
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		return strings.TrimPrefix(a, "Bearer ")
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	var conv struct {
		Additional struct {
			Token string `json:"api_token"`
		} `json:"additionalModelRequestFields"`
	}
	_ = json.Unmarshal(body, &conv)
	if conv.Additional.Token == "" {
		t.Error("the request carried no credential to echo")
	}
	return conv.Additional.Token
}

// echoServer is a test server answering with body(secret), the secret
// also in a response header, after the given headers.
func echoServer(t *testing.T, status int, body func(t *testing.T, secret string) string, header ...string) *server {
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		v := secretOf(t, r, srv.last(t).body) // newServer has read the body
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", v)
		w.Header().Set("X-Request-Authorization", r.Header.Get("Authorization"))
		w.WriteHeader(status)
		io.WriteString(w, body(t, v))
	})
	return srv
}

// nearClip puts v where the executor's 300-character quote of an error
// message ends (lead is what the quote puts before the message, such as
// "invalid_request_error: "), so that a quote cut before redaction would
// keep its first 10 characters.
func nearClip(v string, lead int) string {
	return strings.Repeat("x", 290-lead) + v + " rejected"
}

// assertNoSecretPart checks s for the test secrets and for any 8-byte
// piece of them (a secret cut in half is still leaked).
func assertNoSecretPart(t *testing.T, what, s string) {
	t.Helper()
	for _, v := range []string{testKey, testToken} {
		for i := 0; i+8 <= len(v); i++ {
			if strings.Contains(s, v[i:i+8]) {
				t.Errorf("%s holds %q, part of a secret:\n%s", what, v[i:i+8], s)
				return
			}
		}
	}
}

// assertCompletionClean checks every field of a completion, the answer
// the LLMOutput parser reads from it, and that the answer is still valid.
func assertCompletionClean(t *testing.T, c llmoutput.Completion) {
	t.Helper()
	assertNoSecretPart(t, "completion", jsonText(t, c))
	res := llmoutput.Parse(c.Content, llmoutput.ParseOptions{FinishReason: c.FinishReason})
	if !res.OK {
		t.Fatalf("the scrubbed reply no longer parses: %v\n%s", res.Errors, c.Content)
	}
	full, _ := res.Output.MarshalJSON()
	assertNoSecretPart(t, "parsed answer", string(full))
	for _, name := range []string{"echo", "escaped"} {
		if v, _ := res.Output.Extra.Get(name); string(v) != `"[REDACTED]"` {
			t.Errorf("extra %s = %s, want [REDACTED]", name, v)
		}
	}
	if !strings.Contains(res.Output.Summary, "[REDACTED]") {
		t.Errorf("summary = %q", res.Output.Summary)
	}
}

func TestModelEchoIsRedacted(t *testing.T) {
	chat := func(t *testing.T, v string) string {
		return jsonText(t, map[string]any{"model": v, "provider": "echo " + v,
			"choices": []any{map[string]any{"message": map[string]any{"content": echoAnswer(v)}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 2}})
	}
	messagesText := func(t *testing.T, v string) string {
		return jsonText(t, map[string]any{"type": "message", "model": v,
			"content":     []any{map[string]any{"type": "text", "text": echoAnswer(v)}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 1, "output_tokens": 2}})
	}
	messagesTool := func(t *testing.T, v string) string {
		return `{"type":"message","model":` + jsonText(t, v) + `,"content":[{"type":"text","text":` + jsonText(t, "Calling with "+v) +
			`},{"type":"tool_use","id":"t","name":"llm_output","input":` + echoObject(v) + `}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`
	}
	converseText := func(t *testing.T, v string) string {
		return jsonText(t, map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant",
			"content": []any{map[string]any{"text": echoAnswer(v)}}}}, "stopReason": "end_turn"})
	}
	converseTool := func(t *testing.T, v string) string {
		return `{"output":{"message":{"role":"assistant","content":[{"text":` + jsonText(t, "Calling with "+v) +
			`},{"toolUse":{"toolUseId":"t","name":"llm_output","input":` + echoObject(v) + `}}]}},"stopReason":"tool_use"}`
	}
	gatewayCfg := func(u string) map[string]any {
		return map[string]any{"base_url": u + "/v1", "model": "gpt-4o", "api_key": "${API_KEY}"}
	}
	anthropicCfg := func(toolUse bool) func(u string) map[string]any {
		return func(u string) map[string]any {
			return map[string]any{"base_url": u, "model": "claude-x", "api_key": "${API_KEY}", "tool_use": toolUse}
		}
	}
	bedrockCfg := func(toolUse bool) func(string) map[string]any {
		return func(string) map[string]any {
			return map[string]any{"model": "anthropic.claude-x", "tool_use": toolUse,
				"additional_model_request_fields": map[string]any{"api_token": "${API_KEY}"}}
		}
	}
	bedrockErr := func(t *testing.T, v string) string { return jsonText(t, map[string]string{"message": nearClip(v, 0)}) }
	cases := []struct {
		name     string
		executor string
		config   func(url string) map[string]any
		status   int
		body     func(t *testing.T, v string) string
		header   []string // extra response headers (Bedrock's error type)
		fault    string   // the error expected, "" for an answer
	}{
		{name: "gateway reply", executor: Gateway, config: gatewayCfg, status: 200, body: chat},
		{name: "gateway error body", executor: Gateway, config: gatewayCfg, status: 401, fault: fault.NameExecutorRejected,
			body: func(t *testing.T, v string) string {
				return jsonText(t, map[string]any{"error": map[string]string{"type": "invalid_request_error", "message": nearClip(v, len("invalid_request_error: "))}})
			}},
		{name: "gateway rate limit body", executor: Gateway, config: gatewayCfg, status: 429, fault: fault.NameRateLimited,
			body: func(t *testing.T, v string) string { return jsonText(t, map[string]string{"error": nearClip(v, 0)}) }},
		{name: "gateway error in a 200", executor: Gateway, config: gatewayCfg, status: 200, fault: fault.NameExecutorRejected,
			body: func(t *testing.T, v string) string {
				return jsonText(t, map[string]any{"error": map[string]any{"code": 401, "message": nearClip(v, 0)}})
			}},
		{name: "anthropic text reply", executor: Anthropic, config: anthropicCfg(false), status: 200, body: messagesText},
		{name: "anthropic tool reply", executor: Anthropic, config: anthropicCfg(true), status: 200, body: messagesTool},
		{name: "anthropic error body", executor: Anthropic, config: anthropicCfg(true), status: 403, fault: fault.NameExecutorRejected,
			body: func(t *testing.T, v string) string {
				return jsonText(t, map[string]any{"type": "error", "error": map[string]string{"type": "permission_error", "message": nearClip(v, len("permission_error: "))}})
			}},
		{name: "anthropic plain-text error body", executor: Anthropic, config: anthropicCfg(true), status: 502, fault: fault.NameExecutorUnavailable,
			body: func(t *testing.T, v string) string {
				return strings.Repeat("y", 172) + " upstream refused " + v + "\nmore"
			}},
		{name: "bedrock text reply", executor: Bedrock, config: bedrockCfg(false), status: 200, body: converseText},
		{name: "bedrock tool reply", executor: Bedrock, config: bedrockCfg(true), status: 200, body: converseTool},
		{name: "bedrock error body", executor: Bedrock, config: bedrockCfg(true), status: 403, fault: fault.NameExecutorRejected, body: bedrockErr,
			header: []string{"X-Amzn-Errortype", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := echoServer(t, c.status, c.body, c.header...)
			deps := Deps{HTTP: srv.Client(), MaxRetryWait: -1}
			if c.executor == Bedrock {
				deps.Bedrock = bedrockClient(t, srv)
			}
			reg, _ := newRegistry(t, deps)
			p := provider(t, reg, Call{Executor: c.executor, Step: "triage", Stage: StageProduction, Config: c.config(srv.URL)})
			got, err := p.Complete(context.Background(), request())
			if c.fault != "" {
				if fault.Name(err) != c.fault {
					t.Fatalf("err = %v (%s), want %s", err, fault.Name(err), c.fault)
				}
				assertNoSecretPart(t, "error", err.Error())
				if !strings.Contains(err.Error(), "[REDACTED]") {
					t.Errorf("error %q does not show the scrubbed echo", err.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertCompletionClean(t, got)

			// The runner keeps the reply as the record's raw_response.
			res, err := llmoutput.Complete(context.Background(), p, request().Messages, llmoutput.ContractSchema())
			if err != nil || !res.Success {
				t.Fatalf("runner: %v %+v", err, res.ValidationErrors)
			}
			rec, _ := res.Data.MarshalJSON()
			assertNoSecretPart(t, "runner result", string(rec)+res.RawContent+jsonText(t, res.Completion))
		})
	}
}

// TestWebhookEchoOfAuthorization: a webhook target that echoes the
// Authorization header it was sent, in its body and its headers.
func TestWebhookEchoOfAuthorization(t *testing.T) {
	cfg := func(u string) map[string]any {
		return map[string]any{"url": u + "/hook", "headers": map[string]any{"Authorization": "Bearer ${API_KEY}", "X-Token": "${TOKEN}"}}
	}
	cases := []struct {
		name   string
		status int
		body   func(t *testing.T, v string) string
		fault  string
		answer bool // the body is the step's LLMOutput answer
	}{
		{name: "plain text echo", status: 200, body: func(t *testing.T, v string) string { return "you sent Bearer " + v }},
		{name: "echo where the context is cut", status: 200, body: func(t *testing.T, v string) string {
			return strings.Repeat("z", ContextChars-10) + "Bearer " + v + " and more"
		}},
		{name: "LLMOutput echo", status: 200, answer: true, body: func(t *testing.T, v string) string { return echoObject(v) }},
		{name: "JSON echo of the headers", status: 202, body: func(t *testing.T, v string) string {
			return jsonText(t, map[string]any{"received": map[string]string{"authorization": "Bearer " + v, "x-token": testToken}})
		}},
		{name: "error echo", status: 400, fault: fault.NameExecutorRejected, body: func(t *testing.T, v string) string {
			return jsonText(t, map[string]string{"message": nearClip(v, 0)})
		}},
		{name: "server error echo", status: 500, fault: fault.NameExecutorUnavailable, body: func(t *testing.T, v string) string {
			return strings.Repeat("e", 167) + " Authorization: Bearer " + v
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := echoServer(t, c.status, c.body)
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			got, err := provider(t, reg, Call{Executor: Webhook, Step: "notify", Stage: StageProduction, Config: cfg(srv.URL)}).Complete(context.Background(), request())
			if c.fault != "" {
				if fault.Name(err) != c.fault {
					t.Fatalf("err = %v, want %s", err, c.fault)
				}
				assertNoSecretPart(t, "error", err.Error())
				if !strings.Contains(err.Error(), "[REDACTED]") {
					t.Errorf("error %q does not show the scrubbed echo", err.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecretPart(t, "completion", jsonText(t, got))
			if c.answer {
				assertCompletionClean(t, got)
				return
			}
			res := llmoutput.Parse(got.Content, llmoutput.ParseOptions{})
			if !res.OK || !strings.HasPrefix(res.Output.Summary, "Webhook delivered") {
				t.Fatalf("answer = %v %+v", res.Errors, res.Output)
			}
			if !json.Valid(got.Raw) {
				t.Errorf("raw is not JSON: %s", got.Raw)
			}
		})
	}
}

// TestReplyScrubbedOnArrival: the transport scrubs a reply's body and
// header values before any executor code reads them.
func TestReplyScrubbedOnArrival(t *testing.T) {
	srv := echoServer(t, 200, func(_ *testing.T, v string) string { return `{"echo":"` + v + `","escaped":"\u0073` + v[1:] + `"}` })
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	a, err := reg.begin(context.Background(), Call{Executor: Webhook, Config: map[string]any{"key": "${API_KEY}"}}, DefaultDeliveryTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer a.cancel()
	h := http.Header{"Authorization": {"Bearer " + testKey}}
	cases := []struct {
		name  string
		red   bool
		clean bool
	}{
		{"with the call's redactor", true, true},
		{"without a redactor", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := exchange{executor: Webhook, method: http.MethodPost, url: srv.URL, header: h}
			if c.red {
				x.red = a.red
			}
			rep, err := reg.send(a.ctx, x)
			if err != nil {
				t.Fatal(err)
			}
			got := string(rep.body) + " " + rep.header.Get("X-Echo") + " " + rep.header.Get("X-Request-Authorization")
			if clean := !strings.Contains(got, testKey) && !strings.Contains(got, `\u0073`+testKey[1:]); clean != c.clean {
				t.Errorf("reply scrubbed = %v, want %v: %s", clean, c.clean, got)
			}
			if c.clean && (!json.Valid(rep.body) || rep.header.Get("X-Echo") != "[REDACTED]") {
				t.Errorf("reply = %s, X-Echo %q", rep.body, rep.header.Get("X-Echo"))
			}
		})
	}
}

// TestDebugLogScrubsHost: the per-request debug line names the host, which
// a secret may make up (a tenant host kept as a secret); it is scrubbed.
func TestDebugLogScrubsHost(t *testing.T) {
	srv := newServer(t, answer(200, "ok"))
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		name    string
		url     string
		secrets map[string]string
		want    string // in the log line
	}{
		{"host from a secret", "http://${HOST}/hook", map[string]string{"HOST": host}, "host=[REDACTED]"},
		{"host written out", srv.URL + "/hook/${TOKEN}", map[string]string{"TOKEN": testToken}, "host=" + host},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client(), Logger: logger,
				Secrets: secret.Env(func(k string) string { return c.secrets[k] })})
			if _, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": c.url}}).Complete(context.Background(), request()); err != nil {
				t.Fatal(err)
			}
			got := logs.String()
			if !strings.Contains(got, "executor http call") || !strings.Contains(got, c.want) {
				t.Errorf("log = %q, want %q in it", got, c.want)
			}
			for _, v := range c.secrets {
				if strings.Contains(got, v) {
					t.Errorf("log = %q holds a secret", got)
				}
			}
		})
	}
}
