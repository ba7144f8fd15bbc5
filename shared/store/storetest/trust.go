package storetest

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

// trustReport is a full trust report: a verifier, an enforced judge and
// two checks, one of them failed.
func trustReport() *store.TrustReport {
	no := false
	return &store.TrustReport{
		Version: store.TrustReportVersion,
		Mode:    store.TrustEnforced,
		Signals: store.TrustSignals{S: 0.9, SAfterV: 0.8, V: f64(0.8), VMode: "independent", VCombinationStrategy: "veto", VVetoFloor: f64(0.6),
			G: f64(0.75), D: &no},
		CombinedTrust: 0,
		Grounding: &store.GroundingResult{Agent: "grounding-judge", Enforced: true, Score: f64(0.75), Note: "3 of 4 claims supported",
			Claims: []store.ClaimResult{{Claim: "pool exhausted", Supported: true, Evidence: "log line 17:31"}, {Claim: "deploy at 17:30 — ünïcödé", Supported: false}},
			Model:  "claude-haiku-4-5", Provider: "anthropic", InputTokens: 900, OutputTokens: 120},
		DeterministicChecks: []store.CheckResult{
			{Name: "health", Type: "webhook", Outcome: store.CheckPassed, Expect: "response.status_code < 400", Detail: "HTTP 200", DurationMS: 12},
			{Name: "pool-size", Type: "webhook", Outcome: store.CheckFailed, Expect: "response.body.size >= 50", Detail: `HTTP 200: {"size": 10}`, DurationMS: 9},
			{Name: "signoff", Type: "human", Outcome: store.CheckSkipped},
		},
		Gate: store.TrustGate{Policy: store.PolicyTrustVector, ConfidenceThreshold: 0.7, OnLowConfidence: "escalate",
			Decision: "escalated", Reason: `combined trust 0 is below the threshold 0.7: deterministic check "pool-size" failed`},
	}
}

