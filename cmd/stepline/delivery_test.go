package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAttackWebhookAnswerDeliversOnce: whatever a webhook target answers
// with a 2xx, the request is sent once — a webhook is a side effect, and
// asking again would deliver it again. A short markup body (what many
// endpoints answer) is a delivery like any other text, not a placeholder
// the contract rejects; an answer shaped like LLMOutput that the contract
// rejects fails the step after that one delivery.
func TestAttackWebhookAnswerDeliversOnce(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		status, reason, summary string
	}{
		{name: "markup", body: "<ok/>", contentType: "text/html", status: "completed", summary: "Webhook delivered: HTTP 200"},
		{name: "html page", body: "<html><body>accepted</body></html>", contentType: "text/html", status: "completed", summary: "Webhook delivered: HTTP 200"},
		{name: "template slot", body: "{{ queued }}", contentType: "text/plain", status: "completed", summary: "Webhook delivered: HTTP 200"},
		{name: "ellipsis", body: "...", contentType: "text/plain", status: "completed", summary: "Webhook delivered: HTTP 200"},
		{name: "text", body: "queued", contentType: "text/plain", status: "completed", summary: "Webhook delivered: HTTP 200"},
		{name: "LLMOutput", body: `{"confidence": 0.9, "summary": "restarted", "next_step_context": ""}`, contentType: "application/json", status: "completed", summary: "restarted"},
		{name: "LLMOutput the contract rejects", body: `{"confidence": 0.9, "summary": "restarted", "next_step_context": "", "proceed": "maybe"}`, contentType: "application/json", status: "failed", reason: `InvalidOutput: model output rejected; proceed: wrong_type: proceed must be true or false; got the string "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				calls.Add(1)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			p := writeFile(t, "p.yaml", `name: p
stage: production
steps:
  - name: remediate
    executor: webhook
    executor_config: {url: "`+srv.URL+`/hooks/restart", payload: {service: checkout-api}}
`)
			code, out, errOut := run(t, "", "run", "--json", "--dir", t.TempDir(), p)
			var rep runReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("the webhook was delivered %d times, want once", n)
			}
			if rep.Status != tc.status || !strings.Contains(rep.Reason, tc.reason) {
				t.Errorf("status %s, reason %q; want %s with %q", rep.Status, rep.Reason, tc.status, tc.reason)
			}
			if tc.summary != "" {
				var o struct{ Summary string }
				if len(rep.Steps) != 1 || json.Unmarshal(rep.Steps[0].Output, &o) != nil || o.Summary != tc.summary {
					t.Errorf("output %s, want summary %q", out, tc.summary)
				}
			}
		})
	}
}
