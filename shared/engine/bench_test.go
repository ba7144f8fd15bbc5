package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// leanJournal keeps only each run's latest checkpoint and its event count:
// an in-memory journal whose own cost stays out of the figures.
type leanJournal struct {
	mu     sync.Mutex
	cps    map[string]store.Checkpoint
	events int
}

func (j *leanJournal) SaveCheckpoint(_ context.Context, cp store.Checkpoint, evs []store.HistoryEvent) error {
	j.mu.Lock()
	j.cps[cp.RunID] = cp
	j.events += len(evs)
	j.mu.Unlock()
	return nil
}

func (j *leanJournal) LoadCheckpoint(_ context.Context, id string) (store.Checkpoint, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cp, ok := j.cps[id]
	if !ok {
		return cp, store.ErrNotFound
	}
	return cp, nil
}

func (j *leanJournal) History(context.Context, string) ([]store.HistoryEvent, error) { return nil, nil }

// linearDef chains n states; every third one a Task, the others Pass states
// with Output and Assign.
func linearDef(b *testing.B, n int, tasks bool) *asl.StateMachine {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "S0"}
	for i := 0; i < n; i++ {
		next := fmt.Sprintf("S%d", i+1)
		end := i == n-1
		if end {
			next = ""
		}
		var st asl.State
		if tasks && i%3 == 2 {
			st = &asl.Task{Resource: asl.ResourceLambdaInvoke,
				Arguments: map[string]any{"FunctionName": "echo", "Payload": map[string]any{"i": i, "n": asl.Expr("$states.input.n")}},
				Output:    asl.Expr("$states.result.Payload"), Next: next, End: end}
		} else {
			st = &asl.Pass{Output: map[string]any{"n": asl.Expr("$states.input.n + 1")},
				Assign: map[string]any{"last": asl.Expr("$states.input.n")}, Next: next, End: end}
		}
		if err := def.States.Add(fmt.Sprintf("S%d", i), st); err != nil {
			b.Fatal(err)
		}
	}
	return def
}

func benchRuns(b *testing.B, def *asl.StateMachine, transitions int) {
	j := &leanJournal{cps: map[string]store.Checkpoint{}}
	e := New(Config{Journal: j, Clock: SystemClock{}, Resources: Functions{"echo": echo}})
	in := json.RawMessage(`{"n":0}`)
	if _, err := e.Start(context.Background(), "warm", def, in); err != nil {
		b.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Start(context.Background(), fmt.Sprintf("r%d", i), def, in)
		if err != nil || res.Status != StatusSucceeded {
			b.Fatalf("run: %v %v", res.Status, err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	total := float64(b.N * transitions)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/transition")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/transition")
}

// BenchmarkTransition measures the engine's cost per state transition on a
// chain of Pass states (JSONata Output and Assign; pure, so the run is
// checkpointed once, at its end).
func BenchmarkTransition(b *testing.B) {
	benchRuns(b, linearDef(b, 100, false), 100)
}

// BenchmarkLinear1000 runs a 1,000-state machine (a third of them Tasks
// calling an in-process echo handler) per iteration.
func BenchmarkLinear1000(b *testing.B) {
	benchRuns(b, linearDef(b, 1000, true), 1000)
}
