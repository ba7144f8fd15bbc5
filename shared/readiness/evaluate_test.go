package readiness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const cfg = "c0ffee000001"

// evidence builds the evidence of one model step "a" from results.
func evidence(rs ...Result) Evidence {
	return Evidence{Pipeline: "p", Stage: store.StageTesting, Config: cfg, Feedback: true, Runs: len(rs),
		Units: []Unit{{Name: "a", Kind: KindStep, Executor: "gateway", Judged: true}}, Results: map[string][]Result{"a": rs}}
}

func results(n int, mk func(i int) Result) []Result {
	var rs []Result
	for i := range n {
		r := mk(i)
		if r.RunID == "" {
			r.RunID = fmt.Sprintf("run-%d", i)
		}
		if r.Config == "" {
			r.Config = cfg
		}
		if r.At.IsZero() {
			r.At = now.Add(-time.Hour)
		}
		if r.Status == "" {
			r.Status = store.StepCompleted
		}
		rs = append(rs, r)
	}
	return rs
}

func conf(c float64) *float64 { return &c }

// tier evaluates r on e and returns step a's result for tier.
func tier(t *testing.T, e Evidence, r *pipeline.Readiness, name string) TierResult {
	t.Helper()
	rep := Evaluate(e, r, now)
	for _, tr := range rep.Steps[0].Tiers {
		if tr.Tier == name {
			return tr
		}
	}
	t.Fatalf("no tier %s", name)
	return TierResult{}
}

func TestOperational(t *testing.T) {
	completed := func(n int) []Result { return results(n, func(int) Result { return Result{} }) }
	op := func(minRuns int) *pipeline.Readiness {
		return &pipeline.Readiness{Operational: &pipeline.ReadinessOperational{MinRuns: minRuns, AcceptableStatuses: []string{"completed"}}}
	}
	cases := []struct {
		name string
		rs   []Result
		r    *pipeline.Readiness
		want Verdict
		why  string
	}{
		{"min_runs-1", completed(4), op(5), InsufficientData, "4 of 4 runs ended completed; 5 needed"},
		{"min_runs", completed(5), op(5), Pass, "5 of 5 runs ended completed; 5 needed"},
		{"min_runs+1", completed(6), op(5), Pass, "6 of 6 runs ended completed; 5 needed"},
		{"other statuses do not count, never fail", append(completed(4), results(3, func(i int) Result {
			return Result{RunID: fmt.Sprintf("bad-%d", i), Status: store.StepFailed}
		})...), op(5), InsufficientData, "4 of 7 runs ended completed; 5 needed"},
		{"acceptable statuses", append(completed(3), results(2, func(i int) Result {
			return Result{RunID: fmt.Sprintf("s-%d", i), Status: store.StepStopped}
		})...), &pipeline.Readiness{Operational: &pipeline.ReadinessOperational{MinRuns: 5, AcceptableStatuses: []string{"completed", "stopped"}}},
			Pass, "5 of 5 runs ended completed or stopped; 5 needed"},
		{"max_age_days at the cutoff counts, older not", append(
			results(2, func(int) Result { return Result{At: now.Add(-3 * 24 * time.Hour)} }),
			results(1, func(int) Result { return Result{RunID: "old", At: now.Add(-3*24*time.Hour - time.Second)} })...),
			&pipeline.Readiness{Operational: &pipeline.ReadinessOperational{MinRuns: 3, MaxAgeDays: 3, AcceptableStatuses: []string{"completed"}}},
			InsufficientData, "2 of 2 runs in the last 3 days ended completed; 3 needed"},
		{"current config only", append(completed(2), results(3, func(i int) Result {
			return Result{RunID: fmt.Sprintf("old-%d", i), Config: "0ld0ld0ld0ld"}
		})...), &pipeline.Readiness{Operational: &pipeline.ReadinessOperational{MinRuns: 3, RequireCurrentConfig: true, AcceptableStatuses: []string{"completed"}}},
			InsufficientData, "2 of 2 runs ended completed (2 of config c0ffee000001; 3 of earlier configs left out); 3 needed"},
		{"not configured", completed(3), &pipeline.Readiness{}, NotConfigured, "not configured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tier(t, evidence(c.rs...), c.r, TierOperational)
			if got.Verdict != c.want || got.Why != c.why {
				t.Errorf("got %s %q, want %s %q", got.Verdict, got.Why, c.want, c.why)
			}
		})
	}
}

