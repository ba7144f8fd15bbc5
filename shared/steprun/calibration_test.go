package steprun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// seedBucket records n executions of the bucket at confidence trust,
// the first correct ones labelled correct and the rest incorrect (by run
// feedback), and returns nothing: the history a calibrated step reads.
func seedBucket(t *testing.T, st store.Store, b store.Bucket, prefix string, trust float64, correct, incorrect int) {
	t.Helper()
	ctx := context.Background()
	for i := range correct + incorrect {
		id := fmt.Sprintf("%s-%d", prefix, i)
		at := testStart.Add(-time.Duration(i+1) * time.Hour)
		if err := st.CreateRun(ctx, store.Run{ID: id, Pipeline: b.Pipeline, Status: store.RunCompleted, StartedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordSample(ctx, store.Sample{Bucket: b, RunID: id, Step: b.Step, StartedAt: at, Trust: trust}); err != nil {
			t.Fatal(err)
		}
		o := store.OutcomeCorrect
		if i >= correct {
			o = store.OutcomeIncorrect
		}
		if err := st.PutRunFeedback(ctx, id, store.Feedback{Outcome: o, SubmittedAt: at.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCalibratedGate: a calibrated step's C and gate, with the history of
// its bucket at n_min-1, n_min and n_min+1 labelled executions in its bin
// (0.8..0.9: the answer says 0.85), labelled executions in another bin
// that do not count, and the uncalibrated policies.
func TestCalibratedGate(t *testing.T) {
	const answer = `'{"confidence": 0.85, "summary": "disk full", "next_step_context": ""}'`
	const replies = "triage: [" + answer + ", " + answer + "]\n"
	type want struct {
		status    string
		combined  float64
		policy    string
		c         *float64
		n         int
		validated bool
		reason    string
	}
	tests := []struct {
		name           string
		cal            pipeline.Calibration
		correct, wrong int
		want           want
	}{
		{"enforced, n_min-1 labels: uncalibrated, proceed", pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 4, OnUncalibrated: "proceed"}, 2, 1,
			want{task.StatusCompleted, 0.85, store.PolicyTrustVector, nil, 3, false, ""}},
		{"enforced, n_min labels: the bin's mean 0.5 replaces 0.85", pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 4, OnUncalibrated: "proceed"}, 2, 2,
			want{task.StatusEscalated, 0.5, store.PolicyTrustVector, ptr(0.5), 4, true,
				`step "triage" escalated: combined trust 0.5 is below the threshold 0.75 (calibrated: bin 0.8..0.9 has mean label 0.5 over 4 labelled executions): disk full`}},
		{"enforced, n_min+1 labels: mean 0.8 passes", pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 4, OnUncalibrated: "proceed"}, 4, 1,
			want{task.StatusCompleted, 0.8, store.PolicyTrustVector, ptr(0.8), 5, true, ""}},
		{"enforced, n_min-1 labels, escalate: C is 0", pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 4, OnUncalibrated: "escalate"}, 3, 0,
			want{task.StatusEscalated, 0, store.PolicyTrustVector, ptr(0.0), 3, false,
				`step "triage" escalated: combined trust 0 is below the threshold 0.75 (uncalibrated: bin 0.8..0.9 has 3 of the 4 labelled executions it needs, and on_uncalibrated is escalate): disk full`}},
		{"fresh install, escalate: no history, C is 0", pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 20, OnUncalibrated: "escalate"}, 0, 0,
			want{task.StatusEscalated, 0, store.PolicyTrustVector, ptr(0.0), 0, false,
				`step "triage" escalated: combined trust 0 is below the threshold 0.75 (uncalibrated: bin 0.8..0.9 has 0 of the 20 labelled executions it needs, and on_uncalibrated is escalate): disk full`}},
		{"shadow: C recorded, the confidence gates", pipeline.Calibration{BinWidth: 0.1, NMin: 4, OnUncalibrated: "proceed"}, 2, 2,
			want{task.StatusCompleted, 0.85, store.PolicyLegacyConfidence, ptr(0.5), 4, true, ""}},
		{"wider bins take in more history", pipeline.Calibration{Enforce: true, BinWidth: 0.5, NMin: 4, OnUncalibrated: "proceed"}, 2, 1,
			want{task.StatusEscalated, 0.4, store.PolicyTrustVector, ptr(0.4), 5, true,
				`step "triage" escalated: combined trust 0.4 is below the threshold 0.75 (calibrated: bin 0.5..1 has mean label 0.4 over 5 labelled executions): disk full`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, replies)
			ctx := context.Background()
			st := seqStep("triage", "Diagnose {{ summary }}")
			// A first run finds the step's bucket (and is a sample of it,
			// unlabelled).
			probe := newRequest(t, task.ModeStep, st)
			probe.Run.ID = "probe"
			if _, err := e.h.Respond(ctx, probe); err != nil {
				t.Fatal(err)
			}
			recs, err := e.st.ListSteps(ctx, "probe")
			if err != nil || len(recs) != 1 {
				t.Fatalf("probe records %v, %v", recs, err)
			}
			if recs[0].PromptHash != store.PromptHash("Diagnose {{ summary }}") {
				t.Fatalf("prompt hash %q not recorded", recs[0].PromptHash)
			}
			b := store.BucketOf("demo", recs[0])
			seedBucket(t, e.st, b, "h", 0.85, tt.correct, tt.wrong)
			// Another bin's labels (0.5..0.6 with bins of 0.1): counted
			// only by bins that wide.
			seedBucket(t, e.st, b, "other", 0.55, 0, 2)
			// The same step with an edited prompt: another bucket.
			edited := b
			edited.PromptHash = store.PromptHash("Diagnose {{ summary }} now")
			seedBucket(t, e.st, edited, "edited", 0.85, 10, 0)

			cal := tt.cal
			st.Calibration = &cal
			resp, err := e.h.Respond(ctx, newRequest(t, task.ModeStep, st))
			if err != nil {
				t.Fatal(err)
			}
			rec := stepRecords(t, e.st, "triage")[0]
			rep := rec.Trust
			if resp.Status != tt.want.status || string(rec.Status) != tt.want.status || resp.Reason != tt.want.reason {
				t.Errorf("status %s (record %s), reason %q\nwant %s, %q", resp.Status, rec.Status, resp.Reason, tt.want.status, tt.want.reason)
			}
			if rep == nil || rep.Calibration == nil {
				t.Fatalf("no calibration in the trust report: %+v", rep)
			}
			if rep.CombinedTrust != tt.want.combined || rep.Gate.Policy != tt.want.policy || !sameFloat(rep.Signals.C, tt.want.c) || rep.Version != 2 {
				t.Errorf("combined %v policy %s C %v, want %v %s %v", rep.CombinedTrust, rep.Gate.Policy, deref(rep.Signals.C), tt.want.combined, tt.want.policy, deref(tt.want.c))
			}
			assertSeen(t, resp, rec, "triage", tt.want.combined)
			if *rec.EffectiveConfidence != 0.85 {
				t.Errorf("the record's effective confidence %v, want 0.85 (S after V, what the bins sort by)", *rec.EffectiveConfidence)
			}
			c := rep.Calibration
			if c.N != tt.want.n || c.Validated != tt.want.validated || c.BucketKey != b.Key() || c.Bucket != b || c.Enforced != cal.Enforce || c.NMin != cal.NMin {
				t.Errorf("calibration %+v, want n %d validated %v bucket %s", c, tt.want.n, tt.want.validated, b.Key())
			}
			// The step's own execution joined its bucket's history.
			samples, err := e.st.BucketSamples(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range samples {
				found = found || (s.RunID == "run-1" && s.Trust == 0.85 && !s.DeterministicFailed)
			}
			if !found {
				t.Errorf("run-1 left no sample in its bucket: %+v", samples)
			}
		})
	}
}

// TestSampleOnlyWithCalibration: a step without calibration records no
// sample (its history costs requests only where calibration is
// declared); the same step with calibration that does not enforce
// records its sample, labelled 0 by its failed deterministic check, and
// the gate still decides on the check alone.
func TestSampleOnlyWithCalibration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	for _, tt := range []struct {
		name    string
		cal     *pipeline.Calibration
		samples int
	}{
		{"no calibration", nil, 0},
		{"calibration, not enforced", &pipeline.Calibration{BinWidth: 0.1, NMin: 20, OnUncalibrated: "proceed"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "triage: ['{\"confidence\": 0.9, \"summary\": \"ok\", \"next_step_context\": \"\"}']\n")
			st := seqStep("triage", "Diagnose")
			st.Checks = []*pipeline.Check{webhookCheck("health", srv.URL, "")}
			st.Calibration = tt.cal
			resp, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != task.StatusEscalated {
				t.Fatalf("status %s, want escalated", resp.Status)
			}
			rec := stepRecords(t, e.st, "triage")[0]
			if tt.cal == nil && (rec.Trust.Calibration != nil || rec.Trust.Signals.C != nil) {
				t.Errorf("a step without calibration reports one: %+v", rec.Trust.Calibration)
			}
			samples, err := e.st.BucketSamples(context.Background(), store.BucketOf("demo", rec))
			if err != nil {
				t.Fatal(err)
			}
			if len(samples) != tt.samples {
				t.Fatalf("%d samples, want %d", len(samples), tt.samples)
			}
			if tt.samples == 0 {
				return
			}
			if samples[0].Trust != 0.9 || !samples[0].DeterministicFailed {
				t.Fatalf("sample %+v, want 0.9 with a failed check", samples[0])
			}
			if l, src, ok := samples[0].Label(); !ok || l != 0 || src != store.LabelDeterministic {
				t.Errorf("label %v %s %v, want 0 from the check", l, src, ok)
			}
		})
	}
}

