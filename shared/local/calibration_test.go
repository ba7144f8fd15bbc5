package local

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// calibrated is a pipeline whose diagnose step (answering 0.85) is
// calibrated with the block given, then a report.
func calibrated(block, prompt string) string {
	return `name: calibrated
steps:
  - name: diagnose
    executor: scripted
    prompt_template: "` + prompt + `"
    confidence_threshold: 0.75
    calibration: ` + block + `
  - name: report
    executor: scripted
    prompt_template: "Report: {{ steps.diagnose.summary }}"
`
}

// calibrationRunner opens a local runner over scripted replies that answer
// every run: diagnose says 0.85, report 0.9.
func calibrationRunner(t *testing.T) (*Runner, string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("diagnose:\n")
	for range 20 {
		b.WriteString("  - '{\"confidence\": 0.85, \"summary\": \"disk full\", \"next_step_context\": \"\"}'\n")
	}
	b.WriteString("report:\n")
	for range 20 {
		b.WriteString("  - '{\"confidence\": 0.9, \"summary\": \"reported\", \"next_step_context\": \"\"}'\n")
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	r, err := Open(context.Background(), Config{
		Dir:   filepath.Join(dir, "state"),
		Clock: clock,
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses}),
				Notifications: &notify.Dispatcher{HTTP: http.DefaultClient}, Now: clock.Now}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

// calRun runs src and returns the outcome and diagnose's record.
func calRun(t *testing.T, r *Runner, dir, src string) (Outcome, store.StepRecord) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "calibrated.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := r.Run(ctx, path, json.RawMessage(`{"source": "test", "labels": {"service": "api"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := r.Store.ListSteps(ctx, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Name == "diagnose" {
			return o, s
		}
	}
	t.Fatalf("run %s has no diagnose record", o.RunID)
	return o, store.StepRecord{}
}

// wantGate checks a run's status and diagnose's combined trust, C and
// calibration counts.
func wantGate(t *testing.T, o Outcome, rec store.StepRecord, status store.RunStatus, combined float64, c string, n int, validated bool) {
	t.Helper()
	rep := rec.Trust
	if o.Status != status {
		t.Errorf("run %s (%s), want %s", o.Status, o.Reason, status)
	}
	if rep == nil || rep.Calibration == nil {
		t.Fatalf("diagnose has no calibration report: %+v", rep)
	}
	if rep.CombinedTrust != combined || signal(rep.Signals.C) != c || rep.Calibration.N != n || rep.Calibration.Validated != validated {
		t.Errorf("combined %v C %s n %d validated %v; want %v %s %d %v", rep.CombinedTrust, signal(rep.Signals.C), rep.Calibration.N, rep.Calibration.Validated,
			combined, c, n, validated)
	}
	if rep.Signals.S != 0.85 || rep.Version != store.TrustReportVersion {
		t.Errorf("S %v version %d", rep.Signals.S, rep.Version)
	}
}

