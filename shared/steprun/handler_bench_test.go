package steprun

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// nullStore takes every write and keeps nothing: BenchmarkHandlerStep
// measures the handler's own work, not a store's.
type nullStore struct{}

func (nullStore) CreateRun(context.Context, store.Run) error               { return nil }
func (nullStore) UpdateRun(context.Context, string, store.RunUpdate) error { return nil }
func (nullStore) PutStep(context.Context, store.StepRecord) error          { return nil }
func (nullStore) ListSteps(context.Context, string) ([]store.StepRecord, error) {
	return nil, nil
}
func (nullStore) AddUsage(context.Context, string, string, store.Usage) error { return nil }
func (nullStore) CreateApproval(context.Context, store.Approval) error        { return nil }

var _ Store = nullStore{}

// fixedAnswer is a model that gives the same valid reply to every call.
type fixedAnswer struct{}

func (fixedAnswer) Provider(executor.Call) (llmoutput.Provider, error) { return fixedAnswer{}, nil }

func (fixedAnswer) Complete(context.Context, llmoutput.Request) (llmoutput.Completion, error) {
	return llmoutput.Completion{
		Content:      `{"confidence": 0.9, "summary": "done", "next_step_context": "go on"}`,
		FinishReason: llmoutput.FinishStop, Model: "fixed", Provider: "bench",
	}, nil
}

// benchStepRequest is the Request the local engine hands the step
// function for the second step of shared/local's benchmark pipeline (a
// compiled step reading the one before it).
func benchStepRequest() task.Request {
	return task.Request{
		Mode:     task.ModeStep,
		Step:     json.RawMessage(`{"confidence_threshold":0.75,"executor":"scripted","name":"s1","on_abort":"notify","on_failure":{"policy":"abort"},"on_low_confidence":"escalate","prompt_template":"{{ steps.s0.summary }}"}`),
		Pipeline: task.Pipeline{Name: "bench", Stage: "testing", Config: "1550c1a26b68", RunEndedError: true},
		Run:      task.Run{ID: "run-1", Execution: "arn:aws:states:local:000000000000:execution:bench:run-1", StartedAt: "2026-12-03T14:40:21.123456789Z"},
		Trigger:  json.RawMessage(`{}`),
		Steps:    map[string]json.RawMessage{"s0": json.RawMessage(`{"confidence":0.9,"summary":"done","next_step_context":"go on"}`)},
		Attempt:  1,
	}
}

// BenchmarkHandlerStep is one sequential step of shared/local's
// BenchmarkRun through Handle over a store that keeps nothing: the step
// handler's CPU and allocations per step (render, call, judge, decide,
// the record built), and the answer encoded as the local runner encodes
// it.
func BenchmarkHandlerStep(b *testing.B) {
	h := &Handler{Store: nullStore{}, Executors: fixedAnswer{}}
	ctx := context.Background()
	req := benchStepRequest()
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		resp, err := h.Handle(ctx, req)
		if err != nil || resp.Status != task.StatusCompleted {
			b.Fatalf("step: %v %v", resp.Status, err)
		}
		if _, err := json.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time is steadier than wall time on a shared machine; it counts
	// the collector's work too.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