func testPutStepTrust(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := fullStep("run-1", "investigate", 0, 1)
	rec.Trust = trustReport()
	legacy := fullStep("run-1", "triage", 1000, 1)
	legacy.Trust = &store.TrustReport{Version: store.TrustReportVersion, Mode: store.TrustShadow,
		Signals: store.TrustSignals{S: 0.82, SAfterV: 0.82}, CombinedTrust: 0.82,
		Gate: store.TrustGate{Policy: store.PolicyLegacyConfidence, ConfidenceThreshold: 0.75, OnLowConfidence: "escalate", Decision: "completed"}}
	must(t, s.PutStep(ctx, rec))
	must(t, s.PutStep(ctx, legacy))
	must(t, s.PutStep(ctx, rec)) // a repeat
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{rec, legacy})
	if len(got) == 2 && (got[1].Trust == nil || got[1].Trust.Signals.G != nil || got[1].Trust.Signals.D != nil || got[1].Trust.Signals.C != nil) {
		t.Errorf("absent signals came back set: %+v", got[1].Trust)
	}
	if len(got) == 2 {
		b, _ := json.Marshal(got[1].Trust.Signals)
		if !strings.Contains(string(b), `"G":null`) || !strings.Contains(string(b), `"C":null`) || !strings.Contains(string(b), `"D":null`) {
			t.Errorf("absent signals are not written null: %s", b)
		}
	}

	other := rec
	other.Trust = trustReport()
	other.Trust.CombinedTrust = 0.5
	mustErr(t, s.PutStep(ctx, other), store.ErrConflict)

	long := strings.Repeat("é", store.MaxTrustText) // twice the limit in bytes
	claims := make([]store.ClaimResult, store.MaxTrustClaims)
	for i := range claims {
		claims[i] = store.ClaimResult{Claim: long, Evidence: long}
	}
	checks := make([]store.CheckResult, store.MaxTrustChecks)
	for i := range checks {
		checks[i] = store.CheckResult{Name: strings.Repeat("c", 80), Type: "webhook", Outcome: store.CheckError, Expect: long, Detail: long, Error: long}
	}
	tests := []struct {
		name   string
		modify func(*store.TrustReport)
		want   error // nil: stored
	}{
		{"combined trust 0", func(r *store.TrustReport) { r.CombinedTrust = 0 }, nil},
		{"combined trust 1", func(r *store.TrustReport) { r.CombinedTrust = 1 }, nil},
		{"combined trust above 1", func(r *store.TrustReport) { r.CombinedTrust = math.Nextafter(1, 2) }, store.ErrInvalid},
		{"combined trust below 0", func(r *store.TrustReport) { r.CombinedTrust = -0.01 }, store.ErrInvalid},
		{"G not a number", func(r *store.TrustReport) { r.Signals.G = f64(math.NaN()) }, store.ErrInvalid},
		{"grounding score above 1", func(r *store.TrustReport) { r.Grounding.Score = f64(1.5) }, store.ErrInvalid},
		{"unknown policy", func(r *store.TrustReport) { r.Gate.Policy = "vibes" }, store.ErrInvalid},
		{"unknown check outcome", func(r *store.TrustReport) { r.DeterministicChecks[0].Outcome = "maybe" }, store.ErrInvalid},
		{"version 0", func(r *store.TrustReport) { r.Version = 0 }, store.ErrInvalid},
		{"checks at the limit", func(r *store.TrustReport) { r.DeterministicChecks = checks }, nil},
		{"checks above the limit", func(r *store.TrustReport) { r.DeterministicChecks = append(checks, checks[0]) }, store.ErrInvalid},
		{"claims at the limit", func(r *store.TrustReport) { r.Grounding.Claims = claims }, nil},
		{"claims above the limit", func(r *store.TrustReport) { r.Grounding.Claims = append(claims, claims[0]) }, store.ErrInvalid},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fullStep("run-2", "step-"+string(rune('a'+i)), i, 1)
			r.Trust = trustReport()
			tt.modify(r.Trust)
			err := s.PutStep(ctx, r)
			if tt.want != nil {
				mustErr(t, err, tt.want)
				return
			}
			must(t, err)
			got, err := s.ListSteps(ctx, "run-2")
			must(t, err)
			for _, g := range got {
				if g.Name != r.Name {
					continue
				}
				for _, c := range g.Trust.DeterministicChecks {
					if len(c.Detail) > store.MaxTrustText || len(c.Expect) > store.MaxTrustText || len(c.Error) > store.MaxTrustText {
						t.Errorf("check texts of %d, %d, %d bytes, limit %d", len(c.Detail), len(c.Expect), len(c.Error), store.MaxTrustText)
					}
				}
				for _, c := range g.Trust.Grounding.Claims {
					if len(c.Claim) > store.MaxTrustText || len(c.Evidence) > store.MaxTrustText {
						t.Errorf("claim texts of %d, %d bytes, limit %d", len(c.Claim), len(c.Evidence), store.MaxTrustText)
					}
				}
			}
		})
	}
}

// testPutStepWaiting: a waiting record (a step paused for a human check)
// is replaced by the step's next record at its key, waiting or finished;
// a finished one is never replaced, and a repeat of it is a no-op.
func testPutStepWaiting(t *testing.T, s store.Store) {
	ctx := context.Background()
	waiting := fullStep("run-1", "investigate", 0, 1)
	waiting.Status = store.StepWaiting
	waiting.Trust = trustReport()
	waiting.Trust.Gate.Decision = string(store.StepWaiting)
	waiting.Trust.DeterministicChecks[2].Outcome = store.CheckPending
	must(t, s.PutStep(ctx, waiting))
	must(t, s.PutStep(ctx, waiting)) // a repeat

	again := waiting // the first human check approved, the next one pending
	again.Trust = trustReport()
	again.Trust.Gate.Decision = string(store.StepWaiting)
	again.Trust.DeterministicChecks[2].Outcome = store.CheckPassed
	must(t, s.PutStep(ctx, again))
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{again})

	done := waiting
	done.Status = store.StepEscalated
	done.Trust = trustReport()
	done.FinishedAt = waiting.FinishedAt.Add(90e9)
	must(t, s.PutStep(ctx, done))
	must(t, s.PutStep(ctx, done)) // a repeat of the finished record
	mustErr(t, s.PutStep(ctx, waiting), store.ErrConflict)
	other := done
	other.Status = store.StepCompleted
	mustErr(t, s.PutStep(ctx, other), store.ErrConflict)
	got, err = s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{done})
}