func stepFeedback(t *testing.T, r *Runner, runID string, o store.Outcome) {
	t.Helper()
	if err := r.Store.PutStepFeedback(context.Background(), runID, "diagnose", store.Feedback{Outcome: o, SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestCalibrationScenario: an enforcing step through the compiled state
// machine, as labels accumulate in its bin (0.8..0.9): below n_min it is
// uncalibrated and its confidence stands; at n_min the bin's mean
// replaces it (escalating); at n_min+1 the mean reaches the threshold;
// an edited prompt starts a new bucket, uncalibrated again.
func TestCalibrationScenario(t *testing.T) {
	r, dir := calibrationRunner(t)
	ctx := context.Background()
	block := "{enforce: true, n_min: 3, bin_width: 0.1, on_uncalibrated: proceed}"
	src := calibrated(block, "Diagnose {{ labels.service }}")

	o1, rec := calRun(t, r, dir, src)
	wantGate(t, o1, rec, store.RunCompleted, 0.85, "null", 0, false)
	if rec.Trust.Gate.Policy != store.PolicyTrustVector || rec.PromptHash != store.PromptHash("Diagnose {{ labels.service }}") {
		t.Errorf("policy %s prompt hash %q", rec.Trust.Gate.Policy, rec.PromptHash)
	}
	o2, _ := calRun(t, r, dir, src)
	stepFeedback(t, r, o1.RunID, store.OutcomeCorrect)
	stepFeedback(t, r, o2.RunID, store.OutcomeCorrect)

	// n_min-1 = 2 labels.
	o3, rec := calRun(t, r, dir, src)
	wantGate(t, o3, rec, store.RunCompleted, 0.85, "null", 2, false)
	// The run's feedback labels its step too.
	if err := r.Store.PutRunFeedback(ctx, o3.RunID, store.Feedback{Outcome: store.OutcomeIncorrect, SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// n_min = 3 labels, mean 2/3 < 0.75: escalated.
	o4, rec := calRun(t, r, dir, src)
	wantGate(t, o4, rec, store.RunEscalated, 0.666666667, "0.666666667", 3, true)
	if !strings.Contains(o4.Reason, "calibrated: bin 0.8..0.9 has mean label 0.666666667 over 3 labelled executions") {
		t.Errorf("reason %q", o4.Reason)
	}
	stepFeedback(t, r, o4.RunID, store.OutcomeCorrect)

	// n_min+1 = 4 labels, mean 3/4: at the threshold, completed.
	o5, rec := calRun(t, r, dir, src)
	wantGate(t, o5, rec, store.RunCompleted, 0.75, "0.75", 4, true)

	// A step's feedback outranks its run's: o3 was incorrect by its run.
	stepFeedback(t, r, o3.RunID, store.OutcomeCorrect)
	o6, rec := calRun(t, r, dir, src)
	wantGate(t, o6, rec, store.RunCompleted, 1, "1", 4, true)

	// An edited prompt is another bucket: no history.
	o7, rec := calRun(t, r, dir, calibrated(block, "Diagnose {{ labels.service }} now"))
	wantGate(t, o7, rec, store.RunCompleted, 0.85, "null", 0, false)
	if rec.Trust.Calibration.BucketKey == "" || rec.Trust.Calibration.Bucket.PromptHash != store.PromptHash("Diagnose {{ labels.service }} now") {
		t.Errorf("bucket %+v", rec.Trust.Calibration.Bucket)
	}
}

// TestCalibrationUncalibrated: the two policies for a bin without
// enough labels, on a fresh install.
func TestCalibrationUncalibrated(t *testing.T) {
	tests := []struct {
		name     string
		block    string
		status   store.RunStatus
		combined float64
		c        string
		policy   string
	}{
		{"proceed leaves the trust", "{enforce: true}", store.RunCompleted, 0.85, "null", store.PolicyTrustVector},
		{"escalate forces 0: a fresh install escalates", "{enforce: true, on_uncalibrated: escalate}", store.RunEscalated, 0, "0", store.PolicyTrustVector},
		{"escalate in shadow only records C", "{on_uncalibrated: escalate}", store.RunCompleted, 0.85, "0", store.PolicyLegacyConfidence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := calibrationRunner(t)
			o, rec := calRun(t, r, dir, calibrated(tt.block, "Diagnose"))
			wantGate(t, o, rec, tt.status, tt.combined, tt.c, 0, false)
			if rec.Trust.Gate.Policy != tt.policy {
				t.Errorf("policy %s, want %s", rec.Trust.Gate.Policy, tt.policy)
			}
			if tt.status == store.RunEscalated && !strings.Contains(o.Reason, "uncalibrated: bin 0.8..0.9 has 0 of the 20 labelled executions it needs, and on_uncalibrated is escalate") {
				t.Errorf("reason %q", o.Reason)
			}
		})
	}
}
