package steprun

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// The decisions of one step, each pinned below, at and above its
// boundary, with the rule from the reference: a value below the
// threshold takes on_low_confidence (equal passes); a verifier fires
// strictly between its bounds; veto keeps the primary at the floor;
// a budget is exceeded only past its limit (equal is within).

// justBelow and justAbove are the neighbouring float64 values of v.
func justBelow(v float64) float64 { return math.Nextafter(v, math.Inf(-1)) }
func justAbove(v float64) float64 { return math.Nextafter(v, math.Inf(1)) }

func TestGateBoundary(t *testing.T) {
	const threshold = 0.8
	out := &llmoutput.Output{Summary: "s", Proceed: true}
	tests := []struct {
		on     pipeline.LowConfidence
		value  float64
		status string
		flag   string
	}{
		{pipeline.LowEscalate, justBelow(threshold), task.StatusEscalated, ""},
		{pipeline.LowEscalate, threshold, task.StatusCompleted, ""},
		{pipeline.LowEscalate, justAbove(threshold), task.StatusCompleted, ""},
		{pipeline.LowAbort, justBelow(threshold), task.StatusAborted, ""},
		{pipeline.LowAbort, threshold, task.StatusCompleted, ""},
		{pipeline.LowAbort, justAbove(threshold), task.StatusCompleted, ""},
		{pipeline.LowProceed, justBelow(threshold), task.StatusCompleted, FlagProceedOnLow},
		{pipeline.LowProceed, threshold, task.StatusCompleted, ""},
		{pipeline.LowProceed, justAbove(threshold), task.StatusCompleted, ""},
	}
	for _, tt := range tests {
		g := pipeline.Gate{ConfidenceThreshold: threshold, OnLowConfidence: tt.on}
		status, reason, flags := gate("s", g, tt.value, out, true)
		if status != tt.status {
			t.Errorf("%s at %v: status %s (%s), want %s", tt.on, tt.value, status, reason, tt.status)
		}
		if got := strings.Join(flags, ","); got != tt.flag {
			t.Errorf("%s at %v: flags %q, want %q", tt.on, tt.value, got, tt.flag)
		}
		if (status == task.StatusCompleted) != (reason == "") {
			t.Errorf("%s at %v: status %s with reason %q", tt.on, tt.value, status, reason)
		}
	}
}

// TestGateProceedAfterThreshold: proceed: false stops a step that passed
// its gate (at the threshold too), is ignored where the caller does not
// honour it (a branch), and never turns an escalation into a stop.
func TestGateProceedAfterThreshold(t *testing.T) {
	g := pipeline.Gate{ConfidenceThreshold: 0.8, OnLowConfidence: pipeline.LowEscalate}
	stop := &llmoutput.Output{Summary: "sum", Proceed: false, ProceedReason: "why"}
	if status, reason, _ := gate("s", g, 0.8, stop, true); status != task.StatusStopped || reason != "why" {
		t.Errorf("at the threshold: %s %q, want stopped \"why\"", status, reason)
	}
	if status, _, _ := gate("s", g, 0.8, stop, false); status != task.StatusCompleted {
		t.Errorf("not honoured: %s, want completed", status)
	}
	if status, _, _ := gate("s", g, justBelow(0.8), stop, true); status != task.StatusEscalated {
		t.Errorf("below the threshold: %s, want escalated", status)
	}
	noReason := &llmoutput.Output{Summary: "sum", Proceed: false}
	if _, reason, _ := gate("s", g, 0.9, noReason, true); reason != "sum" {
		t.Errorf("stop without a reason: %q, want the summary", reason)
	}
}

func TestVerifierTriggerBoundary(t *testing.T) {
	bounded := &pipeline.Verifier{Trigger: pipeline.VerifierTrigger{ConfidenceAbove: 0.2, ConfidenceBelow: 0.9}}
	defaults := &pipeline.Verifier{Trigger: pipeline.VerifierTrigger{ConfidenceAbove: 0, ConfidenceBelow: 1}}
	always := &pipeline.Verifier{Trigger: pipeline.VerifierTrigger{Always: true, ConfidenceAbove: 0.2, ConfidenceBelow: 0.9}}
	tests := []struct {
		name    string
		v       *pipeline.Verifier
		primary float64
		want    bool
	}{
		{"below the lower bound", bounded, justBelow(0.2), false},
		{"at the lower bound", bounded, 0.2, false},
		{"above the lower bound", bounded, justAbove(0.2), true},
		{"below the upper bound", bounded, justBelow(0.9), true},
		{"at the upper bound", bounded, 0.9, false},
		{"above the upper bound", bounded, justAbove(0.9), false},
		{"defaults at 0", defaults, 0, false},
		{"defaults just above 0", defaults, justAbove(0), true},
		{"defaults just below 1", defaults, justBelow(1), true},
		{"defaults at 1", defaults, 1, false},
		{"always, outside the bounds", always, 1, true},
		{"always, at a bound", always, 0.2, true},
	}
	for _, tt := range tests {
		if got := triggered(tt.v, tt.primary); got != tt.want {
			t.Errorf("%s (%v): triggered %v, want %v", tt.name, tt.primary, got, tt.want)
		}
	}
}

