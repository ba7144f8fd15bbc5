package main

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

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

var testKey = []byte("approval-unit-test-signing-key")

// hook records the bodies posted to it and answers status.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newHook(t *testing.T, status int) *hook {
	t.Helper()
	h := &hook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

// tokenIn returns the approval token of the first link to /approvals/ in s.
func tokenIn(t *testing.T, s string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, "https://api.example.com/approvals/")
	if !ok {
		t.Fatalf("no approval link in %q", s)
	}
	end := strings.IndexFunc(rest, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end < 0 {
		end = len(rest)
	}
	return rest[:end]
}

func TestLinkNotifier(t *testing.T) {
	webhook := func(url, template string) []pipeline.Action {
		return []pipeline.Action{{Name: ActionApproval, Notices: []pipeline.Notification{{Channel: pipeline.ChannelWebhook, Template: template, Config: map[string]any{"url": url}}}}}
	}
	ok, broken := newHook(t, http.StatusOK), newHook(t, http.StatusInternalServerError)
	tests := []struct {
		name          string
		stage         pipeline.Stage
		actions       []pipeline.Action
		hook          *hook
		wantSent      bool // the hook received the link
		wantLoggedURL bool // the function's log holds the link
	}{
		{name: "no approval action: the link is logged", stage: pipeline.StageProduction,
			actions: []pipeline.Action{{Name: "escalate", Notices: []pipeline.Notification{{Channel: pipeline.ChannelLog}}}}, wantLoggedURL: true},
		{name: "approval webhook: the link is sent, not logged", stage: pipeline.StageProduction,
			actions: webhook(ok.srv.URL, `{"text": "{{ approval_message }} {{ approval_url }}"}`), hook: ok, wantSent: true},
		{name: "default template carries the link", stage: pipeline.StageProduction,
			actions: webhook(ok.srv.URL, ""), hook: ok, wantSent: true},
		{name: "delivery failed: the link is logged", stage: pipeline.StageProduction,
			actions: webhook(broken.srv.URL, ""), hook: broken, wantSent: true, wantLoggedURL: true},
		{name: "stage testing: muted, the message goes to the log", stage: pipeline.StageTesting,
			actions: webhook(ok.srv.URL, `link {{ approval_url }}`), wantLoggedURL: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, nil))
			now := time.Now()
			signer := &approval.Signer{Key: testKey}
			n := &linkNotifier{
				links:         &approval.Service{Signer: signer},
				baseURL:       "https://api.example.com/",
				notifications: &notify.Dispatcher{Logger: logger},
				log:           logger,
			}
			before := 0
			if tc.hook != nil {
				before = len(tc.hook.received())
			}
			p := task.Pipeline{Name: "deploy", Stage: tc.stage, Notifications: tc.actions}
			ctx := withFacts(context.Background(), facts{pipeline: p, trigger: json.RawMessage(`{"labels": {"service": "api"}}`)})
			a := store.Approval{ID: "approval-1", RunID: "run-1", Step: "approve", Pipeline: "deploy", Message: "Restart api?",
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := n.NotifyApproval(ctx, a, string(tc.stage)); err != nil {
				t.Fatal(err)
			}
			if tc.hook != nil {
				got := tc.hook.received()[before:]
				if sent := len(got) == 1; sent != tc.wantSent {
					t.Fatalf("hook received %q, want sent=%v", got, tc.wantSent)
				}
				if id, err := signer.Verify(tokenIn(t, got[0])); err != nil || id != "approval-1" {
					t.Errorf("sent link carries %q, %v; want approval-1", id, err)
				}
				if !strings.Contains(got[0], "Restart api?") {
					t.Errorf("sent message %q lacks the approval message", got[0])
				}
			}
			if logged := strings.Contains(logs.String(), "https://api.example.com/approvals/"); logged != tc.wantLoggedURL {
				t.Errorf("link logged = %v, want %v:\n%s", logged, tc.wantLoggedURL, logs.String())
			}
			if tc.wantLoggedURL {
				if id, err := signer.Verify(tokenIn(t, logs.String())); err != nil || id != "approval-1" {
					t.Errorf("logged link carries %q, %v", id, err)
				}
			}
		})
	}
}

func TestLinkNotifierWithoutKey(t *testing.T) {
	n := &linkNotifier{links: &approval.Service{Signer: &approval.Signer{Key: []byte("short")}}, baseURL: "https://x", log: slog.New(slog.DiscardHandler)}
	err := n.NotifyApproval(context.Background(), store.Approval{ID: "a", ExpiresAt: time.Now().Add(time.Hour)}, "production")
	if !errors.Is(err, approval.ErrNoKey) {
		t.Errorf("err = %v, want ErrNoKey", err)
	}
}

func TestWithDefaultTemplateKeepsThePipeline(t *testing.T) {
	p := task.Pipeline{Notifications: []pipeline.Action{
		{Name: ActionApproval, Notices: []pipeline.Notification{{Channel: "log"}, {Channel: "log", Template: "own"}}},
		{Name: "escalate", Notices: []pipeline.Notification{{Channel: "log"}}},
	}}
	q := withDefaultTemplate(p)
	if p.Notifications[0].Notices[0].Template != "" {
		t.Error("the original pipeline was changed")
	}
	if got := q.Notifications[0].Notices; got[0].Template != DefaultApprovalTemplate || got[1].Template != "own" {
		t.Errorf("approval notices = %+v", got)
	}
	if q.Notifications[1].Notices[0].Template != "" {
		t.Error("another action got the approval template")
	}
}

func TestApprovalTasks(t *testing.T) {
	var seen facts
	next := func(ctx context.Context, req task.Request) (task.Response, error) {
		seen, _ = factsFrom(ctx)
		return task.Response{Status: "waiting", Step: "approve"}, nil
	}
	h := approvalTasks(next)
	tests := []struct {
		name    string
		mode    string
		wantErr string // fault name
	}{
		{name: "approval", mode: task.ModeApproval},
		{name: "step is refused", mode: task.ModeStep, wantErr: "ConfigError"},
		{name: "empty mode is refused", mode: "", wantErr: "ConfigError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen = facts{}
			req := task.Request{Mode: tc.mode, Pipeline: task.Pipeline{Name: "deploy"}, Trigger: json.RawMessage(`{"source": "manual"}`)}
			resp, err := h(context.Background(), req)
			if tc.wantErr != "" {
				if fault.Name(err) != tc.wantErr {
					t.Fatalf("err = %v (%s), want %s", err, fault.Name(err), tc.wantErr)
				}
				if seen.pipeline.Name != "" {
					t.Error("a refused Task reached the handler")
				}
				return
			}
			if err != nil || resp.Status != "waiting" {
				t.Fatalf("resp = %+v, %v", resp, err)
			}
			if seen.pipeline.Name != "deploy" || string(seen.trigger) != `{"source": "manual"}` {
				t.Errorf("facts = %+v", seen)
			}
		})
	}
}
