package executor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// answerOf decodes a delivery answer.
func answerOf(t *testing.T, c llmoutput.Completion) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(c.Content), &m); err != nil {
		t.Fatalf("content is not JSON: %v\n%s", err, c.Content)
	}
	return m
}

func TestWebhookRequest(t *testing.T) {
	srv := newServer(t, answer(202, "queued", "Content-Type", "text/plain"))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Webhook, Step: "open-ticket", Stage: StageTesting, Config: map[string]any{
		"url":          srv.URL + "/hooks/${TOKEN}/in?src=stepline",
		"method":       "put",
		"headers":      map[string]any{"Authorization": "Bearer ${API_KEY}", "X-Run": "r-1"},
		"content_type": "text/plain; charset=utf-8",
	}})
	c, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last(t)
	if got.method != "PUT" || got.path != "/hooks/"+testToken+"/in" || got.query != "src=stepline" {
		t.Errorf("request = %s %s?%s", got.method, got.path, got.query)
	}
	if got.header.Get("Authorization") != "Bearer "+testKey || got.header.Get("X-Run") != "r-1" || got.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("headers = %v", got.header)
	}
	if string(got.body) != "Triage the alert: disk full on db-1." {
		t.Errorf("body = %q, want the rendered prompt", got.body)
	}
	ans := answerOf(t, c)
	if ans["confidence"] != 1.0 || ans["summary"] != "Webhook delivered: HTTP 202" || ans["next_step_context"] != "queued" {
		t.Errorf("answer = %v", ans)
	}
	if c.Provider != Webhook || c.FinishReason != llmoutput.FinishStop {
		t.Errorf("provider/finish = %q %q", c.Provider, c.FinishReason)
	}
	var raw map[string]any
	if err := json.Unmarshal(c.Raw, &raw); err != nil || raw["status_code"] != 202.0 || raw["body"] != "queued" {
		t.Errorf("raw = %s", c.Raw)
	}
}

func TestWebhookAnswers(t *testing.T) {
	long := strings.Repeat("é", 300)
	cases := []struct {
		name     string
		body     string
		verbatim bool
		context  string
	}{
		{name: "LLMOutput body is the answer", body: ` {"confidence":0.4,"summary":"ticket exists","next_step_context":"JIRA-1","proceed":false} `, verbatim: true},
		{name: "plain text", body: "ok", context: "ok"},
		{name: "empty body", body: "", context: ""},
		{name: "JSON that is not an LLMOutput", body: `{"status":"ok"}`, context: `{"status":"ok"}`},
		{name: "confidence out of range", body: `{"confidence":1.5,"summary":"s","next_step_context":""}`, context: `{"confidence":1.5,"summary":"s","next_step_context":""}`},
		{name: "long body is cut at 200 characters", body: long, context: strings.Repeat("é", 200)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, answer(200, c.body))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			got, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL}}).Complete(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			if c.verbatim {
				if got.Content != strings.TrimSpace(c.body) {
					t.Errorf("content = %q, want the body verbatim", got.Content)
				}
				return
			}
			ans := answerOf(t, got)
			if ans["summary"] != "Webhook delivered: HTTP 200" || ans["next_step_context"] != c.context || ans["confidence"] != 1.0 {
				t.Errorf("answer = %v", ans)
			}
			if !isLLMOutput([]byte(got.Content)) {
				t.Errorf("the synthesised answer is not an LLMOutput: %s", got.Content)
			}
		})
	}
}

func TestWebhookEchoIsRedacted(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
	}
	srv := newServer(t, echo)
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	c, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "Bearer ${API_KEY}"}}}).Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, c.Content)
	assertNoSecret(t, string(c.Raw))
	if !strings.Contains(c.Content, "you sent Bearer [REDACTED]") {
		t.Errorf("content = %s", c.Content)
	}
}

