package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

// agentStep is an agent step's record: a tool loop's profile, iterations
// and trace.
func agentStep(runID, name string) store.StepRecord {
	rec := fullStep(runID, name, 0, 1)
	rec.Agent, rec.AgentVersion, rec.Iterations = "sre-triage", "sha256:9f2c", 4
	rec.Trace = json.RawMessage(`[{"type":"tool_call","iteration":1,"id":"call_1","name":"grafana.query","arguments":{"expr":"rate(http_errors[5m])"}},` +
		`{"type":"tool_result","iteration":1,"id":"call_1","name":"grafana.query","content":"0.31 — ünïcödé","truncated":true,"chars":9000},` +
		`{"type":"tool_denied","iteration":2,"id":"call_2","name":"jira.delete","reason":"read only"},` +
		`{"type":"text","iteration":3,"content":"done"}]`)
	return rec
}

// traceOf is a JSON array of n bytes exactly: ["xxx…"].
func traceOf(n int) json.RawMessage {
	return json.RawMessage(`["` + strings.Repeat("x", n-4) + `"]`)
}

func testPutStepAgent(t *testing.T, s store.Store) {
	ctx := context.Background()
	rec := agentStep("run-1", "investigate")
	ref := agentStep("run-1", "investigate-big")
	ref.Trace, ref.TraceRef = nil, "s3://artifacts/run-1/investigate-big/trace.json"
	must(t, s.PutStep(ctx, rec))
	must(t, s.PutStep(ctx, ref))
	must(t, s.PutStep(ctx, rec)) // a repeat
	got, err := s.ListSteps(ctx, "run-1")
	must(t, err)
	sameSteps(t, got, []store.StepRecord{rec, ref})

	other := rec
	other.Trace = json.RawMessage(`[]`)
	mustErr(t, s.PutStep(ctx, other), store.ErrConflict)
	other = rec
	other.Iterations = 5
	mustErr(t, s.PutStep(ctx, other), store.ErrConflict)

	tests := []struct {
		name   string
		modify func(*store.StepRecord)
		want   error // nil: stored
	}{
		{"trace below the limit", func(r *store.StepRecord) { r.Trace = traceOf(store.MaxTraceBytes - 1) }, nil},
		{"trace at the limit", func(r *store.StepRecord) { r.Trace = traceOf(store.MaxTraceBytes) }, nil},
		{"trace above the limit", func(r *store.StepRecord) { r.Trace = traceOf(store.MaxTraceBytes + 1) }, store.ErrTooLarge},
		{"every field at its limit fits one item", func(r *store.StepRecord) {
			r.Trace = traceOf(store.MaxTraceBytes)
			r.Output, r.VerifierOutput = json.RawMessage(`"`+strings.Repeat("o", store.MaxOutputBytes-2)+`"`), nil
			r.RawResponse = strings.Repeat("r", store.MaxRawResponseBytes)
			r.Prompt = strings.Repeat("p", store.MaxPromptBytes)
			r.Error = strings.Repeat("e", store.MaxTextBytes)
			r.TraceRef = strings.Repeat("t", store.MaxTextBytes)
			r.Agent, r.AgentVersion = strings.Repeat("a", store.MaxIDBytes), strings.Repeat("v", store.MaxIDBytes)
			r.Trust = fullTrust()
		}, nil},
		{"trace not JSON", func(r *store.StepRecord) { r.Trace = json.RawMessage(`[{"type":`) }, store.ErrInvalid},
		{"trace not an array", func(r *store.StepRecord) { r.Trace = json.RawMessage(`{"type":"text"}`) }, store.ErrInvalid},
		{"negative iterations", func(r *store.StepRecord) { r.Iterations = -1 }, store.ErrInvalid},
		{"agent name too long", func(r *store.StepRecord) { r.Agent = strings.Repeat("a", store.MaxIDBytes+1) }, store.ErrInvalid},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := agentStep("run-2", "step-"+string(rune('a'+i)))
			tt.modify(&r)
			err := s.PutStep(ctx, r)
			if tt.want == nil {
				must(t, err)
				got, err := s.ListSteps(ctx, "run-2")
				must(t, err)
				for _, g := range got {
					if g.Name == r.Name && len(g.Trace) != len(r.Trace) {
						t.Errorf("trace of %d bytes read back as %d", len(r.Trace), len(g.Trace))
					}
				}
				return
			}
			mustErr(t, err, tt.want)
		})
	}
}

// fullTrust is a trust report with every list and text at its limit.
func fullTrust() *store.TrustReport {
	r := trustReport()
	long := strings.Repeat("t", store.MaxTrustText)
	r.Gate.Reason = strings.Repeat("r", store.MaxTextBytes)
	r.Grounding.Note, r.Grounding.Error = long, long
	r.Grounding.Claims = make([]store.ClaimResult, store.MaxTrustClaims)
	for i := range r.Grounding.Claims {
		r.Grounding.Claims[i] = store.ClaimResult{Claim: long, Evidence: long}
	}
	r.DeterministicChecks = make([]store.CheckResult, store.MaxTrustChecks)
	for i := range r.DeterministicChecks {
		r.DeterministicChecks[i] = store.CheckResult{Name: strings.Repeat("c", 80), Type: "webhook", Outcome: store.CheckError, Expect: long, Detail: long, Error: long}
	}
	return r
}