func TestConfidence(t *testing.T) {
	at := func(cs ...float64) []Result {
		return results(len(cs), func(i int) Result { return Result{Confidence: conf(cs[i])} })
	}
	tr := func(min float64, runs int) *pipeline.Readiness {
		return &pipeline.Readiness{Confidence: &pipeline.ReadinessConfidence{MinConfidence: min, MinRuns: runs}}
	}
	cases := []struct {
		name string
		rs   []Result
		r    *pipeline.Readiness
		want Verdict
		why  string
	}{
		{"no answers", nil, tr(0.8, 0), InsufficientData, "0 answers with a confidence; 1 needed before the mean counts"},
		{"min_runs-1", at(0.9, 0.9), tr(0.8, 3), InsufficientData, "2 answers with a confidence; 3 needed before the mean counts"},
		{"min_runs, mean above", at(0.9, 0.9, 0.9), tr(0.8, 3), Pass, "mean confidence 0.9 over 3 answers is at or above 0.8"},
		{"min_runs+1, mean at the bar", at(0.7, 0.9, 0.8, 0.8), tr(0.8, 3), Pass, "mean confidence 0.8 over 4 answers is at or above 0.8"},
		{"mean just below", at(0.79, 0.8, 0.8), tr(0.8, 3), Fail, "mean confidence 0.797 over 3 answers is below 0.8"},
		{"one run decides without min_runs", at(0.95), tr(0.9, 0), Pass, "mean confidence 0.95 over 1 answers is at or above 0.9"},
		{"failed results have no answer", append(at(0.9), results(2, func(i int) Result {
			return Result{RunID: fmt.Sprintf("f-%d", i), Status: store.StepFailed}
		})...), tr(0.8, 2), InsufficientData, "1 answers with a confidence; 2 needed before the mean counts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tier(t, evidence(c.rs...), c.r, TierConfidence)
			if got.Verdict != c.want || got.Why != c.why {
				t.Errorf("got %s %q, want %s %q", got.Verdict, got.Why, c.want, c.why)
			}
		})
	}
}

// marks builds results with step feedback outcomes, in order.
func marks(outcomes ...store.Outcome) []Result {
	return results(len(outcomes), func(i int) Result { return Result{Confidence: conf(0.9), StepFeedback: outcomes[i]} })
}

func TestAccuracy(t *testing.T) {
	const (
		ok  = store.OutcomeCorrect
		mid = store.OutcomePartial
		bad = store.OutcomeIncorrect
	)
	acc := func(min *float64, marked, human int) *pipeline.Readiness {
		return &pipeline.Readiness{Accuracy: &pipeline.ReadinessAccuracy{MinAccuracy: min, MinMarked: marked, MinHumanMarked: human, RequireCurrentConfig: true}}
	}
	cases := []struct {
		name string
		rs   []Result
		r    *pipeline.Readiness
		want Verdict
		why  string
	}{
		{"min_marked-1", marks(ok, ok), acc(conf(0.8), 3, 0), InsufficientData, "2 marked results (all of config c0ffee000001); 3 needed"},
		{"min_marked, accuracy above", marks(ok, ok, ok), acc(conf(0.8), 3, 0), Pass, "accuracy 1 over 3 marked results (all of config c0ffee000001) is at or above 0.8"},
		{"min_marked+1, accuracy at the bar", marks(ok, ok, ok, ok, bad), acc(conf(0.8), 4, 0), Pass, "accuracy 0.8 over 5 marked results (all of config c0ffee000001) is at or above 0.8"},
		{"accuracy below (partial is half)", marks(ok, mid, bad), acc(conf(0.6), 3, 0), Fail, "accuracy 0.5 over 3 marked results (all of config c0ffee000001) is below 0.6"},
		{"no min_accuracy: enough marks pass", marks(bad, bad, bad), acc(nil, 3, 0), Pass, "3 marked results (all of config c0ffee000001) (accuracy 0; no min_accuracy set)"},
		{"min_human_marked-1: a run's feedback is not the step's", append(marks(ok, ok), results(2, func(i int) Result {
			return Result{RunID: fmt.Sprintf("r-%d", i), RunFeedback: ok}
		})...), acc(conf(0.5), 3, 3), InsufficientData, "2 of 4 marked results (all of config c0ffee000001) were marked on the step by a person; 3 needed"},
		{"min_human_marked", marks(ok, ok, ok), acc(conf(0.5), 3, 3), Pass, "accuracy 1 over 3 marked results (all of config c0ffee000001) is at or above 0.5"},
		{"a failed check marks 0, step feedback wins over it", results(3, func(i int) Result {
			r := Result{DeterministicFailed: true}
			if i == 0 {
				r.StepFeedback = ok
			}
			return r
		}), acc(conf(0.5), 3, 0), Fail, "accuracy 0.333 over 3 marked results (all of config c0ffee000001) is below 0.5"},
		{"earlier configs left out", append(marks(ok, ok), results(2, func(i int) Result {
			return Result{RunID: fmt.Sprintf("o-%d", i), Config: "0ld0ld0ld0ld", StepFeedback: ok}
		})...), acc(conf(0.5), 3, 0), InsufficientData, "2 marked results (2 of config c0ffee000001; 2 of earlier configs left out); 3 needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tier(t, evidence(c.rs...), c.r, TierAccuracy)
			if got.Verdict != c.want || got.Why != c.why {
				t.Errorf("got %s %q, want %s %q", got.Verdict, got.Why, c.want, c.why)
			}
		})
	}
	t.Run("no feedback kept", func(t *testing.T) {
		e := evidence(results(2, func(int) Result { return Result{Confidence: conf(0.9)} })...)
		e.Feedback = false
		got := tier(t, e, acc(conf(0.5), 1, 0), TierAccuracy)
		if got.Verdict != InsufficientData || !strings.Contains(got.Why, "this store keeps no feedback") {
			t.Errorf("got %s %q", got.Verdict, got.Why)
		}
	})
}

