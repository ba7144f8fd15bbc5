package steprun

import (
	"fmt"

	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// Signals are what a step's gate combines into its trust.
type Signals struct {
	// S is the answer's own confidence; SAfterV the effective confidence
	// after the verifier (S when there is none, or it did not run).
	S, SAfterV float64
	// V is the verifier's score; nil when it did not run or failed.
	V *float64
	// G is the grounding judge's score: the share of the answer's
	// load-bearing claims its tool trace supports. nil when the step has
	// no judge, left no tool result to check, or the judge failed.
	G *float64
	// GEnforced caps the trust at G (grounding.enforce), once G is known.
	GEnforced bool
	// C is the calibrated trust of the step's bucket, and CEnforced
	// whether it replaces the trust (calibration.enforce): the validated
	// bin's mean label, or 0 for a step whose bin is not validated under
	// on_uncalibrated: escalate; nil otherwise. CNote says how C came
	// about, for the gate's reason.
	C         *float64
	CEnforced bool
	CNote     string
	// D is whether every deterministic check passed; nil: no checks.
	D *bool
	// FailedCheck names the first check that failed, for the reason.
	FailedCheck string
}

// Trust is a gate's combined trust and the policy that gave it.
type Trust struct {
	Combined float64
	// Policy is store.PolicyLegacyConfidence when nothing but the
	// confidence can move the gate, else store.PolicyTrustVector.
	Policy string
	// Cause says which signal set Combined when it is not SAfterV.
	Cause string
}

// CombineTrust is the gate's combination of a step's signals, in the
// reference runner's order: the effective confidence (S after V); a
// calibrated value replaces it when calibration enforces; an enforcing
// judge caps it at G when G is known; a failed deterministic check sets
// it to 0. The policy is the trust vector as soon as one of those could
// act (calibration enforced, an enforcing judge that gave a score, any
// deterministic check), else the legacy confidence gate. The gate
// compares Combined with the step's confidence_threshold either way.
func CombineTrust(s Signals) Trust {
	t := Trust{Combined: s.SAfterV, Policy: store.PolicyLegacyConfidence}
	if s.CEnforced {
		t.Policy = store.PolicyTrustVector
		if s.C != nil {
			t.Combined, t.Cause = *s.C, "calibration"
			if s.CNote != "" {
				t.Cause = s.CNote
			}
		}
	}
	if s.GEnforced && s.G != nil {
		t.Policy = store.PolicyTrustVector
		if *s.G < t.Combined {
			t.Combined, t.Cause = *s.G, fmt.Sprintf("grounding %s enforced", fmtConf(*s.G))
		}
	}
	if s.D != nil {
		t.Policy = store.PolicyTrustVector
		if !*s.D {
			t.Combined, t.Cause = 0, fmt.Sprintf("deterministic check %q failed", s.FailedCheck)
		}
	}
	return t
}

// calibrationNote says how a calibration gave C: the validated bin's
// mean, or the missing history of an uncalibrated step that escalates.
func calibrationNote(r *store.CalibrationResult, c *float64) string {
	if r == nil || c == nil {
		return ""
	}
	bin := fmtConf(r.Bin[0]) + ".." + fmtConf(r.Bin[1])
	if r.Validated {
		return fmt.Sprintf("calibrated: bin %s has mean label %s over %d labelled executions", bin, fmtConf(*c), r.N)
	}
	return fmt.Sprintf("uncalibrated: bin %s has %d of the %d labelled executions it needs, and on_uncalibrated is escalate", bin, r.N, r.NMin)
}

// gateTrust is gate over a step's combined trust: under the legacy
// policy exactly the confidence gate, under the trust vector the same
// threshold and on_low_confidence over the combined trust, its reason
// naming the signal that lowered it.
func gateTrust(name string, g pipeline.Gate, tr Trust, out *llmoutput.Output, honourProceed bool) (status, reason string, flags []string) {
	what := "confidence " + fmtConf(tr.Combined)
	if tr.Policy == store.PolicyTrustVector {
		what = "combined trust " + fmtConf(tr.Combined)
	}
	why := ""
	if tr.Cause != "" {
		why = " (" + tr.Cause + ")"
	}
	return gateWith(name, g, tr.Combined, what, why, out, honourProceed)
}

// Record flags of the trust signals.
const (
	// FlagGroundingFailed: the grounding judge failed; G is null (soft).
	FlagGroundingFailed = "grounding_failed"
	// FlagCheckFailed: a deterministic check failed or could not run;
	// the combined trust is 0.
	FlagCheckFailed = "deterministic_check_failed"
	// FlagAwaitingCheck: the record waits for a human check.
	FlagAwaitingCheck = "awaiting_human_check"
)

// newReport starts a step's trust report from its confidence signals.
func newReport(v *pipeline.Verifier, s Signals) *store.TrustReport {
	r := &store.TrustReport{Version: store.TrustReportVersion, Mode: store.TrustShadow,
		Signals: store.TrustSignals{S: s.S, SAfterV: s.SAfterV, V: s.V, G: s.G, C: s.C, D: s.D}}
	if v != nil {
		r.Signals.VMode, r.Signals.VCombinationStrategy = v.Mode, v.CombinationStrategy
		if v.CombinationStrategy == pipeline.CombineVeto {
			f := v.VetoFloor
			r.Signals.VVetoFloor = &f
		}
	}
	return r
}

// finishReport fills a report's signals, combined trust and gate from
// the step's signals and the gate's decision.
func finishReport(r *store.TrustReport, g pipeline.Gate, s Signals, tr Trust, status, reason string) {
	r.Signals.G, r.Signals.C, r.Signals.D = s.G, s.C, s.D
	r.CombinedTrust = tr.Combined
	r.Mode = store.TrustShadow
	if tr.Policy == store.PolicyTrustVector {
		r.Mode = store.TrustEnforced
	}
	r.Gate = store.TrustGate{Policy: tr.Policy, ConfidenceThreshold: g.ConfidenceThreshold, OnLowConfidence: string(g.OnLowConfidence),
		Decision: status, Reason: reason}
}

// legacyReport is the trust report of a step whose only signal is its
// confidence (a human decision, a sub-pipeline's outcome, a group's join).
func legacyReport(g pipeline.Gate, confidence float64, status, reason string) *store.TrustReport {
	s := Signals{S: confidence, SAfterV: confidence}
	r := newReport(nil, s)
	finishReport(r, g, s, CombineTrust(s), status, reason)
	return r
}

// trustSummary is what a Response reports of a report, for progress displays.
func trustSummary(r *store.TrustReport) *task.TrustSummary {
	if r == nil {
		return nil
	}
	return &task.TrustSummary{Policy: r.Gate.Policy, Combined: r.CombinedTrust, G: r.Signals.G, C: r.Signals.C, D: r.Signals.D}
}