func TestCombineBoundary(t *testing.T) {
	minimum := &pipeline.Verifier{CombinationStrategy: pipeline.CombineMinimum}
	veto := &pipeline.Verifier{CombinationStrategy: pipeline.CombineVeto, VetoFloor: 0.6}
	tests := []struct {
		name             string
		v                *pipeline.Verifier
		primary, verdict float64
		want             float64
	}{
		{"minimum, verifier lower", minimum, 0.8, 0.5, 0.5},
		{"minimum, verifier higher", minimum, 0.5, 0.8, 0.5},
		{"minimum, equal", minimum, 0.7, 0.7, 0.7},
		{"veto, verdict below the floor", veto, 0.9, justBelow(0.6), justBelow(0.6)},
		{"veto, verdict at the floor", veto, 0.9, 0.6, 0.9},
		{"veto, verdict above the floor", veto, 0.9, justAbove(0.6), 0.9},
		{"veto below the floor, primary lower still", veto, 0.3, 0.5, 0.3},
		{"veto, the reference's A4", veto, 0.9, 0.55, 0.55},
	}
	for _, tt := range tests {
		if got := combine(tt.v, tt.primary, tt.verdict); got != tt.want {
			t.Errorf("%s: combine(%v, %v) = %v, want %v", tt.name, tt.primary, tt.verdict, got, tt.want)
		}
	}
}

// TestCombineNeverRaises: whatever the strategy, floor and scores, the
// effective confidence is at most the primary.
func TestCombineNeverRaises(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		v := &pipeline.Verifier{CombinationStrategy: []string{pipeline.CombineMinimum, pipeline.CombineVeto}[i%2], VetoFloor: r.Float64()}
		primary, verdict := r.Float64(), r.Float64()
		if got := combine(v, primary, verdict); got > primary || got < min(primary, verdict) {
			t.Fatalf("%s floor %v: combine(%v, %v) = %v", v.CombinationStrategy, v.VetoFloor, primary, verdict, got)
		}
	}
}

func TestBudgetBoundary(t *testing.T) {
	tokens, usd := int64(1000), 0.5
	byTokens := &pipeline.Budget{MaxTokens: &tokens}
	byCost := &pipeline.Budget{MaxUSD: &usd}
	tests := []struct {
		name   string
		b      *pipeline.Budget
		totals task.Usage
		over   string // a prefix of the reason; "" within the budget
	}{
		{"tokens below", byTokens, task.Usage{InputTokens: 900, OutputTokens: 99}, ""},
		{"tokens at the limit", byTokens, task.Usage{InputTokens: 900, OutputTokens: 100}, ""},
		{"tokens past the limit", byTokens, task.Usage{InputTokens: 900, OutputTokens: 101}, "Token budget exceeded"},
		{"cost below", byCost, task.Usage{CostUSD: justBelow(usd)}, ""},
		{"cost at the limit", byCost, task.Usage{CostUSD: usd}, ""},
		{"cost past the limit", byCost, task.Usage{CostUSD: justAbove(usd)}, "Cost budget exceeded"},
		{"no budget", nil, task.Usage{InputTokens: 1 << 40, CostUSD: 1e9}, ""},
	}
	for _, tt := range tests {
		got := overBudget(tt.b, tt.totals)
		if (tt.over == "") != (got == "") || !strings.HasPrefix(got, tt.over) {
			t.Errorf("%s: overBudget = %q, want %q…", tt.name, got, tt.over)
		}
	}
}