func TestCalibration(t *testing.T) {
	// n results at confidence c, k of them marked correct, the rest
	// incorrect.
	bin := func(prefix string, n, k int, c float64) []Result {
		return results(n, func(i int) Result {
			o := store.OutcomeIncorrect
			if i < k {
				o = store.OutcomeCorrect
			}
			return Result{RunID: fmt.Sprintf("%s-%d", prefix, i), Confidence: conf(c), StepFeedback: o}
		})
	}
	cal := func(nMin int, w, div float64) *pipeline.Readiness {
		return &pipeline.Readiness{Calibration: &pipeline.ReadinessCalibration{NMin: nMin, BinWidth: w, MaxDivergence: div, RequireCurrentConfig: true}}
	}
	cases := []struct {
		name string
		rs   []Result
		r    *pipeline.Readiness
		want Verdict
		why  string
	}{
		{"n_min-1", bin("a", 4, 3, 0.75), cal(5, 0.5, 0.15), InsufficientData, "the fullest bin holds 4 marked results (all of config c0ffee000001); 5 needed in one bin"},
		// [0.5, 1]: midpoint 0.75; 3 of 4 right is 0.75, 0 off.
		{"n_min", bin("a", 4, 3, 0.75), cal(4, 0.5, 0.15), Pass, "1 bins hold 4 or more marked results (all of config c0ffee000001), none off by 0.15 or more"},
		{"n_min+1, just inside", bin("a", 10, 7, 0.9), cal(9, 0.5, 0.15), Pass, "1 bins hold 9 or more marked results (all of config c0ffee000001), none off by 0.15 or more"},
		// 0.6 right in the 0.5..1 bin: 0.15 off, at max_divergence: flagged.
		{"divergence at max_divergence", bin("a", 10, 6, 0.9), cal(10, 0.5, 0.15), Fail,
			"answers with confidence 0.5..1 are right 0.6 of the time over 10 marked results: 0.15 off, 0.15 allowed (all of config c0ffee000001)"},
		{"divergence above", bin("a", 10, 5, 0.9), cal(10, 0.5, 0.15), Fail,
			"answers with confidence 0.5..1 are right 0.5 of the time over 10 marked results: 0.25 off, 0.15 allowed (all of config c0ffee000001)"},
		{"a diverging bin below n_min does not fail", append(bin("a", 4, 3, 0.9), bin("b", 2, 0, 0.1)...), cal(4, 0.5, 0.15), Pass,
			"1 bins hold 4 or more marked results (all of config c0ffee000001), none off by 0.15 or more"},
		{"confidence 1 falls in the last bin", bin("a", 4, 4, 1), cal(4, 0.25, 0.15), Pass,
			"1 bins hold 4 or more marked results (all of config c0ffee000001), none off by 0.15 or more"},
		{"unmarked results do not count", append(bin("a", 3, 3, 0.8), results(5, func(i int) Result {
			return Result{RunID: fmt.Sprintf("u-%d", i), Confidence: conf(0.8)}
		})...), cal(4, 0.5, 0.3), InsufficientData, "the fullest bin holds 3 marked results (all of config c0ffee000001); 4 needed in one bin"},
		{"only the current config", append(bin("a", 3, 3, 0.8), results(3, func(i int) Result {
			return Result{RunID: fmt.Sprintf("o-%d", i), Config: "0ld0ld0ld0ld", Confidence: conf(0.8), StepFeedback: store.OutcomeCorrect}
		})...), cal(4, 0.5, 0.3), InsufficientData, "the fullest bin holds 3 marked results (3 of config c0ffee000001; 3 of earlier configs left out); 4 needed in one bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tier(t, evidence(c.rs...), c.r, TierCalibration)
			if got.Verdict != c.want || got.Why != c.why {
				t.Errorf("got %s %q, want %s %q", got.Verdict, got.Why, c.want, c.why)
			}
		})
	}
}

