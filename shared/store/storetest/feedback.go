package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// RunFeedback runs the conformance tests of store.FeedbackStore: feedback
// on runs and steps, calibration samples, label precedence and bucket
// isolation. newStore must return a fresh, empty store for every call.
func RunFeedback(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"Feedback/run upsert", testRunFeedbackUpsert},
		{"Feedback/step upsert", testStepFeedbackUpsert},
		{"Feedback/invalid", testFeedbackInvalid},
		{"Samples/label precedence", testLabelPrecedence},
		{"Samples/feedback survives a rewritten sample", testSampleRewrite},
		{"Samples/run feedback before the step finished", testRunFeedbackBeforeSample},
		{"Samples/step feedback on a waiting step", testStepFeedbackWaiting},
		{"Samples/bucket isolation", testBucketIsolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// gatedStep is a finished record of a step in bucket b's configuration.
func gatedStep(runID, name string, started time.Time, promptHash string) store.StepRecord {
	rec := fullStep(runID, name, 0, 1)
	rec.PromptHash = promptHash
	rec.StartedAt = started
	rec.FinishedAt = started.Add(time.Second)
	return rec
}

func fb(o store.Outcome, notes string, at time.Time) store.Feedback {
	return store.Feedback{Outcome: o, Notes: notes, SubmittedAt: at}
}

func sameFeedback(t *testing.T, got *store.Feedback, want *store.Feedback) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Errorf("feedback %+v, want none", *got)
		}
		return
	}
	if got == nil {
		t.Fatalf("no feedback, want %+v", *want)
	}
	if got.Outcome != want.Outcome || got.Notes != want.Notes || !got.SubmittedAt.Equal(want.SubmittedAt) || got.SubmittedAt.Location() != time.UTC {
		t.Errorf("feedback %+v, want %+v (in UTC)", *got, *want)
	}
}

func testRunFeedbackUpsert(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustErr(t, s.PutRunFeedback(ctx, "nope", fb(store.OutcomeCorrect, "", t0)), store.ErrNotFound)
	_, err := s.GetRunFeedback(ctx, "nope")
	mustErr(t, err, store.ErrNotFound)
	createRuns(t, s, minimalRun("run-1", "disk-full", t0))
	got, err := s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, got, nil)
	first := fb(store.OutcomeCorrect, "right call — ünïcödé", t0.In(elsewhere))
	must(t, s.PutRunFeedback(ctx, "run-1", first))
	got, err = s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, got, &first)
	second := fb(store.OutcomeIncorrect, "", t0.Add(time.Minute))
	must(t, s.PutRunFeedback(ctx, "run-1", second))
	got, err = s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, got, &second)
	// Run feedback is not a step's.
	must(t, s.PutStep(ctx, gatedStep("run-1", "triage", t0, "abc")))
	sf, err := s.GetStepFeedback(ctx, "run-1", "triage")
	must(t, err)
	sameFeedback(t, sf, nil)
}

func testStepFeedbackUpsert(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "disk-full", t0))
	mustErr(t, s.PutStepFeedback(ctx, "run-1", "triage", fb(store.OutcomeCorrect, "", t0)), store.ErrNotFound)
	mustErr(t, s.PutStepFeedback(ctx, "nope", "triage", fb(store.OutcomeCorrect, "", t0)), store.ErrNotFound)
	_, err := s.GetStepFeedback(ctx, "nope", "triage")
	mustErr(t, err, store.ErrNotFound)
	retried := gatedStep("run-1", "group/triage#1", t0, "abc")
	retried.Status = store.StepFailed
	must(t, s.PutStep(ctx, retried))
	second := retried
	second.Attempt, second.Status = 2, store.StepCompleted
	must(t, s.PutStep(ctx, second))
	must(t, s.PutStep(ctx, gatedStep("run-1", "group/triage", t0, "abc")))
	a := fb(store.OutcomePartial, "half right", t0)
	must(t, s.PutStepFeedback(ctx, "run-1", "group/triage#1", a))
	got, err := s.GetStepFeedback(ctx, "run-1", "group/triage#1")
	must(t, err)
	sameFeedback(t, got, &a)
	other, err := s.GetStepFeedback(ctx, "run-1", "group/triage")
	must(t, err)
	sameFeedback(t, other, nil)
	b := fb(store.OutcomeCorrect, "on second look", t0.Add(time.Hour))
	must(t, s.PutStepFeedback(ctx, "run-1", "group/triage#1", b))
	got, err = s.GetStepFeedback(ctx, "run-1", "group/triage#1")
	must(t, err)
	sameFeedback(t, got, &b)
	rf, err := s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, rf, nil)
}

func testFeedbackInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "disk-full", t0))
	must(t, s.PutStep(ctx, gatedStep("run-1", "triage", t0, "abc")))
	cases := []struct {
		name string
		f    store.Feedback
		want error
	}{
		{"unknown outcome", fb("wrong", "", t0), store.ErrInvalid},
		{"empty outcome", fb("", "", t0), store.ErrInvalid},
		{"case matters", fb("Correct", "", t0), store.ErrInvalid},
		{"no time", fb(store.OutcomeCorrect, "", time.Time{}), store.ErrInvalid},
		{"notes above the limit", fb(store.OutcomeCorrect, strings.Repeat("n", store.MaxNotesBytes+1), t0), store.ErrTooLarge},
		{"invalid UTF-8", fb(store.OutcomeCorrect, "bad \xff", t0), store.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mustErr(t, s.PutRunFeedback(ctx, "run-1", c.f), c.want)
			mustErr(t, s.PutStepFeedback(ctx, "run-1", "triage", c.f), c.want)
		})
	}
	mustErr(t, s.PutStepFeedback(ctx, "run-1", "", fb(store.OutcomeCorrect, "", t0)), store.ErrInvalid)
	got, err := s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, got, nil)
	atLimit := fb(store.OutcomeCorrect, strings.Repeat("n", store.MaxNotesBytes), t0)
	must(t, s.PutRunFeedback(ctx, "run-1", atLimit))
	got, err = s.GetRunFeedback(ctx, "run-1")
	must(t, err)
	sameFeedback(t, got, &atLimit)
	mustErr(t, s.RecordSample(ctx, store.Sample{RunID: "run-1", Step: "triage", StartedAt: t0, Trust: 0.5}), store.ErrInvalid)
	b := store.BucketOf("disk-full", gatedStep("run-1", "triage", t0, "abc"))
	mustErr(t, s.RecordSample(ctx, store.Sample{Bucket: b, RunID: "run-1", Step: "triage", StartedAt: t0, Trust: 1.5}), store.ErrInvalid)
	mustErr(t, s.RecordSample(ctx, store.Sample{Bucket: b, RunID: "run-1", Step: "triage", Trust: 0.5}), store.ErrInvalid)
}

// sampleOf records a run with one finished step in bucket hash and its
// sample, and returns the sample.
func sampleOf(t *testing.T, s store.Store, runID string, started time.Time, hash string, trust float64, detFailed bool) store.Sample {
	t.Helper()
	ctx := context.Background()
	r := minimalRun(runID, "disk-full", started)
	r.Status = store.RunCompleted
	createRuns(t, s, r)
	rec := gatedStep(runID, "triage", started, hash)
	must(t, s.PutStep(ctx, rec))
	smp := store.Sample{Bucket: store.BucketOf("disk-full", rec), RunID: runID, Step: "triage", StartedAt: started, Trust: trust, DeterministicFailed: detFailed}
	must(t, s.RecordSample(ctx, smp))
	return smp
}

type label struct {
	run    string
	trust  float64
	label  float64
	source string
}

func labels(t *testing.T, s store.Store, b store.Bucket) []label {
	t.Helper()
	got, err := s.BucketSamples(context.Background(), b)
	must(t, err)
	out := make([]label, 0, len(got))
	for _, smp := range got {
		if smp.Bucket != b {
			t.Errorf("sample of run %s has bucket %+v, want %+v", smp.RunID, smp.Bucket, b)
		}
		l, src, ok := smp.Label()
		if !ok {
			src = "none"
		}
		out = append(out, label{smp.RunID, smp.Trust, l, src})
	}
	return out
}