// TestCombineBranchesRules pins each join rule, ties included, and a
// failed branch counting 0.
func TestCombineBranchesRules(t *testing.T) {
	br := func(c, w float64) branchResult { return branchResult{confidence: c, weight: w} }
	tests := []struct {
		name string
		join pipeline.Join
		rs   []branchResult
		want float64
	}{
		{"all must pass: the minimum", pipeline.JoinAllMustPass, []branchResult{br(0.9, 1), br(0.6, 1), br(0.8, 1)}, 0.6},
		{"all must pass: the minimum is last", pipeline.JoinAllMustPass, []branchResult{br(0.9, 1), br(0.8, 1), br(0.6, 1)}, 0.6},
		{"all must pass: a failed branch (0)", pipeline.JoinAllMustPass, []branchResult{br(0.9, 1), br(0, 1)}, 0},
		{"any must pass: the maximum", pipeline.JoinAnyMustPass, []branchResult{br(0.3, 1), br(0.9, 1), br(0.6, 1)}, 0.9},
		{"any must pass: the maximum is first", pipeline.JoinAnyMustPass, []branchResult{br(0.9, 1), br(0.3, 1)}, 0.9},
		{"any must pass: ties", pipeline.JoinAnyMustPass, []branchResult{br(0.5, 1), br(0.5, 1)}, 0.5},
		{"weighted average", pipeline.JoinWeightedAverage, []branchResult{br(1, 3), br(0, 1)}, 0.75},
		{"weighted average, equal weights", pipeline.JoinWeightedAverage, []branchResult{br(0.4, 1), br(0.8, 1)}, 0.6000000000000001},
		{"weighted average, zero weights", pipeline.JoinWeightedAverage, []branchResult{br(0.9, 0), br(0.9, 0)}, 0},
		{"no branches", pipeline.JoinAllMustPass, nil, 0},
	}
	for _, tt := range tests {
		if got := combineBranches(tt.join, tt.rs); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCombineTrustRules pins how the signals combine: calibration
// replaces the trust when it enforces, an enforcing judge caps it at G
// (a G equal to the trust or above it changes nothing), a failed check
// sets 0, and the policy turns to the trust vector exactly when one of
// them could act.
func TestCombineTrustRules(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes, no := true, false
	legacy, vector := "legacy_confidence", "trust_vector"
	tests := []struct {
		name   string
		s      Signals
		want   float64
		policy string
	}{
		{"confidence only", Signals{SAfterV: 0.8}, 0.8, legacy},
		{"G recorded, not enforced", Signals{SAfterV: 0.8, G: f(0.3)}, 0.8, legacy},
		{"G enforced, null", Signals{SAfterV: 0.8, GEnforced: true}, 0.8, legacy},
		{"G enforced, just below", Signals{SAfterV: 0.8, G: f(justBelow(0.8)), GEnforced: true}, justBelow(0.8), vector},
		{"G enforced, equal", Signals{SAfterV: 0.8, G: f(0.8), GEnforced: true}, 0.8, vector},
		{"G enforced, above", Signals{SAfterV: 0.8, G: f(0.9), GEnforced: true}, 0.8, vector},
		{"C enforced replaces, even upwards", Signals{SAfterV: 0.5, C: f(0.9), CEnforced: true}, 0.9, vector},
		{"C enforced, no value: unchanged", Signals{SAfterV: 0.5, CEnforced: true}, 0.5, vector},
		{"C not enforced", Signals{SAfterV: 0.5, C: f(0.9)}, 0.5, legacy},
		{"C then G caps it", Signals{SAfterV: 0.5, C: f(0.9), CEnforced: true, G: f(0.7), GEnforced: true}, 0.7, vector},
		{"checks passed", Signals{SAfterV: 0.8, D: &yes}, 0.8, vector},
		{"a check failed", Signals{SAfterV: 0.8, D: &no, G: f(0.9), GEnforced: true, C: f(1), CEnforced: true}, 0, vector},
	}
	for _, tt := range tests {
		got := CombineTrust(tt.s)
		if got.Combined != tt.want || got.Policy != tt.policy {
			t.Errorf("%s: %v %s, want %v %s", tt.name, got.Combined, got.Policy, tt.want, tt.policy)
		}
	}
	// A G equal to the trust did not lower it: the gate's reason does not
	// name grounding; one just below does.
	if c := CombineTrust(Signals{SAfterV: 0.8, G: f(0.8), GEnforced: true}).Cause; c != "" {
		t.Errorf("G equal to the trust is named as the cause: %q", c)
	}
	if c := CombineTrust(Signals{SAfterV: 0.8, G: f(justBelow(0.8)), GEnforced: true}).Cause; !strings.HasPrefix(c, "grounding ") {
		t.Errorf("G below the trust is not named as the cause: %q", c)
	}
}

// TestLoopUntilBoundary: a loop converges when the effective confidence
// reaches loop_until.confidence (equal converges, just below does not)
// and makes at most max_iterations model calls (at least one).
func TestLoopUntilBoundary(t *testing.T) {
	const target = 0.9
	reply := func(cs ...float64) string {
		var b strings.Builder
		b.WriteString("triage: [")
		for i, c := range cs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`{confidence: ` + strconv.FormatFloat(c, 'g', -1, 64) + `, summary: s, next_step_context: ""}`)
		}
		b.WriteString("]")
		return b.String()
	}
	tests := []struct {
		name    string
		replies []float64
		max     int
		calls   int
		flag    string
	}{
		{"just below the target goes on", []float64{justBelow(target), 0.95}, 3, 2, FlagLoopConverged + ":2"},
		{"at the target converges", []float64{target, 0.95}, 3, 1, FlagLoopConverged + ":1"},
		{"just above converges", []float64{justAbove(target), 0.95}, 3, 1, FlagLoopConverged + ":1"},
		{"converges on the last iteration", []float64{0.5, 0.5, target}, 3, 3, FlagLoopConverged + ":3"},
		{"stops at max_iterations", []float64{0.5, 0.5, 0.5, 0.95}, 3, 3, FlagLoopExhausted + ":3"},
		{"max_iterations 1 is one call", []float64{0.5, 0.95}, 1, 1, FlagLoopExhausted + ":1"},
		{"max_iterations 0 is one call", []float64{0.5, 0.95}, 0, 1, FlagLoopExhausted + ":1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, reply(tt.replies...))
			st := seqStep("triage", "go {{ loop.iteration }}")
			st.Gate.OnLowConfidence = pipeline.LowProceed
			st.LoopUntil = &pipeline.LoopUntil{Confidence: target, MaxIterations: tt.max}
			resp, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st))
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if n := len(e.prov.reqs); n != tt.calls {
				t.Errorf("%d model calls, want %d", n, tt.calls)
			}
			recs := stepRecords(t, e.st, "triage")
			if len(recs) != 1 || !slices.Contains(recs[0].Flags, tt.flag) {
				t.Fatalf("records %+v, want one with flag %q", recs, tt.flag)
			}
			if want := tt.replies[tt.calls-1]; *recs[0].EffectiveConfidence != want {
				t.Errorf("confidence %v, want the last iteration's %v", *recs[0].EffectiveConfidence, want)
			}
			if resp.Status != task.StatusCompleted {
				t.Errorf("status %s, want completed", resp.Status)
			}
		})
	}
}

