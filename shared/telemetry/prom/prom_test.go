package prom

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stepline/stepline/shared/store"
)

func f(v float64) *float64 { return &v }

func TestObserveStep(t *testing.T) {
	m := New(func() int { return 2 }, nil)
	m.ObserveStep("p", store.StepRecord{Name: "answer", Executor: "gateway", Model: "gpt-4o", Status: store.StepCompleted,
		DurationMS: 1500, InputTokens: 120, OutputTokens: 30, CostUSD: f(0.25),
		PrimaryConfidence: f(0.9), VerifierConfidence: f(0.5), EffectiveConfidence: f(0.5)})
	m.ObserveStep("p", store.StepRecord{Name: "answer", Executor: "gateway", Model: "gpt-4o", Status: store.StepFailed, DurationMS: 200,
		PrimaryConfidence: f(0.7), VerifierConfidence: f(0.9), EffectiveConfidence: f(0.7)}) // a verifier that agreed
	m.ObserveStep("p", store.StepRecord{Name: "ok", Executor: "human", Status: store.StepWaiting}) // not an outcome
	m.RunEnded("p", store.RunCompleted)
	m.RunEnded("p", store.RunWaiting) // not an end
	m.ApprovalDecided("p", "rejected")

	want := `
# HELP stepline_steps_total Recorded step attempts, by pipeline, step, executor, agent, model and status.
# TYPE stepline_steps_total counter
stepline_steps_total{agent="",executor="gateway",model="gpt-4o",pipeline="p",status="completed",step="answer"} 1
stepline_steps_total{agent="",executor="gateway",model="gpt-4o",pipeline="p",status="failed",step="answer"} 1
# HELP stepline_tokens_total Model tokens of recorded step attempts, by pipeline, model and direction (input, output).
# TYPE stepline_tokens_total counter
stepline_tokens_total{direction="input",model="gpt-4o",pipeline="p"} 120
stepline_tokens_total{direction="output",model="gpt-4o",pipeline="p"} 30
# HELP stepline_cost_usd_total Priced cost in US dollars of recorded step attempts, by pipeline and model.
# TYPE stepline_cost_usd_total counter
stepline_cost_usd_total{model="gpt-4o",pipeline="p"} 0.25
# HELP stepline_verifier_overrides_total Recorded step attempts whose verifier lowered the primary confidence, by pipeline and step.
# TYPE stepline_verifier_overrides_total counter
stepline_verifier_overrides_total{pipeline="p",step="answer"} 1
# HELP stepline_runs_total Runs that ended, by pipeline and final status.
# TYPE stepline_runs_total counter
stepline_runs_total{pipeline="p",status="completed"} 1
# HELP stepline_runs_in_progress Runs this process is driving now.
# TYPE stepline_runs_in_progress gauge
stepline_runs_in_progress 2
# HELP stepline_approvals_decided_total Human step decisions, by pipeline and decision (approved, rejected, expired).
# TYPE stepline_approvals_decided_total counter
stepline_approvals_decided_total{decision="rejected",pipeline="p"} 1
`
	names := []string{"stepline_steps_total", "stepline_tokens_total", "stepline_cost_usd_total", "stepline_verifier_overrides_total",
		"stepline_runs_total", "stepline_runs_in_progress", "stepline_approvals_decided_total"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// The two attempts, 1.5 s and 0.2 s, in one series.
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP stepline_step_duration_seconds Duration of recorded step attempts, by pipeline, step and executor.
# TYPE stepline_step_duration_seconds histogram
`+histogram(`executor="gateway",pipeline="p",step="answer"`, 0.2, 1.5)), "stepline_step_duration_seconds"); err != nil {
		t.Error(err)
	}
}

// histogram writes the text of a series of DurationBuckets with labels
// (sorted by name) holding the values vs.
func histogram(labels string, vs ...float64) string {
	var b strings.Builder
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	for _, ub := range DurationBuckets() {
		n := 0
		for _, v := range vs {
			if v <= ub {
				n++
			}
		}
		fmt.Fprintf(&b, "stepline_step_duration_seconds_bucket{%s,le=\"%g\"} %d\n", labels, ub, n)
	}
	fmt.Fprintf(&b, "stepline_step_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels, len(vs))
	fmt.Fprintf(&b, "stepline_step_duration_seconds_sum{%s} %g\n", labels, sum)
	fmt.Fprintf(&b, "stepline_step_duration_seconds_count{%s} %d\n", labels, len(vs))
	return b.String()
}

func TestLabelsAreBounded(t *testing.T) {
	m := New(nil, nil)
	for i := range MaxLabelValues + 50 {
		m.ObserveStep("p", store.StepRecord{Name: "s", Executor: "gateway", Model: fmt.Sprintf("model-%d", i), Status: store.StepCompleted})
	}
	if n := testutil.CollectAndCount(m.steps); n != MaxLabelValues+1 {
		t.Errorf("%d step series from %d models, want %d (the rest as %q)", n, MaxLabelValues+50, MaxLabelValues+1, OtherValue)
	}
	if got := testutil.ToFloat64(m.steps.WithLabelValues("p", "s", "gateway", "", OtherValue, "completed")); got != 50 {
		t.Errorf("other: %v, want 50", got)
	}
	long := "a" + strings.Repeat("é", MaxLabelBytes) // cut inside an é
	if got := m.label("agent", long); len(got) > MaxLabelBytes || !strings.HasPrefix(long, got) || got == "" {
		t.Errorf("long value cut to %d bytes %q", len(got), got)
	}
}

func TestStepLabel(t *testing.T) {
	for in, want := range map[string]string{
		"triage":          "triage",
		"scan/0":          "scan/#",
		"scan/12/check":   "scan/#/check",
		"checks/lint":     "checks/lint",
		"v2":              "v2",
		"group/step2":     "group/step2",
		"fan/3/inner/007": "fan/#/inner/#",
	} {
		if got := stepLabel(in); got != want {
			t.Errorf("stepLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNilMetrics: a nil *Metrics counts nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.RunEnded("p", store.RunCompleted)
	m.ApprovalDecided("p", "approved")
	m.ObserveStep("p", store.StepRecord{Name: "s", Status: store.StepCompleted})
}
