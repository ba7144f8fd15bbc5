package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/task"
)

// capture is an HTTP server that records every request it gets.
type capture struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []captured
}

type captured struct {
	method, path, contentType, auth string
	body                            string
}

func newCapture(t *testing.T, status int) *capture {
	t.Helper()
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, captured{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)})
		c.mu.Unlock()
		w.WriteHeader(status)
		if status >= 400 {
			_, _ = w.Write([]byte("invalid_payload"))
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

type fakeSNS struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeSNS) Publish(_ context.Context, topic, subject, msg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, topic+"|"+subject+"|"+msg)
	return f.err
}

func env(m map[string]string) secret.Resolver {
	return secret.Env(func(k string) string { return m[k] })
}

func float(f float64) *float64 { return &f }

// escalation is the context of an escalated triage step.
func escalation() Context {
	return Context{
		RunID:               "run-0123456789abcdef01234567",
		CurrentStep:         "first-line",
		Status:              task.StatusEscalated,
		Trigger:             json.RawMessage(`{"source":"alertmanager","severity":"critical","summary":"p99 high","labels":{"service":"checkout-api"},"team":"checkout","metadata":{"external_url":"http://am:9093"}}`),
		Steps:               map[string]json.RawMessage{"first-line": json.RawMessage(`{"confidence":0.62,"summary":"probably the deploy","raw_response":"secret-ish"}`)},
		EscalationReason:    "low_confidence",
		Confidence:          float(0.62),
		ConfidenceThreshold: float(0.75),
		StepSummary:         "probably the deploy",
		Contradicts:         []any{"error rate is flat"},
		ProceedReason:       "",
	}
}

const fullTemplate = `{{ pipeline_name }}|{{ pipeline_run_id }}|{{ current_step }}|{{ escalation_reason }}|{{ confidence }}<{{ confidence_threshold }}|{{ step_summary }}|{{ contradicts | join: "," }}|{{ labels.service }}|{{ team }}|{{ severity }}|{{ external_url }}|{{ oncall }}|{{ steps.first_line.summary }}|{{ steps.first_line.raw_response }}|{{ action }}|{{ _testing }}`

const fullRendered = `sre-alert-triage|run-0123456789abcdef01234567|first-line|low_confidence|0.62<0.75|probably the deploy|error rate is flat|checkout-api|checkout|critical|http://am:9093|#checkout-oncall|probably the deploy||escalate|false`

func triagePipeline(stage pipeline.Stage, notices ...pipeline.Notification) task.Pipeline {
	return task.Pipeline{
		Name:    "sre-alert-triage",
		Stage:   stage,
		Vars:    map[string]string{"oncall": "#checkout-oncall"},
		Include: []string{"severity", "metadata.external_url"},
		Notifications: []pipeline.Action{
			{Name: "escalate", Notices: notices},
			{Name: "stopped", Notices: []pipeline.Notification{{Channel: "log", Template: "stopped"}}},
		},
	}
}

func quietLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestFireSends(t *testing.T) {
	hook := newCapture(t, http.StatusOK)
	slack := newCapture(t, http.StatusOK)
	sns := &fakeSNS{}
	var logs bytes.Buffer
	var recorded []Delivery
	d := &Dispatcher{
		Secrets: env(map[string]string{"SLACK_WEBHOOK_URL": slack.URL + "/services/T0/B0/xyzzy", "OPS_TOKEN": "ops-token-9f8e7d"}),
		SNS:     sns,
		Logger:  quietLogger(&logs),
		Record:  func(_ context.Context, dl Delivery) { recorded = append(recorded, dl) },
	}
	p := triagePipeline(pipeline.StageProduction,
		pipeline.Notification{Channel: "webhook", Template: fullTemplate, Config: map[string]any{
			"url": hook.URL + "/hooks/escalations", "headers": map[string]any{"Authorization": "Bearer ${OPS_TOKEN}"},
		}},
		pipeline.Notification{Channel: "webhook", Template: `{"run": "{{ pipeline_run_id }}", "step": "{{ current_step }}"}`, Config: map[string]any{
			"url": hook.URL + "/hooks/json", "method": "put",
		}},
		pipeline.Notification{Channel: "slack", Template: ":rotating_light: {{ pipeline_name }} escalated at {{ current_step }}", Config: map[string]any{"url": "${SLACK_WEBHOOK_URL}"}},
		pipeline.Notification{Channel: "log", Template: "escalated {{ pipeline_run_id }}", Config: map[string]any{"level": "error", "logger": "ops"}},
		pipeline.Notification{Channel: "sns", Config: map[string]any{"topic_arn": "arn:aws:sns:eu-west-1:123456789012:oncall"}},
	)
	ds := d.Fire(context.Background(), p, "escalate", escalation())
	if len(ds) != 5 || len(recorded) != 5 {
		t.Fatalf("%d deliveries, %d recorded", len(ds), len(recorded))
	}
	for i, dl := range ds {
		if dl.Err != nil || dl.Muted || dl.Via != dl.Channel || dl.Action != "escalate" || dl.RunID != "run-0123456789abcdef01234567" {
			t.Errorf("delivery %d: %+v", i, dl)
		}
	}

	reqs := hook.requests()
	if len(reqs) != 2 {
		t.Fatalf("webhook got %d requests", len(reqs))
	}
	if r := reqs[0]; r.method != "POST" || r.path != "/hooks/escalations" || r.auth != "Bearer ops-token-9f8e7d" ||
		r.body != fullRendered || r.contentType != "text/plain; charset=utf-8" {
		t.Errorf("webhook request %+v\nwant body %s", r, fullRendered)
	}
	if r := reqs[1]; r.method != "PUT" || r.contentType != "application/json" ||
		r.body != `{"run": "run-0123456789abcdef01234567", "step": "first-line"}` {
		t.Errorf("JSON webhook request %+v", r)
	}
	if ds[0].Status != 200 || ds[0].Target != hook.URL+"/hooks/escalations" {
		t.Errorf("delivery %+v", ds[0])
	}

	sr := slack.requests()
	if len(sr) != 1 || sr[0].path != "/services/T0/B0/xyzzy" || sr[0].contentType != "application/json" {
		t.Fatalf("slack requests %+v", sr)
	}
	var sm map[string]string
	if err := json.Unmarshal([]byte(sr[0].body), &sm); err != nil || sm["text"] != ":rotating_light: sre-alert-triage escalated at first-line" {
		t.Errorf("slack body %s (%v)", sr[0].body, err)
	}
	if ds[2].Target != "${SLACK_WEBHOOK_URL}" {
		t.Errorf("slack target %q, want the configured reference", ds[2].Target)
	}

	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), `message="escalated run-0123456789abcdef01234567"`) || !strings.Contains(logs.String(), "logger=ops") {
		t.Errorf("log channel wrote:\n%s", logs.String())
	}
	want := "arn:aws:sns:eu-west-1:123456789012:oncall|Stepline: sre-alert-triage escalate|sre-alert-triage run run-0123456789abcdef01234567: escalate at step first-line: probably the deploy"
	if len(sns.calls) != 1 || sns.calls[0] != want {
		t.Errorf("sns calls %q\nwant %q", sns.calls, want)
	}
	if strings.Contains(logs.String(), "ops-token-9f8e7d") || strings.Contains(logs.String(), "xyzzy") {
		t.Error("a secret reached the log")
	}

	if got := d.Fire(context.Background(), p, "rejected", escalation()); got != nil {
		t.Errorf("an action without notifications delivered %+v", got)
	}
	if len(hook.requests()) != 2 {
		t.Error("another action reached the webhook")
	}
}

// TestFireTestingStage: a testing pipeline's notifications are written to
// the log; nothing reaches the network.
func TestFireTestingStage(t *testing.T) {
	hook := newCapture(t, http.StatusOK)
	sns := &fakeSNS{}
	var logs bytes.Buffer
	var recorded []Delivery
	d := &Dispatcher{
		Secrets: env(map[string]string{"HOOK": hook.URL}),
		SNS:     sns,
		Logger:  quietLogger(&logs),
		Record:  func(_ context.Context, dl Delivery) { recorded = append(recorded, dl) },
	}
	p := triagePipeline(pipeline.StageTesting,
		pipeline.Notification{Channel: "webhook", Template: "hook {{ current_step }}", Config: map[string]any{"url": hook.URL}},
		pipeline.Notification{Channel: "slack", Template: "slack {{ current_step }}", Config: map[string]any{"url": "${HOOK}"}},
		pipeline.Notification{Channel: "sns", Template: "sns {{ current_step }}", Config: map[string]any{"topic_arn": "arn:aws:sns:eu-west-1:123456789012:oncall"}},
		pipeline.Notification{Channel: "webhook", Template: "unset {{ current_step }}", Config: map[string]any{"url": "${NOT_SET}"}},
	)
	ds := d.Fire(context.Background(), p, "escalate", escalation())
	if len(ds) != 4 || len(recorded) != 4 {
		t.Fatalf("%d deliveries, %d recorded", len(ds), len(recorded))
	}
	for i, dl := range ds {
		if !dl.Muted || dl.Via != "log" || dl.Err != nil {
			t.Errorf("delivery %d: %+v", i, dl)
		}
		if !strings.Contains(logs.String(), "first-line") || !strings.Contains(logs.String(), "channel="+dl.Channel) {
			t.Errorf("delivery %d not in the log:\n%s", i, logs.String())
		}
	}
	if n := len(hook.requests()); n != 0 {
		t.Errorf("%d requests sent from a testing pipeline", n)
	}
	if len(sns.calls) != 0 {
		t.Errorf("sns published from a testing pipeline: %v", sns.calls)
	}
	if !strings.Contains(logs.String(), "notification muted: stage testing") {
		t.Errorf("log:\n%s", logs.String())
	}
}

