package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// TestTrustOutput runs the agent example, whose investigation has an
// enforced grounding judge and a webhook check, offline: run's progress,
// run --json and show all say how its gate decided.
func TestTrustOutput(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), args, offlineEnv(t, &out, &errOut))
		if code != exitOK || errOut.Len() > 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	example := []string{"--dir", state, "--event", "../../events/incident-declared.trigger.json",
		"--responses", "../../pipelines/responses/sre-investigation.yaml", "../../pipelines/sre-investigation.yaml"}
	out := run(append([]string{"run"}, example...)...)
	if !regexp.MustCompile(`(?m)^\s+trust 0\.75 \(trust_vector\): G 0\.75, D passed$`).MatchString(out) {
		t.Errorf("run's progress has no trust line:\n%s", out)
	}

	js := run(append([]string{"run", "--json"}, example...)...)
	var rep runReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	tr := rep.Steps[0].TrustReport
	if rep.Steps[0].Name != "investigate" || tr == nil || tr.CombinedTrust != 0.75 || tr.Gate.Policy != store.PolicyTrustVector ||
		*tr.Signals.G != 0.75 || !*tr.Signals.D || tr.Signals.C != nil || len(tr.DeterministicChecks) != 1 || tr.Grounding == nil || len(tr.Grounding.Claims) != 4 {
		t.Fatalf("run --json trust report: %s", js)
	}
	for _, want := range []string{`"trust_report"`, `"C": null`, `"V": null`, `"combined_trust": 0.75`} {
		if !strings.Contains(js, want) {
			t.Errorf("run --json lacks %s", want)
		}
	}

	show := run("show", "--dir", state, rep.RunID)
	for _, re := range []string{
		`(?m)^\s+trust 0\.75 \(trust_vector\): S 0\.86, V 0\.80 independent/minimum, S after V 0\.80, G 0\.75 enforced, C null \(uncalibrated: 0 of 20 labelled\), D passed$`,
		`(?m)^\s+check pool-size\s+webhook passed\s+HTTP 200: \{"service": "checkout-api", "max_connections": 10`,
	} {
		if !regexp.MustCompile(re).MatchString(show) {
			t.Errorf("show does not match %s:\n%s", re, show)
		}
	}
}

func TestTrustLine(t *testing.T) {
	no := false
	tests := []struct {
		name string
		r    *store.TrustReport
		want string
	}{
		{"confidence only: nothing to add", &store.TrustReport{Signals: store.TrustSignals{S: 0.8, SAfterV: 0.8}, CombinedTrust: 0.8,
			Gate: store.TrustGate{Policy: store.PolicyLegacyConfidence}}, ""},
		{"a veto, a soft-failed judge and a failed check", &store.TrustReport{
			Signals:       store.TrustSignals{S: 0.9, SAfterV: 0.55, V: ptrTo(0.55), VMode: "independent", VCombinationStrategy: "veto", VVetoFloor: ptrTo(0.6), D: &no},
			CombinedTrust: 0,
			Grounding:     &store.GroundingResult{Enforced: true, Error: "ExecutorUnavailable: http 503"},
			DeterministicChecks: []store.CheckResult{{Name: "health", Type: "webhook", Outcome: store.CheckPassed},
				{Name: "pool", Type: "webhook", Outcome: store.CheckError}},
			Gate: store.TrustGate{Policy: store.PolicyTrustVector}},
			`trust 0.00 (trust_vector): S 0.90, V 0.55 independent/veto floor 0.60, S after V 0.55, G null (judge failed: ExecutorUnavailable: http 503), D failed (check "pool" error)`},
		{"nothing to check, a check pending", &store.TrustReport{Signals: store.TrustSignals{S: 0.8, SAfterV: 0.8}, CombinedTrust: 0.8,
			Grounding:           &store.GroundingResult{Note: "nothing to check: the step left no tool result in its trace"},
			DeterministicChecks: []store.CheckResult{{Name: "signoff", Type: "human", Outcome: store.CheckPending}},
			Gate:                store.TrustGate{Policy: store.PolicyTrustVector}},
			`trust 0.80 (trust_vector): S 0.80, G null (nothing to check: the step left no tool result in its trace), D pending (check "signoff")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trustLine(tt.r); got != tt.want {
				t.Errorf("trustLine =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	var b bytes.Buffer
	p := newProgress(env{stdout: &b})
	d, _ := json.Marshal(map[string]any{"output": map[string]any{"Payload": task.Response{Status: task.StatusCheck, Step: "investigate",
		Check: &task.CheckAt{Index: 1, Name: "signoff"}, Trust: &task.TrustSummary{Policy: store.PolicyTrustVector, Combined: 0.86, D: nil}}}})
	p.event("run-1", store.HistoryEvent{Type: "TaskSucceeded", State: "investigate", Detail: d})
	if want := "  investigate                  waits for  check \"signoff\" (trust 0.86 (trust_vector))\n"; b.String() != want {
		t.Errorf("progress %q, want %q", b.String(), want)
	}
}

func ptrTo(v float64) *float64 { return &v }
