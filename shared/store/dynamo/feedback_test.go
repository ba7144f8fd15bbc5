package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/store/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	c := dynamotest.Client(t)
	storetest.RunFeedback(t, func(t *testing.T) store.Store {
		return dynamo.New(c, dynamotest.NewTable(t))
	})
}

// TestRequestsPerBucket pins the calibration access pattern: a bucket's
// labelled history is one Query of its partition, writing nothing to an
// index; recording a sample is an UpdateItem, a PutItem of its bucket
// item and a GetItem of the run's feedback (plus the label's UpdateItem
// when the run has feedback); nothing ever Scans.
func TestRequestsPerBucket(t *testing.T) {
	c := dynamotest.Client(t)
	api := &counter{API: c, calls: map[string]int{}}
	s := dynamo.New(api, dynamotest.NewTable(t))
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := store.Bucket{Pipeline: "p", Step: "diagnose", Executor: "anthropic", Model: "claude", Provider: "anthropic", PromptHash: "abc"}
	for i := range 30 {
		id := fmt.Sprintf("r%02d", i)
		if err := s.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunCompleted, StartedAt: now}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.PutRunFeedback(ctx, id, store.Feedback{Outcome: store.OutcomeCorrect, SubmittedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		api.take()
		if err := s.RecordSample(ctx, store.Sample{Bucket: b, RunID: id, Step: "diagnose", StartedAt: now.Add(time.Duration(i) * time.Second), Trust: 0.85}); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"UpdateItem": 1, "PutItem": 1, "GetItem": 1}
		if i%2 == 0 {
			want["UpdateItem"] = 2
		}
		if calls, wcu := api.take(); !maps.Equal(calls, want) || wcu != 0 {
			t.Fatalf("recording sample %d: requests %v, index units %v; want %v, 0", i, calls, wcu, want)
		}
	}
	samples, err := s.BucketSamples(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if calls, _ := api.take(); !maps.Equal(calls, map[string]int{"Query": 1}) {
		t.Errorf("reading a bucket: requests %v, want one Query", calls)
	}
	if len(samples) != 30 || samples[0].RunID != "r00" || samples[29].RunID != "r29" || samples[0].RunFeedback != store.OutcomeCorrect || samples[1].RunFeedback != "" {
		t.Errorf("samples: %d, first %+v", len(samples), samples[0])
	}
	if bin := store.BinOf(samples, 0.85, 0.1, 15); bin.N != 15 || !bin.Validated || *bin.Mean != 1 {
		t.Errorf("bin %+v", bin)
	}
}