func sameLabels(t *testing.T, got, want []label) {
	t.Helper()
	if canon(t, got) != canon(t, want) {
		t.Errorf("labels\n got: %+v\nwant: %+v", got, want)
	}
}

func testLabelPrecedence(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := t0.Add(time.Hour)
	// Samples in start order; the read returns them oldest first.
	a := sampleOf(t, s, "r-a", t0.Add(1*time.Second), "abc", 0.9, true) // failed check, step feedback correct, run incorrect: 1 (step)
	sampleOf(t, s, "r-b", t0.Add(2*time.Second), "abc", 0.3, true)      // failed check, run correct: 0 (check)
	sampleOf(t, s, "r-c", t0.Add(3*time.Second), "abc", 0.75, false)    // run partial: 0.5 (run)
	sampleOf(t, s, "r-d", t0.Add(4*time.Second), "abc", 0.8, false)     // nothing
	sampleOf(t, s, "r-e", t0.Add(5*time.Second), "abc", 0.8, false)     // step incorrect over run correct: 0 (step)
	must(t, s.PutStepFeedback(ctx, "r-a", "triage", fb(store.OutcomeCorrect, "", at)))
	must(t, s.PutRunFeedback(ctx, "r-a", fb(store.OutcomeIncorrect, "", at)))
	must(t, s.PutRunFeedback(ctx, "r-b", fb(store.OutcomeCorrect, "", at)))
	must(t, s.PutRunFeedback(ctx, "r-c", fb(store.OutcomePartial, "", at)))
	must(t, s.PutRunFeedback(ctx, "r-e", fb(store.OutcomeCorrect, "", at)))
	must(t, s.PutStepFeedback(ctx, "r-e", "triage", fb(store.OutcomeIncorrect, "", at)))
	sameLabels(t, labels(t, s, a.Bucket), []label{
		{"r-a", 0.9, 1, store.LabelStepFeedback},
		{"r-b", 0.3, 0, store.LabelDeterministic},
		{"r-c", 0.75, 0.5, store.LabelRunFeedback},
		{"r-d", 0.8, 0, "none"},
		{"r-e", 0.8, 0, store.LabelStepFeedback},
	})
	// A later verdict replaces the earlier one on the samples too.
	must(t, s.PutRunFeedback(ctx, "r-c", fb(store.OutcomeCorrect, "", at.Add(time.Minute))))
	must(t, s.PutStepFeedback(ctx, "r-a", "triage", fb(store.OutcomePartial, "", at.Add(time.Minute))))
	got := labels(t, s, a.Bucket)
	if len(got) != 5 || got[0].label != 0.5 || got[2].label != 1 || got[2].source != store.LabelRunFeedback {
		t.Errorf("after new feedback: %+v, want r-a 0.5 (step) and r-c 1 (run)", got)
	}
}

func testSampleRewrite(t *testing.T, s store.Store) {
	ctx := context.Background()
	smp := sampleOf(t, s, "r-a", t0, "abc", 0.6, false)
	must(t, s.PutStepFeedback(ctx, "r-a", "triage", fb(store.OutcomeCorrect, "", t0.Add(time.Hour))))
	must(t, s.RecordSample(ctx, smp)) // a retried Task
	must(t, s.RecordSample(ctx, smp))
	sameLabels(t, labels(t, s, smp.Bucket), []label{{"r-a", 0.6, 1, store.LabelStepFeedback}})
}

func testRunFeedbackBeforeSample(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("r-a", "disk-full", t0))
	must(t, s.PutRunFeedback(ctx, "r-a", fb(store.OutcomePartial, "", t0.Add(time.Minute))))
	rec := gatedStep("r-a", "triage", t0, "abc")
	must(t, s.PutStep(ctx, rec))
	smp := store.Sample{Bucket: store.BucketOf("disk-full", rec), RunID: "r-a", Step: "triage", StartedAt: t0, Trust: 0.4}
	must(t, s.RecordSample(ctx, smp))
	sameLabels(t, labels(t, s, smp.Bucket), []label{{"r-a", 0.4, 0.5, store.LabelRunFeedback}})
}

