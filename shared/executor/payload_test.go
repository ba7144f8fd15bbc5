package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// promptRequest is the request of a step whose prompt_template rendered to
// text: one user message, as the step runner sends it.
func promptRequest(text string) llmoutput.Request {
	return llmoutput.Request{Messages: []llmoutput.Message{
		{Role: llmoutput.RoleSystem, Content: "Answer with the LLMOutput JSON."},
		{Role: llmoutput.RoleUser, Content: text},
	}}
}

// TestWebhookPayload: a webhook's payload is the request body, encoded as
// a whole, so a value is a value whatever characters it holds.
func TestWebhookPayload(t *testing.T) {
	cases := []struct {
		name    string
		payload any
		body    string // the exact bytes sent
	}{
		{name: "nested mapping",
			payload: map[string]any{"service": "checkout-api", "labels": map[string]any{"team": "checkout", "env": map[string]any{"region": "eu-west-1"}}},
			body:    `{"labels":{"env":{"region":"eu-west-1"},"team":"checkout"},"service":"checkout-api"}`},
		{name: "list",
			payload: []any{"restart", map[string]any{"service": "checkout-api"}, []any{}},
			body:    `["restart",{"service":"checkout-api"},[]]`},
		{name: "non-string leaves keep their YAML types",
			payload: map[string]any{"replicas": int64(3), "ratio": 0.25, "dry_run": false, "note": nil, "big": int64(9007199254740993)},
			body:    `{"big":9007199254740993,"dry_run":false,"note":null,"ratio":0.25,"replicas":3}`},
		{name: "a rendered number stays a string",
			payload: map[string]any{"replicas": "3"},
			body:    `{"replicas":"3"}`},
		{name: "unicode",
			payload: map[string]any{"summary": "Dienst überlastet — 再起動 🚑", "ключ": "значение"},
			body:    `{"summary":"Dienst überlastet — 再起動 🚑","ключ":"значение"}`},
		{name: "quotes, backslashes and newlines stay inside the value",
			payload: map[string]any{"action": `restart", "service": "payments-db`, "path": `C:\tmp\x`, "text": "line 1\nline 2\t\"end\"", "nul": "a\x00b"},
			body:    `{"action":"restart\", \"service\": \"payments-db","nul":"a\u0000b","path":"C:\\tmp\\x","text":"line 1\nline 2\t\"end\""}`},
		{name: "JSON text in a value is a string",
			payload: map[string]any{"action": `{"service": "payments-db"}`},
			body:    `{"action":"{\"service\": \"payments-db\"}"}`},
		{name: "empty mapping", payload: map[string]any{}, body: `{}`},
		{name: "empty list", payload: []any{}, body: `[]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, "ok"))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			got, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL, "payload": c.payload}}).Complete(context.Background(), promptRequest(""))
			if err != nil {
				t.Fatal(err)
			}
			req := srv.last(t)
			if string(req.body) != c.body {
				t.Errorf("body = %s\nwant   %s", req.body, c.body)
			}
			if req.method != "POST" || req.header.Get("Content-Type") != "application/json" {
				t.Errorf("request = %s, Content-Type %q", req.method, req.header.Get("Content-Type"))
			}
			var back any
			if err := json.Unmarshal(req.body, &back); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if ans := answerOf(t, got); ans["summary"] != "Webhook delivered: HTTP 200" {
				t.Errorf("answer = %v", ans)
			}
		})
	}
}

// TestWebhookPayloadInjection: the value a model chose for one field
// cannot add a field or replace another.
func TestWebhookPayloadInjection(t *testing.T) {
	srv := newServer(t, answer(200, "ok"))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	action := `restart", "service": "payments-db`
	_, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL, "payload": map[string]any{
		"service": "checkout-api", "action": action, "run": "run-1",
	}}}).Complete(context.Background(), promptRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"service": "checkout-api", "action": action, "run": "run-1"}
	if got := srv.last(t).json(t); !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}
}

// TestWebhookBodyChoice: payload and a prompt_template cannot both be the
// body; a prompt that renders to whitespace is no body.
func TestWebhookBodyChoice(t *testing.T) {
	cases := []struct {
		name    string
		cfg     map[string]any
		prompt  string
		body    string // sent; "" with errText: nothing sent
		ctype   string
		errText string
	}{
		{name: "prompt only is sent as written", cfg: map[string]any{}, prompt: `{"a": "b"}`, body: `{"a": "b"}`, ctype: "application/json"},
		{name: "payload with an empty prompt", cfg: map[string]any{"payload": map[string]any{"a": "b"}}, prompt: "", body: `{"a":"b"}`, ctype: "application/json"},
		{name: "payload with a blank prompt", cfg: map[string]any{"payload": map[string]any{"a": "b"}}, prompt: " \n\t", body: `{"a":"b"}`, ctype: "application/json"},
		{name: "payload with a one-character prompt", cfg: map[string]any{"payload": map[string]any{"a": "b"}}, prompt: "x",
			errText: "webhook: executor_config.payload and prompt_template both give the request body"},
		{name: "payload as form fields", cfg: map[string]any{"content_type": "application/x-www-form-urlencoded", "payload": map[string]any{"b": "two words", "a": int64(1)}},
			body: "a=1&b=two+words", ctype: "application/x-www-form-urlencoded"},
		{name: "payload as a +json type", cfg: map[string]any{"content_type": "application/vnd.api+json", "payload": []any{"x"}}, body: `["x"]`, ctype: "application/vnd.api+json"},
		{name: "DELETE sends the payload", cfg: map[string]any{"method": "DELETE", "payload": map[string]any{"id": "j-1"}}, body: `{"id":"j-1"}`, ctype: "application/json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, "ok"))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			cfg := map[string]any{"url": srv.URL}
			for k, v := range c.cfg {
				cfg[k] = v
			}
			_, err := provider(t, reg, Call{Executor: Webhook, Config: cfg}).Complete(context.Background(), promptRequest(c.prompt))
			if c.errText != "" {
				assertFault(t, err, fault.NameConfigError, c.errText)
				if n := len(srv.seen()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			req := srv.last(t)
			if string(req.body) != c.body || req.header.Get("Content-Type") != c.ctype {
				t.Errorf("body %q, Content-Type %q; want %q, %q", req.body, req.header.Get("Content-Type"), c.body, c.ctype)
			}
		})
	}
}

// TestPayloadSecrets: ${NAME} written in a payload resolves, as anywhere
// in executor_config; "$${", which the runner makes of a "${" a rendered
// value brought in, stays literal.
func TestPayloadSecrets(t *testing.T) {
	srv := newServer(t, answer(200, "ok"))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	_, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL, "payload": map[string]any{
		"token": "${TOKEN}", "echo": "$${API_KEY}",
	}}}).Complete(context.Background(), promptRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	body := srv.last(t).json(t)
	if body["token"] != testToken || body["echo"] != "${API_KEY}" {
		t.Errorf("body = %v", body)
	}
}

// TestPayloadConfig: what CheckConfig (validate) and Provider (each call)
// say about payload, for both executors that take one.
func TestPayloadConfig(t *testing.T) {
	cases := []struct {
		name     string
		executor string
		cfg      map[string]any
		key, msg string // the one error expected; "" for none
		liquid   bool   // cfg holds Liquid, which the runner renders before Provider
	}{
		{"webhook mapping", Webhook, map[string]any{"payload": map[string]any{"a": "{{ steps.x.summary }}"}}, "", "", false},
		{"webhook list", Webhook, map[string]any{"payload": []any{"a", int64(1)}}, "", "", false},
		{"webhook null is no payload", Webhook, map[string]any{"payload": nil}, "", "", false},
		{"webhook string", Webhook, map[string]any{"payload": `{"a": "{{ x }}"}`}, "payload", "want a mapping or a list, got a string (a text body is the prompt_template)", false},
		{"webhook number", Webhook, map[string]any{"payload": int64(3)}, "payload", "want a mapping or a list, got a number", false},
		{"webhook boolean", Webhook, map[string]any{"payload": true}, "payload", "want a mapping or a list, got a boolean", false},
		{"webhook GET with payload", Webhook, map[string]any{"method": "get", "payload": map[string]any{}}, "payload", "a GET request has no body: use POST, PUT, PATCH or DELETE, or drop payload", false},
		{"webhook GET without payload", Webhook, map[string]any{"method": "GET"}, "", "", false},
		{"webhook method from a template", Webhook, map[string]any{"method": "{{ vars.method }}", "payload": map[string]any{}}, "", "", true},
		{"webhook payload as text", Webhook, map[string]any{"content_type": "text/plain", "payload": map[string]any{"a": "b"}}, "payload", `a mapping or a list cannot be sent as "text/plain"`, false},
		{"webhook content type from a template", Webhook, map[string]any{"content_type": "{{ vars.ct }}", "payload": map[string]any{"a": "b"}}, "", "", true},
		{"webhook form list", Webhook, map[string]any{"content_type": "application/x-www-form-urlencoded", "payload": []any{"a"}}, "payload", "form fields need a mapping, got a list", false},
		{"webhook nested form field", Webhook, map[string]any{"content_type": "application/x-www-form-urlencoded", "payload": map[string]any{"a": []any{}}}, "payload.a", "form fields must be scalars", false},
		{"notify list", Notify, map[string]any{"payload": []any{map[string]any{"text": "x"}}}, "", "", false},
		{"notify string", Notify, map[string]any{"payload": "disk full"}, "", "", false},
		{"notify string under GET", Notify, map[string]any{"method": "GET", "payload": "x"}, "payload", "a GET request has no body", false},
		{"notify GET without payload", Notify, map[string]any{"method": "GET"}, "", "", false},
		{"notify number", Notify, map[string]any{"payload": 2.5}, "payload", "want a mapping, a list or a string, got a number", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := map[string]any{"url": "https://hooks.example.com/x"}
			for k, v := range c.cfg {
				cfg[k] = v
			}
			var errs []*settings.ConfigIssue
			for _, err := range settings.CheckConfig(c.executor, cfg) {
				var is *settings.ConfigIssue
				if !errors.As(err, &is) {
					t.Fatalf("%T is not a *ConfigIssue", err)
				}
				if !is.Warning {
					errs = append(errs, is)
				}
			}
			if c.key == "" {
				if len(errs) != 0 {
					t.Errorf("issues %v, want none", errs)
				}
				if _, err := NewRegistry(Deps{}).Provider(Call{Executor: c.executor, Config: cfg}); err != nil && !c.liquid {
					t.Errorf("Provider: %v", err)
				}
				return
			}
			if len(errs) != 1 || errs[0].Key != c.key || !strings.Contains(errs[0].Msg, c.msg) {
				t.Fatalf("issues = %v, want one on %q: %q", errs, c.key, c.msg)
			}
			_, perr := NewRegistry(Deps{}).Provider(Call{Executor: c.executor, Config: cfg})
			// Provider reads the configuration after Liquid, before
			// secrets: the same issue stops the call.
			if perr == nil || fault.Name(perr) != fault.NameConfigError || !strings.Contains(perr.Error(), "executor_config."+c.key+": ") {
				t.Errorf("Provider error = %v, want a ConfigError on executor_config.%s", perr, c.key)
			}
		})
	}
}

// TestPayloadAtCallTime: values that only take their type at run time
// are checked when the call is made: a method resolved from a secret.
func TestPayloadAtCallTime(t *testing.T) {
	srv := newServer(t, answer(200, "ok"))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client(), Secrets: secret.Env(func(string) string { return "get" })})
	p := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL, "method": "${METHOD}", "payload": map[string]any{"a": "b"}}})
	_, err := p.Complete(context.Background(), promptRequest(""))
	assertFault(t, err, fault.NameConfigError, "executor_config.payload: a GET request has no body")
	if n := len(srv.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