// failingBuckets is a store whose bucket reads fail.
type failingBuckets struct{ *sqlite.Store }

func (failingBuckets) BucketSamples(context.Context, store.Bucket) ([]store.Sample, error) {
	return nil, errors.New("throttled")
}

// TestCalibrationLookupFails: a failed read counts as an unvalidated bin
// (escalate: C 0; proceed: the confidence stands), its error reported.
func TestCalibrationLookupFails(t *testing.T) {
	for _, tt := range []struct {
		policy   string
		status   string
		combined float64
	}{{"proceed", task.StatusCompleted, 0.85}, {"escalate", task.StatusEscalated, 0}} {
		t.Run(tt.policy, func(t *testing.T) {
			e := newEnv(t, `triage: ['{"confidence": 0.85, "summary": "disk full", "next_step_context": ""}']`+"\n")
			e.h.Store = failingBuckets{e.st}
			st := seqStep("triage", "Diagnose")
			st.Calibration = &pipeline.Calibration{Enforce: true, BinWidth: 0.1, NMin: 1, OnUncalibrated: tt.policy}
			resp, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, st))
			if err != nil {
				t.Fatal(err)
			}
			rep := stepRecords(t, e.st, "triage")[0].Trust
			if resp.Status != tt.status || rep.CombinedTrust != tt.combined || rep.Calibration.Error == "" || !strings.Contains(rep.Calibration.Error, "throttled") || rep.Calibration.Validated {
				t.Errorf("status %s combined %v calibration %+v", resp.Status, rep.CombinedTrust, rep.Calibration)
			}
		})
	}
}

// assertSeen: the confidence later steps see of step (the Response's
// output and steps, which when: and templates read) and its recorded
// output are the combined trust its gate decided on.
func assertSeen(t *testing.T, resp task.Response, rec store.StepRecord, step string, combined float64) {
	t.Helper()
	for what, out := range map[string]json.RawMessage{"response output": resp.Output, "response steps": resp.Steps[step], "recorded output": rec.Output} {
		var o struct {
			Confidence *float64 `json:"confidence"`
		}
		if err := json.Unmarshal(out, &o); err != nil || o.Confidence == nil || *o.Confidence != combined {
			t.Errorf("%s: confidence %v (%v), want the combined trust %v: %s", what, deref(o.Confidence), err, combined, out)
		}
	}
}