func testStepFeedbackWaiting(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("r-a", "disk-full", t0))
	rec := gatedStep("r-a", "triage", t0, "abc")
	rec.Status = store.StepWaiting
	must(t, s.PutStep(ctx, rec))
	b := store.BucketOf("disk-full", rec)
	// The approver marks the answer while the step waits for them.
	must(t, s.PutStepFeedback(ctx, "r-a", "triage", fb(store.OutcomeIncorrect, "wrong host", t0.Add(time.Minute))))
	sameLabels(t, labels(t, s, b), []label{}) // no sample yet
	rec.Status = store.StepEscalated
	must(t, s.PutStep(ctx, rec))
	must(t, s.RecordSample(ctx, store.Sample{Bucket: b, RunID: "r-a", Step: "triage", StartedAt: t0, Trust: 0.95}))
	sameLabels(t, labels(t, s, b), []label{{"r-a", 0.95, 0, store.LabelStepFeedback}})
}

func testBucketIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := sampleOf(t, s, "r-a", t0, "prompt-v1", 0.9, false)
	edited := sampleOf(t, s, "r-b", t0.Add(time.Second), "prompt-v2", 0.9, false)
	must(t, s.PutRunFeedback(ctx, "r-a", fb(store.OutcomeCorrect, "", t0)))
	must(t, s.PutRunFeedback(ctx, "r-b", fb(store.OutcomeIncorrect, "", t0)))
	if old.Bucket.Key() == edited.Bucket.Key() {
		t.Fatal("a changed prompt hash kept the bucket key")
	}
	sameLabels(t, labels(t, s, old.Bucket), []label{{"r-a", 0.9, 1, store.LabelRunFeedback}})
	sameLabels(t, labels(t, s, edited.Bucket), []label{{"r-b", 0.9, 0, store.LabelRunFeedback}})
	// Another pipeline's step of the same name and configuration, and
	// another step of this pipeline.
	r := minimalRun("r-c", "other", t0)
	createRuns(t, s, r)
	rec := gatedStep("r-c", "triage", t0, "prompt-v1")
	must(t, s.PutStep(ctx, rec))
	must(t, s.RecordSample(ctx, store.Sample{Bucket: store.BucketOf("other", rec), RunID: "r-c", Step: "triage", StartedAt: t0, Trust: 0.2}))
	createRuns(t, s, minimalRun("r-d", "disk-full", t0))
	act := gatedStep("r-d", "act#1", t0, "prompt-v1")
	must(t, s.PutStep(ctx, act))
	must(t, s.RecordSample(ctx, store.Sample{Bucket: store.BucketOf("disk-full", act), RunID: "r-d", Step: "act#1", StartedAt: t0, Trust: 0.2}))
	sameLabels(t, labels(t, s, old.Bucket), []label{{"r-a", 0.9, 1, store.LabelRunFeedback}})
	all, err := s.ListBuckets(ctx, "disk-full", "")
	must(t, err)
	want := []store.Bucket{store.BucketOf("disk-full", act), old.Bucket, edited.Bucket}
	if old.Bucket.Key() > edited.Bucket.Key() {
		want[1], want[2] = want[2], want[1]
	}
	if canon(t, all) != canon(t, want) {
		t.Errorf("buckets of disk-full\n got: %+v\nwant: %+v", all, want)
	}
	triage, err := s.ListBuckets(ctx, "disk-full", "triage")
	must(t, err)
	if canon(t, triage) != canon(t, want[1:]) {
		t.Errorf("buckets of disk-full triage\n got: %+v\nwant: %+v", triage, want[1:])
	}
	none, err := s.ListBuckets(ctx, "nope", "")
	must(t, err)
	if len(none) != 0 {
		t.Errorf("buckets of an unknown pipeline: %+v", none)
	}
}