func TestIsLLMOutput(t *testing.T) {
	cases := map[string]bool{
		`{"confidence":0.9,"summary":"s","next_step_context":""}`:            true,
		`{"confidence":0,"summary":"s","next_step_context":"x","extra":[1]}`: true,
		`{"confidence":1,"summary":"s","next_step_context":"x"}`:             true,
		`{"confidence":"0.9","summary":"s","next_step_context":""}`:          false,
		`{"confidence":-0.1,"summary":"s","next_step_context":""}`:           false,
		`{"confidence":1.01,"summary":"s","next_step_context":""}`:           false,
		`{"confidence":0.9,"summary":"","next_step_context":""}`:             false,
		`{"confidence":0.9,"summary":"  ","next_step_context":""}`:           false,
		`{"confidence":0.9,"summary":3,"next_step_context":""}`:              false,
		`{"confidence":0.9,"summary":"s"}`:                                   false,
		`{"confidence":0.9,"summary":"s","next_step_context":null}`:          false,
		`{"confidence":0.9,"summary":"s","next_step_context":{}}`:            false,
		`{"summary":"s","next_step_context":""}`:                             false,
		`[{"confidence":0.9,"summary":"s","next_step_context":""}]`:          false,
		`{"confidence":0.9,"summary":"s","next_step_context":""} trailing`:   false,
		`{"confidence":1e400,"summary":"s","next_step_context":""}`:          false,
		``: false,
	}
	for in, want := range cases {
		if got := isLLMOutput([]byte(in)); got != want {
			t.Errorf("isLLMOutput(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestNotify(t *testing.T) {
	t.Run("muted in testing, nothing resolved or sent", func(t *testing.T) {
		srv := newServer(t, answer(200, "ok"))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client(), Secrets: secretNone()})
		c, err := provider(t, reg, Call{Executor: Notify, Stage: StageTesting, Config: map[string]any{
			"url": srv.URL + "/${MISSING}", "payload": map[string]any{"text": "disk full"},
		}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(srv.seen()); n != 0 {
			t.Errorf("%d requests sent in the testing stage", n)
		}
		ans := answerOf(t, c)
		if ans["summary"] != "Notification muted (stage testing)" || ans["muted"] != true || ans["confidence"] != 1.0 {
			t.Errorf("answer = %v", ans)
		}
	})

	t.Run("json payload", func(t *testing.T) {
		srv := newServer(t, answer(200, `{"ok":true}`))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		c, err := provider(t, reg, Call{Executor: Notify, Stage: StageProduction, Config: map[string]any{
			"url":     srv.URL + "/services/${TOKEN}",
			"headers": map[string]any{"Authorization": "Bearer ${API_KEY}"},
			"payload": map[string]any{"text": "disk full on db-1", "channel": "#ops", "blocks": []any{map[string]any{"type": "section", "count": 2}}, "secret_ref": "x-${TOKEN}"},
		}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		got := srv.last(t)
		if got.method != "POST" || got.path != "/services/"+testToken || got.header.Get("Content-Type") != "application/json" || got.header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("request = %s %s %v", got.method, got.path, got.header)
		}
		body := got.json(t)
		if body["text"] != "disk full on db-1" || body["channel"] != "#ops" || body["secret_ref"] != "x-"+testToken {
			t.Errorf("payload = %v", body)
		}
		if blocks, _ := body["blocks"].([]any); len(blocks) != 1 {
			t.Errorf("blocks = %v", body["blocks"])
		}
		ans := answerOf(t, c)
		if ans["summary"] != "Notification delivered: HTTP 200" || ans["next_step_context"] != `{"ok":true}` {
			t.Errorf("answer = %v", ans)
		}
	})

	t.Run("form payload", func(t *testing.T) {
		srv := newServer(t, answer(204, ""))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		c, err := provider(t, reg, Call{Executor: Notify, Stage: StageProduction, Config: map[string]any{
			"url": srv.URL, "content_type": "application/x-www-form-urlencoded",
			"payload": map[string]any{"b": "two words", "a": 1, "c": true},
		}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if got := string(srv.last(t).body); got != "a=1&b=two+words&c=true" {
			t.Errorf("body = %q", got)
		}
		if ans := answerOf(t, c); ans["summary"] != "Notification delivered: HTTP 204" {
			t.Errorf("answer = %v", ans)
		}
	})

	t.Run("string payload", func(t *testing.T) {
		srv := newServer(t, answer(200, "ok"))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		_, err := provider(t, reg, Call{Executor: Notify, Stage: StageProduction, Config: map[string]any{
			"url": srv.URL, "content_type": "text/plain", "payload": "disk full",
		}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.last(t); string(got.body) != "disk full" || got.header.Get("Content-Type") != "text/plain" {
			t.Errorf("request = %q %v", got.body, got.header)
		}
	})

	// A payload its content type cannot carry is found when the
	// configuration is read (validate, and Provider before any call).
	t.Run("mapping payload as text is a config error", func(t *testing.T) {
		srv := newServer(t, answer(200, "ok"))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		_, err := reg.Provider(Call{Executor: Notify, Stage: StageProduction, Config: map[string]any{
			"url": srv.URL, "content_type": "text/plain", "payload": map[string]any{"a": "b"},
		}})
		assertFault(t, err, fault.NameConfigError, `cannot be sent as "text/plain"`)
		if len(srv.seen()) != 0 {
			t.Error("request sent")
		}
	})

	t.Run("nested form field is a config error", func(t *testing.T) {
		reg, _ := newRegistry(t, Deps{})
		_, err := reg.Provider(Call{Executor: Notify, Stage: StageProduction, Config: map[string]any{
			"url": "http://127.0.0.1:1", "content_type": "application/x-www-form-urlencoded", "payload": map[string]any{"a": map[string]any{}},
		}})
		assertFault(t, err, fault.NameConfigError, "payload.a: form fields must be scalars")
	})
}

// TestDeliveredPlaceholderBody: a 2xx body whose start the contract would
// reject as a placeholder leaves next_step_context empty, so the delivery
// is accepted; other text is kept.
func TestDeliveredPlaceholderBody(t *testing.T) {
	for body, want := range map[string]string{
		"<ok/>":                             "",
		"<html>accepted</html>":             "",
		"{{ queued }}":                      "",
		"...":                               "",
		"string":                            "",
		"queued":                            "queued",
		"<ok/> and more":                    "<ok/> and more",
		"<" + strings.Repeat("a", 78) + ">": "", // 80 characters: a slot
		"<" + strings.Repeat("a", 79) + ">": "<" + strings.Repeat("a", 79) + ">",
	} {
		c := webhookAnswer(200, []byte(body), false)
		ans := answerOf(t, c)
		if ans["next_step_context"] != want || ans["summary"] != "Webhook delivered: HTTP 200" {
			t.Errorf("body %q: answer %v, want next_step_context %q", body, ans, want)
		}
		if err := llmoutput.Parse(c.Content, llmoutput.ParseOptions{}).Err(); err != nil {
			t.Errorf("body %q: the answer does not parse: %v", body, err)
		}
	}
}
