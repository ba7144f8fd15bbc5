package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// hostileHook is a webhook target that answers a redirect to where its
// owner wants; other is the server it redirects to, keeping what it got.
type hostileHook struct {
	mu    sync.Mutex
	heads []http.Header
}

func (h *hostileHook) got() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.heads...)
}

func newRedirector(t *testing.T, location func(r *http.Request) string, sink *hostileHook) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/answer" {
			_, _ = io.Copy(io.Discard, r.Body)
			sink.mu.Lock()
			sink.heads = append(sink.heads, r.Header.Clone())
			sink.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"confidence": 0.9, "summary": "answered after the redirect", "next_step_context": ""}`)
			return
		}
		w.Header().Set("Location", location(r))
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAttackWebhookRedirect: a webhook that answers with a redirect to
// another origin (another host, port or scheme) cannot make the step send
// the pipeline's secret headers and body there: the redirect is refused,
// with an error that says so; a redirect within the same origin is
// followed.
func TestAttackWebhookRedirect(t *testing.T) {
	const token = "tok-redirect-5150"
	var elsewhere hostileHook
	other := newRedirector(t, func(*http.Request) string { return "/answer" }, &elsewhere)
	var home hostileHook
	var self string
	self = newRedirector(t, func(r *http.Request) string {
		if r.URL.Path == "/away" {
			return other + "/answer"
		}
		return self + "/answer"
	}, &home)

	for _, tc := range []struct {
		name, path string
		status     string
		reason     string
		home, away int
	}{
		{name: "another origin", path: "/away", status: "failed", reason: "redirect to " + other + " not followed", home: 0, away: 0},
		{name: "same origin", path: "/here", status: "completed", home: 1, away: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			homeBefore, awayBefore := len(home.got()), len(elsewhere.got())
			p := writeFile(t, "p.yaml", `name: p
stage: production
steps:
  - name: call
    executor: webhook
    executor_config:
      url: "`+self+tc.path+`"
      headers: {X-Api-Key: "${AUTOMATION_TOKEN}"}
      payload: {action: restart}
`)
			code, out, errOut := runEnv(t, map[string]string{"AUTOMATION_TOKEN": token}, "run", "--json", "--dir", t.TempDir(), p)
			var rep runReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if rep.Status != tc.status || !strings.Contains(rep.Reason, tc.reason) {
				t.Errorf("status %s, reason %q; want %s with %q", rep.Status, rep.Reason, tc.status, tc.reason)
			}
			if n := len(home.got()) - homeBefore; n != tc.home {
				t.Errorf("the webhook's own origin got %d requests after the redirect, want %d", n, tc.home)
			}
			if n := len(elsewhere.got()) - awayBefore; n != tc.away {
				t.Errorf("another origin got %d requests, want %d", n, tc.away)
			}
			for _, h := range append(home.got(), elsewhere.got()...) {
				if h.Get("X-Api-Key") != "" && h.Get("X-Api-Key") != token {
					t.Errorf("X-Api-Key %q", h.Get("X-Api-Key"))
				}
			}
			if strings.Contains(out+errOut, token) {
				t.Error("the token appears in the run's output")
			}
		})
	}
}

// TestAttackRunnerRequestRedirect: the requests the runner sends itself,
// a webhook check and an on_failure webhook, follow a redirect no further
// than their own origin either.
func TestAttackRunnerRequestRedirect(t *testing.T) {
	const token = "tok-redirect-6160"
	var elsewhere, home hostileHook
	other := newRedirector(t, func(*http.Request) string { return "/answer" }, &elsewhere)
	var self string
	self = newRedirector(t, func(r *http.Request) string {
		if strings.HasPrefix(r.URL.Path, "/away") {
			return other + "/answer?token=" + r.Header.Get("X-Api-Key")
		}
		return self + "/answer"
	}, &home)
	for _, tc := range []struct {
		name, path string
		status     string
		home       int
	}{
		{name: "another origin", path: "/away", status: "failed", home: 0},
		{name: "same origin", path: "/here", status: "completed", home: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			homeBefore, awayBefore := len(home.got()), len(elsewhere.got())
			p := writeFile(t, "p.yaml", `name: p
stage: production
steps:
  - name: check
    executor: webhook
    executor_config: {url: "`+self+`/answer", payload: {a: b}}
    deterministic_checks:
      - name: probe
        type: webhook
        url: "`+self+tc.path+`/check"
        headers: {X-Api-Key: "${AUTOMATION_TOKEN}"}
        payload: {a: b}
  - name: fail
    executor: webhook
    executor_config: {url: "http://127.0.0.1:9/closed", payload: {a: b}}
    on_failure:
      policy: continue
      webhook:
        url: "`+self+tc.path+`/failure"
        headers: {X-Api-Key: "${AUTOMATION_TOKEN}"}
        payload: {a: b}
`)
			code, out, errOut := runEnv(t, map[string]string{"AUTOMATION_TOKEN": token}, "run", "--json", "--dir", t.TempDir(), p)
			var rep runReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			// The first step's own call reaches /answer at home directly.
			if n := len(home.got()) - homeBefore - 1; n != tc.home {
				t.Errorf("the requests' own origin got %d requests after a redirect, want %d", n, tc.home)
			}
			if n := len(elsewhere.got()) - awayBefore; n != 0 {
				t.Errorf("another origin got %d requests, want 0", n)
			}
			if strings.Contains(out+errOut, token) {
				t.Errorf("the token appears in the run's output: %s %s", out, errOut)
			}
			if tc.status == "failed" && rep.Status != "escalated" && rep.Status != "failed" {
				t.Errorf("status %s (%s): a check whose redirect was refused must fail", rep.Status, rep.Reason)
			}
		})
	}
}
