package store

import (
	"fmt"
	"math"
)

// TrustReportVersion is the version of the TrustReport shape this package
// writes. A reader meets older versions in older records; fields are
// added, never renamed or removed, and the version moves when they are.
// Version 2 added the calibration section and the C signal (always null
// in version 1).
const TrustReportVersion = 2

// Gate policies a TrustReport names.
const (
	// PolicyLegacyConfidence gates on the step's confidence after its
	// verifier: nothing else the step has can change the decision.
	PolicyLegacyConfidence = "legacy_confidence"
	// PolicyTrustVector gates on the combined trust: the step has
	// deterministic checks, or an enforcing grounding judge that gave a
	// score.
	PolicyTrustVector = "trust_vector"
)

// Trust report modes: whether the signals beyond the confidence decided
// (enforced) or were only recorded (shadow).
const (
	TrustShadow   = "shadow"
	TrustEnforced = "enforced"
)

// Outcomes of one deterministic check (CheckResult.Outcome).
const (
	CheckPassed  = "passed"
	CheckFailed  = "failed"  // it ran and its expectation does not hold, or a human rejected
	CheckError   = "error"   // it could not run: fails closed
	CheckPending = "pending" // a human check waiting for its decision
	CheckSkipped = "skipped" // an earlier check failed: not run
)

// TrustReport is how a gate decided a step: the signals it had, the trust
// it combined from them and its decision. Step records of gated steps
// carry one (StepRecord.Trust).
type TrustReport struct {
	Version int `json:"version"`
	// Mode is TrustEnforced when the gate's policy is the trust vector,
	// else TrustShadow.
	Mode    string       `json:"mode"`
	Signals TrustSignals `json:"signals"`
	// CombinedTrust is the value the gate compared with its threshold.
	CombinedTrust float64 `json:"combined_trust"`
	// Grounding is the judge's verdict, when the step has a judge.
	Grounding *GroundingResult `json:"grounding,omitempty"`
	// DeterministicChecks are the step's checks in order, each with its
	// outcome (checks after a failed one are skipped).
	DeterministicChecks []CheckResult `json:"deterministic_checks,omitempty"`
	// Calibration is the bucket and bin the step's calibration looked
	// up, when the step has a calibration block (version 2 on).
	Calibration *CalibrationResult `json:"calibration,omitempty"`
	Gate        TrustGate          `json:"gate"`
}

// Uncalibrated policies (CalibrationResult.OnUncalibrated).
const (
	UncalibratedProceed  = "proceed"
	UncalibratedEscalate = "escalate"
)

// CalibrationResult is what a step's calibration found: its bucket, the
// bin its effective confidence (S after V) fell in, how many labelled samples
// the bin has and their mean label. A validated bin's mean is C; an
// unvalidated one gives C = 0 under on_uncalibrated: escalate and no C
// under proceed.
type CalibrationResult struct {
	Enforced       bool    `json:"enforced"`
	Bucket         Bucket  `json:"bucket"`
	BucketKey      string  `json:"bucket_key"`
	BinWidth       float64 `json:"bin_width"`
	NMin           int     `json:"n_min"`
	OnUncalibrated string  `json:"on_uncalibrated"`
	// Bin is the bin's range, N its labelled samples, Mean their mean
	// label (nil: none), Validated whether N reached NMin.
	Bin       [2]float64 `json:"bin"`
	N         int        `json:"n"`
	Mean      *float64   `json:"mean"`
	Validated bool       `json:"validated"`
	// Error says why the lookup failed (C is then treated as
	// uncalibrated).
	Error string `json:"error,omitempty"`
}

// TrustSignals are the gate's inputs. A nil signal is one the step does
// not have, or that gave nothing (a judge that had no trace or failed).
type TrustSignals struct {
	S       float64  `json:"S"`         // the answer's own confidence
	SAfterV float64  `json:"S_after_V"` // after the verifier: the effective confidence
	V       *float64 `json:"V"`         // the verifier's score
	// The verifier's mode, combination strategy and veto floor (with
	// combination veto), when the step has a verifier.
	VMode                string   `json:"V_mode,omitempty"`
	VCombinationStrategy string   `json:"V_combination_strategy,omitempty"`
	VVetoFloor           *float64 `json:"V_veto_floor,omitempty"`
	G                    *float64 `json:"G"` // the grounding judge's score
	// C is the calibrated trust: the validated bin's mean label, 0 for
	// an unvalidated bin under on_uncalibrated: escalate, else nil
	// (always nil in version 1 reports).
	C *float64 `json:"C"`
	D *bool    `json:"D"` // every deterministic check passed; nil: no checks
}

// GroundingResult is a grounding judge's verdict.
type GroundingResult struct {
	Agent    string   `json:"agent"`
	Enforced bool     `json:"enforced"`
	Score    *float64 `json:"score"` // G; nil when the judge gave none
	// Note says why Score is nil ("nothing to check": the step left no
	// tool result) or sums the verdict up.
	Note         string        `json:"note,omitempty"`
	Error        string        `json:"error,omitempty"` // the judge failed: G is nil (soft)
	Claims       []ClaimResult `json:"claims,omitempty"`
	Model        string        `json:"model,omitempty"`
	Provider     string        `json:"provider,omitempty"`
	InputTokens  int64         `json:"input_tokens,omitempty"`
	OutputTokens int64         `json:"output_tokens,omitempty"`
}

