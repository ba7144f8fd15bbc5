package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// t0 carries nanoseconds so that a store losing precision is caught.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// elsewhere is a non-UTC zone: stores must return the same instants in UTC.
var elsewhere = time.FixedZone("UTC+2", 2*3600)

// Run runs the store conformance suite. newStore must return a fresh, empty
// store for every call; the suite calls it once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"CreateRun/round trip", testCreateRunRoundTrip},
		{"CreateRun/duplicate ID", testCreateRunDuplicate},
		{"CreateRun/invalid", testCreateRunInvalid},
		{"GetRun/unknown", testGetRunUnknown},
		{"UpdateRun/transitions", testUpdateRunTransitions},
		{"UpdateRun/terminal run keeps its first ending", testUpdateRunTerminal},
		{"UpdateRun/errors", testUpdateRunErrors},
		{"ListRuns/order and filters", testListRuns},
		{"ListRuns/limit", testListRunsLimit},
		{"ListRuns/invalid status", testListRunsInvalid},
		{"PutStep/round trip", testPutStepRoundTrip},
		{"PutStep/repeat is a no-op", testPutStepRepeat},
		{"PutStep/different record at same key", testPutStepConflict},
		{"PutStep/cuts long text", testPutStepCuts},
		{"PutStep/invalid", testPutStepInvalid},
		{"PutStep/agent step", testPutStepAgent},
		{"PutStep/trust report", testPutStepTrust},
		{"PutStep/waiting record is replaced", testPutStepWaiting},
		{"ListSteps/execution order", testListStepsOrder},
		{"ListSteps/ties by start, not by name", testListStepsTies},
		{"GetRunWithSteps", testGetRunWithSteps},
		{"AddUsage/totals", testAddUsage},
		{"AddUsage/errors", testAddUsageErrors},
		{"AddUsage/concurrent", testAddUsageConcurrent},
		{"AddUsage/any order, redelivered", testAddUsageAnyOrder},
		{"Approval/round trip", testApprovalRoundTrip},
		{"Approval/create errors", testApprovalCreateErrors},
		{"DecideApproval/single use", testDecideSingleUse},
		{"DecideApproval/expiry", testDecideExpiry},
		{"DecideApproval/errors", testDecideErrors},
		{"DecideApproval/concurrent", testDecideConcurrent},
		{"ClaimDedup/rules", testClaimRules},
		{"ClaimDedup/keys are independent", testClaimKeys},
		{"ClaimDedup/invalid", testClaimInvalid},
		{"ClaimDedup/concurrent claim", testClaimConcurrent},
		{"ClaimDedup/concurrent takeover", testClaimConcurrentTakeover},
		{"ReleaseDedup", testReleaseDedup},
		{"ClaimRun/rules", testRunClaimRules},
		{"ClaimRun/release", testRunClaimRelease},
		{"ClaimRun/invalid", testRunClaimInvalid},
		{"ClaimRun/concurrent", testRunClaimConcurrent},
		{"ListRuns/stage and offset", testListRunsStageOffset},
		{"ClaimTick/rules", testClaimTickRules},
		{"ClaimTick/invalid", testClaimTickInvalid},
		{"ClaimTick/concurrent", testClaimTickConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

func f64(v float64) *float64 { return &v }

func tp(t time.Time) *time.Time { return &t }

func fullRun(id, pipeline string, started time.Time) store.Run {
	return store.Run{
		ID:                id,
		Pipeline:          pipeline,
		Status:            store.RunRunning,
		Reason:            "",
		Stage:             store.StageProduction,
		Source:            "alertmanager",
		Team:              "sre",
		Trigger:           json.RawMessage(`{"labels": {"alertname": "DiskFull", "severity": "critical"}, "summary": "disk / is 97% full"}`),
		Fingerprint:       "fp-" + id,
		ParentRunID:       "parent-1",
		ConfigFingerprint: "a1b2c3d4e5f6",
		Usage:             store.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: f64(0.25)},
		StartedAt:         started,
	}
}

func minimalRun(id, pipeline string, started time.Time) store.Run {
	return store.Run{ID: id, Pipeline: pipeline, Status: store.RunRunning, StartedAt: started}
}