func TestFireFailures(t *testing.T) {
	failing := newCapture(t, http.StatusBadRequest)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	const token = "tok-very-secret-42"
	tests := []struct {
		name    string
		n       pipeline.Notification
		sns     Publisher
		want    string
		wantTyp any
	}{
		{"refused", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": failing.URL}}, nil, `answered 400 Bad Request: "invalid_payload"`, nil},
		{"slack refused", pipeline.Notification{Channel: "slack", Config: map[string]any{"url": failing.URL}}, nil, "400 Bad Request", nil},
		{"timeout", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": slow.URL}}, nil, "no answer within 200ms", nil},
		{"unreachable, secret URL", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": "${DEAD_URL}"}}, nil, "connect", nil},
		{"missing secret", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": "${NOT_SET}"}}, nil, `secret "NOT_SET" is not set`, nil},
		{"missing header secret", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": failing.URL, "headers": map[string]any{"X-Key": "${NOT_SET}"}}}, nil, `header X-Key: secret "NOT_SET" is not set`, nil},
		{"no url", pipeline.Notification{Channel: "slack", Config: map[string]any{}}, nil, "config.url is missing", nil},
		{"relative url", pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": "/hooks"}}, nil, `url "/hooks" is not an absolute http(s) URL`, nil},
		{"template", pipeline.Notification{Channel: "log", Template: "{% if %}"}, nil, "notification template", &fault.TemplateError{}},
		{"unknown channel", pipeline.Notification{Channel: "pager"}, nil, `unknown channel "pager"`, nil},
		{"sns without publisher", pipeline.Notification{Channel: "sns", Config: map[string]any{"topic_arn": "arn:aws:sns:eu-west-1:1:t"}}, nil, "the sns channel works on AWS only", nil},
		{"sns without topic", pipeline.Notification{Channel: "sns", Config: map[string]any{}}, &fakeSNS{}, "config.topic_arn is missing", nil},
		{"sns refused", pipeline.Notification{Channel: "sns", Config: map[string]any{"topic_arn": "arn:aws:sns:eu-west-1:1:t"}}, &fakeSNS{err: errors.New("AuthorizationError")}, "AuthorizationError", nil},
		{"publisher panics", pipeline.Notification{Channel: "sns", Config: map[string]any{"topic_arn": "arn:aws:sns:eu-west-1:1:t"}}, panicky{}, "panic: boom", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			d := &Dispatcher{
				Secrets: env(map[string]string{"DEAD_URL": closedURL + "/hooks/" + token}),
				SNS:     tt.sns,
				Logger:  quietLogger(&logs),
				Timeout: 200 * time.Millisecond,
			}
			start := time.Now()
			ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, tt.n), "escalate", escalation())
			if time.Since(start) > 3*time.Second {
				t.Errorf("Fire took %v", time.Since(start))
			}
			if len(ds) != 1 || ds[0].Err == nil {
				t.Fatalf("deliveries %+v", ds)
			}
			msg := ds[0].Err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not say %q", msg, tt.want)
			}
			if tt.wantTyp != nil && fault.Name(ds[0].Err) != "TemplateError" {
				t.Errorf("error %T is not a TemplateError", ds[0].Err)
			}
			if strings.Contains(msg, token) || strings.Contains(logs.String(), token) {
				t.Errorf("the secret leaked: %s\n%s", msg, logs.String())
			}
			if !strings.Contains(logs.String(), "notification failed") {
				t.Errorf("failure not logged:\n%s", logs.String())
			}
		})
	}
}

type panicky struct{}

func (panicky) Publish(context.Context, string, string, string) error { panic("boom") }

func TestAction(t *testing.T) {
	tests := []struct{ status, onAbort, want string }{
		{"escalated", "page-oncall", "escalate"},
		{"failed", "page-oncall", "escalate"},
		{"aborted", "page-oncall", "page-oncall"},
		{"aborted", "", "notify"},
		{"stopped", "x", "stopped"},
		{"budget_exceeded", "x", "notify"},
		{"budget", "", "notify"},
		{"completed", "x", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := Action(tt.status, tt.onAbort); got != tt.want {
			t.Errorf("Action(%q, %q) = %q, want %q", tt.status, tt.onAbort, got, tt.want)
		}
	}
}

func TestSNSSubject(t *testing.T) {
	long := strings.Repeat("x", 150)
	tests := map[string]string{
		"Stepline: a b": "Stepline: a b",
		"line\nbreak":   "line break",
		"café ☕":        "caf? ?",
		long:            long[:100],
		"  padded\t":    "padded",
	}
	for in, want := range tests {
		if got := snsSubject(in); got != want {
			t.Errorf("snsSubject(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFireBodyIsNotExpanded: text from the event that looks like a secret
// reference is sent as written, never resolved.
func TestFireBodyIsNotExpanded(t *testing.T) {
	hook := newCapture(t, http.StatusOK)
	d := &Dispatcher{Secrets: env(map[string]string{"OPS_TOKEN": "ops-token-9f8e7d"}), Logger: quietLogger(&bytes.Buffer{})}
	c := escalation()
	c.StepSummary = "please send ${OPS_TOKEN}"
	p := triagePipeline(pipeline.StageProduction, pipeline.Notification{Channel: "webhook", Template: "{{ step_summary }}", Config: map[string]any{"url": hook.URL}})
	if ds := d.Fire(context.Background(), p, "escalate", c); len(ds) != 1 || ds[0].Err != nil {
		t.Fatalf("deliveries %+v", ds)
	}
	if r := hook.requests(); len(r) != 1 || r[0].body != "please send ${OPS_TOKEN}" {
		t.Errorf("requests %+v", r)
	}
}

// TestMutedLevel: a muted notification is logged at its config.level,
// warning when it has none, so that `stepline run` (which shows warnings
// and above) shows it; at info it is hidden there.
func TestMutedLevel(t *testing.T) {
	cases := []struct {
		name  string
		cfg   map[string]any
		shown bool // at LevelWarn, as stepline run logs
		level string
	}{
		{"no level: warning", map[string]any{"url": "https://hooks.example/x"}, true, "level=WARN"},
		{"level error", map[string]any{"url": "https://hooks.example/x", "level": "error"}, true, "level=ERROR"},
		{"level info", map[string]any{"url": "https://hooks.example/x", "level": "info"}, false, "level=INFO"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var all, warn bytes.Buffer
			p := triagePipeline(pipeline.StageTesting, pipeline.Notification{Channel: "webhook", Template: "hook", Config: c.cfg})
			(&Dispatcher{Logger: quietLogger(&all)}).Fire(context.Background(), p, "escalate", escalation())
			(&Dispatcher{Logger: slog.New(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}))}).
				Fire(context.Background(), p, "escalate", escalation())
			if !strings.Contains(all.String(), c.level+` msg="notification muted: stage testing"`) {
				t.Errorf("log:\n%s", all.String())
			}
			if got := strings.Contains(warn.String(), "notification muted"); got != c.shown {
				t.Errorf("shown at warning level: %v, want %v:\n%s", got, c.shown, warn.String())
			}
		})
	}
}

// TestFireRedirects: a webhook channel whose server redirects to another
// origin fails, and the other origin never sees the request nor its
// secret header; a redirect within the origin is followed.
func TestFireRedirects(t *testing.T) {
	const token = "tok-NOTIFY-redirect"
	other := newCapture(t, http.StatusOK)
	var mu sync.Mutex
	var keys []string
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer redirector.Close()
	d := &Dispatcher{Secrets: env(map[string]string{"KEY": token}), Logger: quietLogger(&bytes.Buffer{})}
	send := func(path string) Delivery {
		n := pipeline.Notification{Channel: "webhook", Config: map[string]any{"url": redirector.URL + path, "headers": map[string]any{"X-Api-Key": "${KEY}"}}}
		ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", escalation())
		if len(ds) != 1 {
			t.Fatalf("deliveries %+v", ds)
		}
		return ds[0]
	}
	if got := send("/away"); got.Err == nil || !strings.Contains(got.Err.Error(), "redirect not followed") || strings.Contains(got.Err.Error(), token) {
		t.Errorf("redirect elsewhere: %+v", got)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
	if got := send("/moved"); got.Err != nil {
		t.Errorf("redirect within the origin: %v", got.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 || keys[2] != token {
		t.Errorf("the redirector saw %d requests, keys %q", len(keys), keys)
	}
}