// TestPipelineVerdicts: the pipeline's verdict per tier is the worst of
// its steps'; judgment tiers skip steps without a confidence of their
// own; each step has an overall verdict.
func TestPipelineVerdicts(t *testing.T) {
	e := Evidence{Pipeline: "p", Stage: store.StageTesting, Config: cfg, Feedback: true,
		Units: []Unit{
			{Name: "a", Kind: KindStep, Executor: "gateway", Judged: true},
			{Name: "b", Kind: KindStep, Executor: "gateway", Judged: true},
			{Name: "ok", Kind: KindStep, Executor: "human"},
			{Name: "later", Kind: KindStep, Executor: "gateway", Judged: true},
		},
		Results: map[string][]Result{
			"a":  results(3, func(int) Result { return Result{Confidence: conf(0.9)} }),
			"b":  results(3, func(int) Result { return Result{Confidence: conf(0.5)} }),
			"ok": results(3, func(int) Result { return Result{Confidence: conf(1)} }),
		},
	}
	r := &pipeline.Readiness{
		Operational: &pipeline.ReadinessOperational{MinRuns: 3, AcceptableStatuses: []string{"completed"}},
		Confidence:  &pipeline.ReadinessConfidence{MinConfidence: 0.8, MinRuns: 3},
	}
	rep := Evaluate(e, r, now)
	want := map[string]Verdict{TierOperational: InsufficientData, TierConfidence: Fail, TierAccuracy: NotConfigured, TierCalibration: NotConfigured}
	for _, tr := range rep.Tiers {
		if tr.Verdict != want[tr.Tier] {
			t.Errorf("pipeline %s: %s (%s), want %s", tr.Tier, tr.Verdict, tr.Why, want[tr.Tier])
		}
	}
	if got := rep.Tiers[1].Why; got != `1 of 3 steps fail: step "b": mean confidence 0.5 over 3 answers is below 0.8` {
		t.Errorf("confidence why %q", got)
	}
	if got := rep.Tiers[0].Why; got != `1 of 4 steps lack data: step "later": 0 of 0 runs ended completed; 3 needed` {
		t.Errorf("operational why %q", got)
	}
	steps := map[string]string{}
	for _, s := range rep.Steps {
		steps[s.Name] = s.Verdict
	}
	wantSteps := map[string]string{"a": StepReady, "b": StepNotReady, "ok": StepReady, "later": StepNoData}
	for n, v := range wantSteps {
		if steps[n] != v {
			t.Errorf("step %s: %s, want %s", n, steps[n], v)
		}
	}
	if hv := rep.Steps[2].Tiers[1]; hv.Verdict != NotConfigured || !strings.Contains(hv.Why, "does not apply: a human step's answer carries no confidence of its own") {
		t.Errorf("human step's confidence tier: %s %q", hv.Verdict, hv.Why)
	}

	t.Run("nothing judged", func(t *testing.T) {
		e := Evidence{Pipeline: "p", Config: cfg, Units: []Unit{{Name: "ok", Kind: KindStep, Executor: "human"}}, Results: map[string][]Result{}}
		rep := Evaluate(e, &pipeline.Readiness{Accuracy: &pipeline.ReadinessAccuracy{MinMarked: 1}}, now)
		if got := rep.Tiers[2]; got.Verdict != InsufficientData || !strings.Contains(got.Why, "no step records a confidence of its own") {
			t.Errorf("accuracy: %s %q", got.Verdict, got.Why)
		}
	})
	t.Run("unknown current config", func(t *testing.T) {
		e := evidence(results(3, func(int) Result { return Result{} })...)
		e.Config = ""
		got := tier(t, e, &pipeline.Readiness{Operational: &pipeline.ReadinessOperational{MinRuns: 1, RequireCurrentConfig: true, AcceptableStatuses: []string{"completed"}}}, TierOperational)
		if got.Verdict != InsufficientData || !strings.Contains(got.Why, "current config is unknown") {
			t.Errorf("got %s %q", got.Verdict, got.Why)
		}
	})
}
