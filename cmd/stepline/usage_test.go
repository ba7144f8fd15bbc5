package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAttackReportedUsage: a model API that reports token counts no model
// spends (negative, or beyond what JSON numbers carry exactly) fails the
// call as a malformed reply, named and typed, instead of breaking the
// step's record or the run's bookkeeping; the largest count taken is
// recorded as it came.
func TestAttackReportedUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in, out    string
		status     string
		reason     string
		recordedIn int64
	}{
		{name: "in range", in: "1000000000000", out: "0", status: "completed", recordedIn: 1000000000000},
		{name: "negative", in: "-1000000", out: "5", status: "failed", reason: "ExecutorUnavailable: gateway: malformed reply: it reports -1000000 input tokens (want 0 to 1000000000000)"},
		{name: "above the bound", in: "1", out: "1000000000001", status: "failed", reason: "ExecutorUnavailable: gateway: malformed reply: it reports 1000000000001 output tokens (want 0 to 1000000000000)"},
		{name: "int64 max", in: "9223372036854775807", out: "9223372036854775807", status: "failed", reason: "malformed reply: it reports 9223372036854775807 input tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				content, _ := json.Marshal(`{"confidence": 0.9, "summary": "ok", "next_step_context": ""}`)
				io.WriteString(w, `{"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": `+string(content)+`}}], "usage": {"prompt_tokens": `+tc.in+`, "completion_tokens": `+tc.out+`}}`)
			}))
			defer srv.Close()
			p := writeFile(t, "p.yaml", `name: p
steps:
  - {name: a, executor: gateway, executor_config: {base_url: "`+srv.URL+`/v1", model: m, api_key: ""}}
  - {name: b, executor: gateway, executor_config: {base_url: "`+srv.URL+`/v1", model: m, api_key: ""}}
`)
			dir := t.TempDir()
			code, out, errOut := run(t, "", "run", "--json", "--dir", dir, p)
			var rep runReport
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if rep.Status != tc.status || !strings.Contains(rep.Reason, tc.reason) || strings.Contains(rep.Reason, "wrapError") {
				t.Errorf("status %s, reason %q; want %s with %q", rep.Status, rep.Reason, tc.status, tc.reason)
			}
			if tc.recordedIn == 0 {
				return
			}
			code, show, _ := run(t, "", "show", "--json", "--dir", dir, rep.RunID)
			if code != 0 || !strings.Contains(show, `"input_tokens": 1000000000000,`) {
				t.Errorf("show: exit %d; want the steps recorded with %d input tokens:\n%s", code, tc.recordedIn, show)
			}
		})
	}
}

// TestAttackScriptedUsage: a responses file's token counts have the same
// range as a model API's: one beyond it is refused where it is written.
func TestAttackScriptedUsage(t *testing.T) {
	p := writeFile(t, "p.yaml", "name: p\nsteps: [{name: a, executor: scripted}]\n")
	reply := `'{"confidence": 0.9, "summary": "s", "next_step_context": ""}'`
	for _, tc := range []struct {
		tokens string
		ok     bool
	}{
		{"1000000000000", true},
		{"1000000000001", false},
		{"9223372036854775807", false},
		{"-1", false},
	} {
		r := writeFile(t, "r.yaml", "a:\n  - {reply: "+reply+", input_tokens: "+tc.tokens+"}\n")
		code, out, errOut := run(t, "", "run", "--json", "--dir", t.TempDir(), "--responses", r, p)
		if tc.ok {
			if code != 0 || !strings.Contains(out, `"status": "completed"`) {
				t.Errorf("%s tokens: exit %d: %s %s", tc.tokens, code, out, errOut)
			}
			continue
		}
		if code != exitFailed || !strings.Contains(errOut, r+":2:") || !strings.Contains(errOut, "input_tokens: want a whole number of tokens from 0 to 1000000000000") {
			t.Errorf("%s tokens: exit %d, stderr %q", tc.tokens, code, errOut)
		}
	}
}
