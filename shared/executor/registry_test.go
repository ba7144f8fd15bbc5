package executor

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
)

func TestKnownAndNames(t *testing.T) {
	want := []string{"anthropic", "bedrock", "gateway", "human", "notify", "openclaw", "pipeline", "scripted", "webhook"}
	if got := settings.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v", got)
	}
	reg := NewRegistry(Deps{})
	for _, n := range want {
		if !settings.Known(n) || !reg.Known(n) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	for _, n := range []string{"", "openai", "Gateway", "shell"} {
		if settings.Known(n) {
			t.Errorf("Known(%q) = true", n)
		}
	}
}

func TestProviderRefusals(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	cases := []struct {
		call Call
		msg  string
	}{
		{Call{Executor: "shell"}, `unknown executor "shell"`},
		{Call{Executor: Human}, "task token"},
		{Call{Executor: Pipeline, Config: map[string]any{"pipeline": "child"}}, "child pipeline"},
		{Call{Executor: OpenClaw}, `"openclaw" runs an agent on the OpenClaw gateway: its step carries no resolved agent`},
		{Call{Executor: Gateway, Config: map[string]any{"base_url": "ftp://x", "model": 3}}, "executor_config.base_url: want an absolute http or https URL"},
		{Call{Executor: Webhook, Config: map[string]any{}}, "executor_config.url: required"},
	}
	for _, c := range cases {
		_, err := reg.Provider(c.call)
		assertFault(t, err, fault.NameConfigError, c.msg)
	}
	// Human and pipeline steps are run by the state machine, yet their
	// configurations validate.
	if errs := settings.CheckConfig(Human, map[string]any{"timeout_seconds": 300, "approvers": []any{"oncall-lead"}}); len(errs) != 0 {
		t.Errorf("human config: %v", errs)
	}
	if errs := settings.CheckConfig(Pipeline, map[string]any{"pipeline": "child", "context": map[string]any{"summary": "x"}}); len(errs) != 0 {
		t.Errorf("pipeline config: %v", errs)
	}
}