func fullStep(runID, name string, index, attempt int) store.StepRecord {
	return store.StepRecord{
		RunID:               runID,
		Name:                name,
		Index:               index,
		Attempt:             attempt,
		Executor:            "anthropic",
		Status:              store.StepCompleted,
		PrimaryConfidence:   f64(0.875),
		VerifierConfidence:  f64(0.5),
		EffectiveConfidence: f64(0.5),
		Output:              json.RawMessage(`{"confidence": 0.875, "summary": "disk filled by logs", "next_step_context": "", "proceed": true}`),
		VerifierOutput:      json.RawMessage(`{"confidence":0.5,"summary":"plausible","next_step_context":""}`),
		RawResponse:         "{\"confidence\": 0.875, \"summary\": \"disk filled by logs\"} — ünïcödé",
		Prompt:              "Diagnose the alert: disk / is 97% full",
		Model:               "claude-sonnet-4",
		Provider:            "anthropic",
		InputTokens:         1200,
		OutputTokens:        300,
		CostUSD:             f64(0.0125),
		Flags:               []string{"verifier_disagreed"},
		StartedAt:           t0.Add(time.Second).In(elsewhere),
		FinishedAt:          t0.Add(3 * time.Second).In(elsewhere),
		DurationMS:          2000,
	}
}

func approval(id string, created time.Time, ttl time.Duration) store.Approval {
	return store.Approval{
		ID:        id,
		RunID:     "run-1",
		Step:      "approve-restart",
		Pipeline:  "disk-full",
		Message:   "Restart the log shipper on host-7?",
		TaskToken: "AQCEAAAAKgAAAAMAAAAAAAAAAe+token",
		CreatedAt: created,
		ExpiresAt: created.Add(ttl),
	}
}

// canon renders v as JSON with times in UTC, for comparisons that name the
// differing field in the failure message.
func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

func utc(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	u := p.UTC()
	return &u
}

func wantRun(r store.Run) store.Run {
	r.StartedAt = r.StartedAt.UTC()
	r.CompletedAt = utc(r.CompletedAt)
	r.ResumedAt = utc(r.ResumedAt)
	return r
}

func wantStep(r store.StepRecord) store.StepRecord {
	r.StartedAt = r.StartedAt.UTC()
	r.FinishedAt = r.FinishedAt.UTC()
	if len(r.Flags) == 0 {
		r.Flags = nil
	}
	return r
}

func wantApproval(a store.Approval) store.Approval {
	a.CreatedAt = a.CreatedAt.UTC()
	a.ExpiresAt = a.ExpiresAt.UTC()
	a.DecidedAt = utc(a.DecidedAt)
	return a
}

func sameRun(t *testing.T, got, want store.Run) {
	t.Helper()
	if g, w := canon(t, wantRun(got)), canon(t, wantRun(want)); g != w {
		t.Errorf("run differs\n got: %s\nwant: %s", g, w)
	}
}

func sameSteps(t *testing.T, got, want []store.StepRecord) {
	t.Helper()
	norm := func(in []store.StepRecord) []store.StepRecord {
		out := make([]store.StepRecord, len(in))
		for i, r := range in {
			out[i] = wantStep(r)
		}
		return out
	}
	if g, w := canon(t, norm(got)), canon(t, norm(want)); g != w {
		t.Errorf("steps differ\n got: %s\nwant: %s", g, w)
	}
}

func sameApproval(t *testing.T, got, want store.Approval) {
	t.Helper()
	if got.TaskToken != want.TaskToken { // not in the JSON form
		t.Errorf("task token %q, want %q", got.TaskToken, want.TaskToken)
	}
	if g, w := canon(t, wantApproval(got)), canon(t, wantApproval(want)); g != w {
		t.Errorf("approval differs\n got: %s\nwant: %s", g, w)
	}
}

func mustErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func createRuns(t *testing.T, s store.Store, runs ...store.Run) {
	t.Helper()
	for _, r := range runs {
		must(t, s.CreateRun(context.Background(), r))
	}
}