// ClaimResult is one claim the judge weighed.
type ClaimResult struct {
	Claim     string `json:"claim"`
	Supported bool   `json:"supported"`
	Evidence  string `json:"evidence,omitempty"`
}

// CheckResult is one deterministic check's outcome.
type CheckResult struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Outcome string `json:"outcome"` // CheckPassed, CheckFailed, CheckError, CheckPending, CheckSkipped
	Expect  string `json:"expect,omitempty"`
	// Detail is what the check saw: the HTTP status and the start of the
	// body, the exit code and the start of the output, who decided.
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
	// DurationMS is how long the check ran (a human check: how long it
	// waited).
	DurationMS int64 `json:"duration_ms"`
}

// TrustGate is the gate's configuration and its decision.
type TrustGate struct {
	Policy              string  `json:"policy"` // PolicyLegacyConfidence or PolicyTrustVector
	ConfidenceThreshold float64 `json:"confidence_threshold"`
	OnLowConfidence     string  `json:"on_low_confidence"`
	// Decision is the step's status as the gate left it (completed,
	// stopped, escalated, aborted), or "waiting" while a human check is
	// pending; Reason says why when the gate stopped the step.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// Bounds of a TrustReport, within the record's size limits.
const (
	MaxTrustChecks = 20  // deterministic checks in one report
	MaxTrustClaims = 30  // judge claims kept
	MaxTrustText   = 300 // bytes of each text field (claims, evidence, details, errors)
)

// checkTrust checks a report against its bounds: finite scores in 0..1,
// known policy and outcomes, bounded lists.
func checkTrust(name string, r *TrustReport) error {
	if r == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: step %q trust report: %s", ErrInvalid, name, fmt.Sprintf(format, args...))
	}
	if r.Version < 1 {
		return bad("version %d", r.Version)
	}
	scores := []struct {
		what string
		v    *float64
	}{{"S", &r.Signals.S}, {"S_after_V", &r.Signals.SAfterV}, {"V", r.Signals.V}, {"V_veto_floor", r.Signals.VVetoFloor},
		{"G", r.Signals.G}, {"C", r.Signals.C}, {"combined_trust", &r.CombinedTrust}, {"confidence_threshold", &r.Gate.ConfidenceThreshold}}
	for _, s := range scores {
		if s.v != nil && (math.IsNaN(*s.v) || *s.v < 0 || *s.v > 1) {
			return bad("%s %v is not a number in 0..1", s.what, *s.v)
		}
	}
	switch r.Gate.Policy {
	case PolicyLegacyConfidence, PolicyTrustVector:
	default:
		return bad("unknown gate policy %q", r.Gate.Policy)
	}
	if len(r.DeterministicChecks) > MaxTrustChecks {
		return bad("%d deterministic checks, limit %d", len(r.DeterministicChecks), MaxTrustChecks)
	}
	for _, c := range r.DeterministicChecks {
		switch c.Outcome {
		case CheckPassed, CheckFailed, CheckError, CheckPending, CheckSkipped:
		default:
			return bad("check %q: unknown outcome %q", c.Name, c.Outcome)
		}
	}
	if c := r.Calibration; c != nil {
		if c.Mean != nil && (math.IsNaN(*c.Mean) || *c.Mean < 0 || *c.Mean > 1) {
			return bad("calibration mean %v is not a number in 0..1", *c.Mean)
		}
		if c.N < 0 || c.NMin < 0 {
			return bad("calibration counts below 0")
		}
	}
	if g := r.Grounding; g != nil {
		if g.Score != nil && (math.IsNaN(*g.Score) || *g.Score < 0 || *g.Score > 1) {
			return bad("grounding score %v is not a number in 0..1", *g.Score)
		}
		if len(g.Claims) > MaxTrustClaims {
			return bad("%d claims, limit %d", len(g.Claims), MaxTrustClaims)
		}
	}
	return nil
}

// cutTrust cuts the text fields of a report to MaxTrustText (and the
// gate's reason to MaxTextBytes), returning a copy.
func cutTrust(r *TrustReport) *TrustReport {
	if r == nil {
		return nil
	}
	c := *r
	cut := func(s string) string { s, _ = Cut(s, MaxTrustText); return s }
	c.Gate.Reason, _ = Cut(c.Gate.Reason, MaxTextBytes)
	if r.Calibration != nil {
		cal := *r.Calibration
		cal.Error = cut(cal.Error)
		c.Calibration = &cal
	}
	if r.Grounding != nil {
		g := *r.Grounding
		g.Note, g.Error = cut(g.Note), cut(g.Error)
		g.Claims = make([]ClaimResult, len(r.Grounding.Claims))
		for i, cl := range r.Grounding.Claims {
			g.Claims[i] = ClaimResult{Claim: cut(cl.Claim), Supported: cl.Supported, Evidence: cut(cl.Evidence)}
		}
		if len(g.Claims) == 0 {
			g.Claims = nil
		}
		c.Grounding = &g
	}
	if r.DeterministicChecks != nil {
		c.DeterministicChecks = make([]CheckResult, len(r.DeterministicChecks))
		for i, ch := range r.DeterministicChecks {
			ch.Expect, ch.Detail, ch.Error = cut(ch.Expect), cut(ch.Detail), cut(ch.Error)
			c.DeterministicChecks[i] = ch
		}
	}
	return &c
}