// TestRedeliveredStepCountedOnce is a property: a step Task delivered
// again with the same attempt (Step Functions' at-least-once delivery, a
// Lambda retried after a timeout) adds its usage to the run once, keeps
// one record, and answers the same status; a new attempt counts anew.
func TestRedeliveredStepCountedOnce(t *testing.T) {
	const reply = `{confidence: 0.9, summary: ok, next_step_context: ""}`
	for deliveries := 1; deliveries <= 3; deliveries++ {
		t.Run(strconv.Itoa(deliveries), func(t *testing.T) {
			e := newEnv(t, "triage: ["+strings.Repeat(reply+", ", deliveries)+reply+"]")
			e.prov.usage = llmoutput.Usage{InputTokens: 1000, OutputTokens: 200}
			req := newRequest(t, task.ModeStep, seqStep("triage", "go"))
			for d := range deliveries {
				resp, err := e.h.Respond(context.Background(), req)
				if err != nil || resp.Status != task.StatusCompleted {
					t.Fatalf("delivery %d: %s %v", d+1, resp.Status, err)
				}
				if resp.Usage.InputTokens != 1000 || resp.Usage.OutputTokens != 200 {
					t.Errorf("delivery %d: answered usage %+v, want the step's once", d+1, resp.Usage)
				}
			}
			if u := getRun(t, e.st).Usage; u.InputTokens != 1000 || u.OutputTokens != 200 {
				t.Errorf("run usage after %d deliveries = %+v, want 1000/200", deliveries, u)
			}
			if n := len(stepRecords(t, e.st, "triage")); n != 1 {
				t.Errorf("%d records after %d deliveries, want 1", n, deliveries)
			}
			req.Attempt = 2
			if _, err := e.h.Respond(context.Background(), req); err != nil {
				t.Fatalf("attempt 2: %v", err)
			}
			if u := getRun(t, e.st).Usage; u.InputTokens != 2000 || u.OutputTokens != 400 {
				t.Errorf("run usage after a second attempt = %+v, want 2000/400", u)
			}
		})
	}
}