func TestCheckConfig(t *testing.T) {
	type issue struct {
		key     string
		warning bool
		msg     string
	}
	cases := []struct {
		name     string
		executor string
		cfg      map[string]any
		want     []issue
	}{
		{"gateway ok", Gateway, map[string]any{"base_url": "https://api.openai.com/v1", "model": "gpt-4o", "api_key": "${OPENAI_API_KEY}", "temperature": 0.3, "max_tokens": 500, "structured_output": "json_object", "timeout_seconds": 60}, nil},
		{"gateway missing keys", Gateway, map[string]any{}, []issue{{"model", false, "required"}, {"base_url", true, "not set, and OPENAI_BASE_URL is not set here"}}},
		{"gateway bad values", Gateway, map[string]any{"base_url": "api.openai.com", "model": "m", "temperature": 3, "max_tokens": 1.5, "structured_output": "yaml", "headers": []any{"x"}, "timeout_seconds": -1},
			[]issue{{"base_url", false, "want an absolute http or https URL"}, {"headers", false, "want a mapping of header names to strings, got a list"},
				{"max_tokens", false, "want a whole number, got 1.5"}, {"structured_output", false, `want one of json_schema, json_object, off, got "yaml"`},
				{"temperature", false, "must be between 0 and 2, got 3"}, {"timeout_seconds", false, "must be between 0 and 604800, got -1"}}},
		{"gateway templates stand for any type", Gateway, map[string]any{"base_url": "{{ vars.gateway_url }}", "model": "{{ vars.model }}", "temperature": "{{ vars.temp }}", "max_tokens": "${MAX_TOKENS}", "api_key": "${KEY}"}, nil},
		{"gateway unknown key warns", Gateway, map[string]any{"base_url": "http://localhost:11434/v1", "model": "llama3", "agent": "triage"}, []issue{{"agent", true, "unknown key, ignored"}}},
		{"gateway extra_body cannot override messages", Gateway, map[string]any{"base_url": "http://h", "model": "m", "extra_body": map[string]any{"messages": []any{}, "seed": 1}}, []issue{{"extra_body.messages", false, "cannot be overridden"}}},
		{"gateway header name", Gateway, map[string]any{"base_url": "http://h", "model": "m", "headers": map[string]any{"Bad Header": "x", "X-Ok": 3}}, []issue{{"headers", false, `"Bad Header" is not a valid header name`}}},
		{"anthropic ok", Anthropic, map[string]any{"api_key": "${ANTHROPIC_API_KEY}", "model": "claude-sonnet-4-5", "max_tokens": 2048, "tool_use": false}, nil},
		{"anthropic missing key", Anthropic, map[string]any{"model": "claude"}, []issue{{"api_key", false, "required"}}},
		{"anthropic temperature above 1", Anthropic, map[string]any{"api_key": "k", "model": "m", "temperature": 1.5, "tool_use": "sometimes"},
			[]issue{{"temperature", false, "must be between 0 and 1"}, {"tool_use", false, `want true or false, got "sometimes"`}}},
		{"bedrock ok", Bedrock, map[string]any{"model": "anthropic.claude-3-5-haiku-20241022-v1:0", "max_tokens": 1000, "top_p": 0.9, "additional_model_request_fields": map[string]any{"top_k": 5}}, nil},
		{"bedrock api key is not a thing", Bedrock, map[string]any{"model": "m", "api_key": "x"}, []issue{{"api_key", true, "unknown key, ignored"}}},
		{"webhook ok", Webhook, map[string]any{"url": "https://hooks.example.com/x", "method": "patch", "headers": map[string]any{"Authorization": "Bearer ${T}"}, "content_type": "application/json", "timeout_seconds": 10}, nil},
		{"webhook bad", Webhook, map[string]any{"url": "not a url", "method": "TRACE", "content_type": "???"},
			[]issue{{"content_type", false, `"???" is not a media type`}, {"method", false, `want one of GET, POST, PUT, PATCH, DELETE, got "TRACE"`}, {"url", false, "want an absolute http or https URL"}}},
		{"webhook url from a secret", Webhook, map[string]any{"url": "${SLACK_WEBHOOK_URL}"}, nil},
		{"notify ok", Notify, map[string]any{"url": "https://hooks.slack.com/services/${SLACK_PATH}", "payload": map[string]any{"text": "{{ steps.triage.summary }}"}}, nil},
		{"notify payload number", Notify, map[string]any{"url": "https://x", "payload": 1}, []issue{{"payload", false, "want a mapping, a list or a string, got a number"}}},
		{"pipeline needs its child", Pipeline, map[string]any{"context": "x"}, []issue{{"context", false, "want a mapping, got a string"}, {"pipeline", false, "required"}}},
		{"scripted takes no keys", Scripted, map[string]any{"file": "x"}, []issue{{"file", true, "unknown key, ignored"}}},
		{"openclaw", OpenClaw, map[string]any{"agent": "x", "session_key": "agent:x:{{pipeline_run_id}}", "model": "m", "thinking_level": "xhigh"}, nil},
		{"openclaw needs its agent", OpenClaw, map[string]any{"thinking_level": "huge", "timeout": 3}, []issue{
			{"agent", false, "required"}, {"thinking_level", false, `want one of off, minimal, low, medium, high, xhigh, got "huge"`}, {"timeout", true, "unknown key, ignored"}}},
		{"unknown executor", "shell", nil, []issue{{"", false, `unknown executor "shell"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []issue
			for _, err := range settings.CheckConfig(c.executor, c.cfg) {
				var is *settings.ConfigIssue
				if !errors.As(err, &is) {
					t.Fatalf("%T is not a *ConfigIssue", err)
				}
				got = append(got, issue{is.Key, is.Warning, is.Msg})
			}
			if len(got) != len(c.want) {
				t.Fatalf("issues = %+v\nwant %+v", got, c.want)
			}
			for i := range got {
				if got[i].key != c.want[i].key || got[i].warning != c.want[i].warning || !strings.Contains(got[i].msg, c.want[i].msg) {
					t.Errorf("issue %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestConfigIssueMessage(t *testing.T) {
	if got := (&settings.ConfigIssue{Key: "base_url", Msg: "required"}).Error(); got != "executor_config.base_url: required" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&settings.ConfigIssue{Msg: "x"}).Error(); got != "executor_config: x" {
		t.Errorf("Error() = %q", got)
	}
}

// TestRuntimeConfigIsCheckedAfterSecrets: a ${NAME} that resolves to a
// value of the wrong kind fails at call time, without quoting the value.
func TestRuntimeConfigIsCheckedAfterSecrets(t *testing.T) {
	reg, _ := newRegistry(t, Deps{})
	p := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": "${TOKEN}", "model": "m", "max_tokens": "${API_KEY}"}})
	_, err := p.Complete(context.Background(), request())
	assertFault(t, err, fault.NameConfigError, "executor_config.base_url: want an absolute http or https URL", "executor_config.max_tokens: want a number, got a string")
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header []string
		want   time.Duration
	}{
		{[]string{"Retry-After", "7"}, 7 * time.Second},
		{[]string{"Retry-After", "0.5"}, 500 * time.Millisecond},
		{[]string{"Retry-After", "Sun, 01 Mar 2026 12:00:30 GMT"}, 30 * time.Second},
		{[]string{"Retry-After", "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{[]string{"Retry-After", "-3"}, 0},
		{[]string{"Retry-After", "soon"}, 0},
		{[]string{"Retry-After", "999999999"}, 24 * time.Hour},
		{[]string{"Retry-After-Ms", "250", "Retry-After", "1"}, 250 * time.Millisecond},
		{nil, 0},
	}
	for _, c := range cases {
		h := http.Header{}
		for i := 0; i+1 < len(c.header); i += 2 {
			h.Set(c.header[i], c.header[i+1])
		}
		if got := retryAfter(h, now); got != c.want {
			t.Errorf("retryAfter(%v) = %s, want %s", c.header, got, c.want)
		}
	}
}

func TestCallContext(t *testing.T) {
	cases := []struct{ step, own, want time.Duration }{
		{0, 0, 0},
		{5 * time.Second, 0, 5 * time.Second},
		{0, 7 * time.Second, 7 * time.Second},
		{5 * time.Second, 7 * time.Second, 5 * time.Second},
		{9 * time.Second, 7 * time.Second, 7 * time.Second},
	}
	for _, c := range cases {
		ctx, cancel, limit := callContext(context.Background(), c.step, c.own)
		_, has := ctx.Deadline()
		cancel()
		if limit != c.want || has != (c.want > 0) {
			t.Errorf("callContext(%s, %s) = %s (deadline %v), want %s", c.step, c.own, limit, has, c.want)
		}
	}
}

func TestStepTimeoutBeatsExecutorTimeout(t *testing.T) {
	srv := newServer(t, stall)
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Webhook, Timeout: 100 * time.Millisecond, Config: map[string]any{"url": srv.URL, "timeout_seconds": 30}})
	start := time.Now()
	_, err := p.Complete(context.Background(), request())
	assertFault(t, err, fault.NameExecutorTimeout, "within 100ms")
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	p = provider(t, reg, Call{Executor: Webhook, Timeout: time.Minute, Config: map[string]any{"url": srv.URL, "timeout_seconds": 0.1}})
	_, err = p.Complete(context.Background(), request())
	assertFault(t, err, fault.NameExecutorTimeout, "within 100ms")
}
