package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
)

// TestCalibrationThroughEmulator runs a calibrated step (answering 0.86,
// bin 0.8..0.9) in the real step bootstrap under the Runtime Interface
// Emulator, its bucket in DynamoDB Local, as labels accumulate: at
// n_min-1 labelled executions it is uncalibrated and 0.86 stands, at
// n_min the bin's mean replaces it and escalates, at n_min+1 the mean
// reaches the threshold; a step that escalates when uncalibrated, on a
// fresh bucket, escalates at 0. Each invocation adds its own sample.
func TestCalibrationThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t)
	model := trustModel(t)
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"MODEL_API_KEY=test-key",
	)
	st := dynamo.New(client, table)
	ctx := context.Background()
	modelURL := model.URL + "/v1"
	calibrated := func(onUncalibrated string) map[string]any {
		return map[string]any{"calibration": map[string]any{"enforce": true, "bin_width": 0.1, "n_min": 3, "on_uncalibrated": onUncalibrated},
			"confidence_threshold": 0.75, "executor_config": map[string]any{"base_url": modelURL, "api_key": "${MODEL_API_KEY}", "model": "gpt-4o-mini"}}
	}
	invoke := func(runID, prompt string, extra map[string]any) (task.Response, store.StepRecord) {
		t.Helper()
		resp := answer(t, e, e.Invoke(t, trustEvent(t, task.ModeStep, runID, prompt, false, modelURL, "", extra)))
		recs, err := st.ListSteps(ctx, runID)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%d records, %v", len(recs), err)
		}
		return resp, recs[0]
	}
	check := func(resp task.Response, rec store.StepRecord, status string, combined float64, c string, n int) {
		t.Helper()
		rep := rec.Trust
		if resp.Status != status || string(rec.Status) != status || rep == nil || rep.Calibration == nil {
			t.Fatalf("status %s / %s, report %+v; want %s (%s)", resp.Status, rec.Status, rep, status, resp.Reason)
		}
		got := "null"
		if rep.Signals.C != nil {
			got = fmt.Sprint(*rep.Signals.C)
		}
		if rep.CombinedTrust != combined || got != c || rep.Calibration.N != n || rep.Gate.Policy != store.PolicyTrustVector || rep.Signals.S != 0.86 {
			t.Errorf("combined %v C %s n %d policy %s; want %v %s %d", rep.CombinedTrust, got, rep.Calibration.N, rep.Gate.Policy, combined, c, n)
		}
	}
	label := func(runID string, o store.Outcome) {
		t.Helper()
		if err := st.PutStepFeedback(ctx, runID, "investigate", store.Feedback{Outcome: o, SubmittedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	const prompt = "Investigate, calibrated"
	resp, rec := invoke("run-rie-cal-1", prompt, calibrated("proceed"))
	check(resp, rec, task.StatusCompleted, 0.86, "null", 0)
	if rec.PromptHash != store.PromptHash(prompt) || rec.Model == "" {
		t.Errorf("record's bucket parts: prompt hash %q model %q", rec.PromptHash, rec.Model)
	}
	invoke("run-rie-cal-2", prompt, calibrated("proceed"))
	label("run-rie-cal-1", store.OutcomeCorrect)
	label("run-rie-cal-2", store.OutcomeCorrect)

	resp, rec = invoke("run-rie-cal-3", prompt, calibrated("proceed")) // n_min-1
	check(resp, rec, task.StatusCompleted, 0.86, "null", 2)
	// The run's feedback labels its step too (the run exists: the step
	// Lambda created it).
	if err := st.PutRunFeedback(ctx, "run-rie-cal-3", store.Feedback{Outcome: store.OutcomeIncorrect, SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	resp, rec = invoke("run-rie-cal-4", prompt, calibrated("proceed")) // n_min, mean 2/3
	check(resp, rec, task.StatusEscalated, 0.666666667, "0.666666667", 3)
	if !strings.Contains(resp.Reason, "calibrated: bin 0.8..0.9 has mean label 0.666666667 over 3 labelled executions") {
		t.Errorf("reason %q", resp.Reason)
	}
	label("run-rie-cal-4", store.OutcomeCorrect)
	resp, rec = invoke("run-rie-cal-5", prompt, calibrated("proceed")) // n_min+1, mean 3/4
	check(resp, rec, task.StatusCompleted, 0.75, "0.75", 4)

	samples, err := st.BucketSamples(ctx, store.BucketOf("rie-trust", rec))
	if err != nil || len(samples) != 5 {
		t.Fatalf("bucket holds %d samples (%v), want the 5 executions", len(samples), err)
	}
	for i, s := range samples {
		if s.RunID != fmt.Sprintf("run-rie-cal-%d", i+1) || s.Trust != 0.86 {
			t.Errorf("sample %d: %+v", i, s)
		}
	}

	// A fresh bucket (another prompt) under on_uncalibrated: escalate.
	resp, rec = invoke("run-rie-cal-fresh", "Investigate, fresh", calibrated("escalate"))
	check(resp, rec, task.StatusEscalated, 0, "0", 0)
	if !strings.Contains(resp.Reason, "uncalibrated: bin 0.8..0.9 has 0 of the 3 labelled executions it needs, and on_uncalibrated is escalate") {
		t.Errorf("reason %q", resp.Reason)
	}
	if out := e.Output(); strings.Contains(out, "test-key") {
		t.Error("a secret appears in the function's logs")
	}
}
