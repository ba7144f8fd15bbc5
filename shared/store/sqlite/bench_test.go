package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func benchStep(run string, i int) store.StepRecord {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return store.StepRecord{
		RunID: run, Name: fmt.Sprintf("step-%d", i), Index: i * 1000, Attempt: 1,
		Executor: "anthropic", Status: store.StepCompleted,
		PrimaryConfidence: ptr(0.9), EffectiveConfidence: ptr(0.9),
		Output:      json.RawMessage(`{"confidence":0.9,"summary":"disk filled by logs","next_step_context":"rotate logs","proceed":true}`),
		RawResponse: strings.Repeat("r", 2048),
		Prompt:      strings.Repeat("p", 1024),
		Model:       "claude-sonnet-4", Provider: "anthropic",
		InputTokens: 1200, OutputTokens: 300, CostUSD: ptr(0.0125),
		StartedAt: now, FinishedAt: now.Add(time.Second), DurationMS: 1000,
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkPutStep records one step (a 2 KiB raw response, a 1 KiB prompt)
// per iteration.
func BenchmarkPutStep(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.PutStep(ctx, benchStep("run-1", i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutStepParallel records steps from GOMAXPROCS goroutines.
func BenchmarkPutStepParallel(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.PutStep(ctx, benchStep("run-1", int(n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSaveCheckpoint saves one transition per iteration: a 1 KiB
// snapshot and two history events.
func BenchmarkSaveCheckpoint(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := json.RawMessage(`{"state":"Diagnose","vars":{"blob":"` + strings.Repeat("x", 1000) + `"}}`)
	detail := json.RawMessage(`{"output":{"status":"completed"}}`)
	var seq int64
	b.ReportAllocs()
	for b.Loop() {
		events := []store.HistoryEvent{
			{Seq: seq + 1, Time: now, Type: "TaskSucceeded", State: "Diagnose", Detail: detail},
			{Seq: seq + 2, Time: now, Type: "StateExited", State: "Diagnose"},
		}
		seq += 2
		if err := s.SaveCheckpoint(ctx, store.Checkpoint{RunID: "run-1", Seq: seq, Snapshot: snap, UpdatedAt: now}, events); err != nil {
			b.Fatal(err)
		}
	}
}
