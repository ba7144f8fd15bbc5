package local

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// seedSteps gives the seeded runs of s a step and a branch record.
func seedSteps(t *testing.T, s *Server) {
	t.Helper()
	for id := range seededRuns {
		for _, name := range []string{"triage", "group/branch"} {
			err := s.runner.Store.PutStep(context.Background(), store.StepRecord{RunID: id, Name: name, Attempt: 1, Status: store.StepCompleted,
				StartedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), FinishedAt: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFeedbackAccess: the feedback routes follow the runs' visibility,
// by caller, for reads and writes.
func TestFeedbackAccess(t *testing.T) {
	open, so := startServer(t, nil, HTTPLimits{})
	guarded, sg := startServer(t, testTokens, HTTPLimits{})
	seedSteps(t, so)
	seedSteps(t, sg)
	bases := []string{open, guarded, guarded, guarded, guarded, guarded}
	tokens := []string{"", "", "tok-checkout-7f3b", tokCheckout, tokPayments, tokAdmin}
	const body = `{"outcome": "correct", "notes": "right"}`
	routes := []struct {
		name, method, path, body string
		want                     [6]int
	}{
		{"checkout's run feedback", "GET", "/runs/run-checkout/feedback", "", [6]int{200, 401, 401, 200, 404, 200}},
		{"give checkout's run feedback", "POST", "/runs/run-checkout/feedback", body, [6]int{200, 401, 401, 200, 404, 200}},
		{"give payments' step feedback", "POST", "/runs/run-payments/steps/triage/feedback", body, [6]int{200, 401, 401, 404, 200, 200}},
		{"a branch's feedback", "POST", "/runs/run-checkout/steps/group/branch/feedback", body, [6]int{200, 401, 401, 200, 404, 200}},
		{"a run without a team", "POST", "/runs/run-teamless/feedback", body, [6]int{200, 401, 401, 404, 404, 200}},
		{"a run that does not exist", "POST", "/runs/run-ghost/feedback", body, [6]int{404, 401, 401, 404, 404, 404}},
		{"a step that does not exist", "POST", "/runs/run-checkout/steps/ghost/feedback", body, [6]int{404, 401, 401, 404, 404, 404}},
		{"feedback by DELETE", "DELETE", "/runs/run-checkout/feedback", "", [6]int{405, 401, 401, 405, 405, 405}},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			for i := range bases {
				ct := ""
				if rt.body != "" {
					ct = "application/json"
				}
				got := do(t, rt.method, bases[i]+rt.path, tokens[i], ct, rt.body)
				if got.status != rt.want[i] {
					t.Errorf("caller %d: %s %s = %d, want %d: %s", i, rt.method, rt.path, got.status, rt.want[i], got.body)
				}
			}
		})
	}
}

// TestFeedbackAPI: upsert, reads, and the bodies refused with 400.
func TestFeedbackAPI(t *testing.T) {
	base, srv := startServer(t, testTokens, HTTPLimits{})
	seedSteps(t, srv)
	read := func(path string) map[string]any {
		t.Helper()
		a := do(t, "GET", base+path, tokCheckout, "", "")
		if a.status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.status, a.body)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(a.body), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if got := read("/runs/run-checkout/feedback"); got["feedback"] != nil {
		t.Errorf("feedback before any: %v", got)
	}
	if a := do(t, "POST", base+"/runs/run-checkout/feedback", tokCheckout, "application/json", `{"outcome": "partial", "notes": "half"}`); a.status != 200 ||
		!strings.Contains(a.body, `"outcome": "partial"`) {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	do(t, "POST", base+"/runs/run-checkout/feedback/", tokCheckout, "application/json", `{"outcome": "incorrect"}`)
	got := read("/runs/run-checkout/feedback")["feedback"].(map[string]any)
	if got["outcome"] != "incorrect" || got["notes"] != nil || got["submitted_at"] == nil {
		t.Errorf("after the upsert: %v", got)
	}
	if f := read("/runs/run-checkout/steps/triage/feedback"); f["feedback"] != nil {
		t.Errorf("a step took the run's feedback: %v", f)
	}
	do(t, "POST", base+"/runs/run-checkout/steps/group/branch/feedback", tokCheckout, "application/json", `{"outcome": "correct"}`)
	if f := read("/runs/run-checkout/steps/group/branch/feedback")["feedback"].(map[string]any); f["outcome"] != "correct" {
		t.Errorf("branch feedback: %v", f)
	}
	sf, err := srv.runner.Store.GetStepFeedback(context.Background(), "run-checkout", "group/branch")
	if err != nil || sf == nil || sf.Outcome != store.OutcomeCorrect {
		t.Errorf("stored %v, %v", sf, err)
	}
	bad := []struct{ name, body string }{
		{"empty", ""},
		{"not JSON", "outcome=correct"},
		{"unknown outcome", `{"outcome": "right"}`},
		{"no outcome", `{"notes": "x"}`},
		{"outcome not a string", `{"outcome": 1}`},
		{"notes not a string", `{"outcome": "correct", "notes": {"a": 1}}`},
		{"an extra field", `{"outcome": "correct", "by": "me"}`},
		{"two objects", `{"outcome": "correct"} {"outcome": "incorrect"}`},
		{"an array", `[{"outcome": "correct"}]`},
		{"notes above the limit", `{"outcome": "correct", "notes": "` + strings.Repeat("n", store.MaxNotesBytes+1) + `"}`},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			if a := do(t, "POST", base+"/runs/run-checkout/feedback", tokCheckout, "application/json", b.body); a.status != 400 {
				t.Errorf("%d %s, want 400", a.status, a.body)
			}
		})
	}
	if a := do(t, "POST", base+"/runs/run-checkout/feedback", tokCheckout, "application/json", `{"outcome": "correct", "notes": "`+strings.Repeat("n", store.MaxNotesBytes)+`"}`); a.status != 200 {
		t.Errorf("notes at the limit: %d", a.status)
	}
	if a := do(t, "POST", base+"/runs/run-checkout/feedback", tokCheckout, "application/json", strings.Repeat(" ", MaxFeedbackBodyBytes+1)); a.status != 413 {
		t.Errorf("a body over the limit: %d", a.status)
	}
	if got := read("/runs/run-checkout/feedback")["feedback"].(map[string]any); got["outcome"] != "correct" {
		t.Errorf("refused bodies changed the feedback: %v", got)
	}
}
