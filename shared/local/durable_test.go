package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// stallClock is the fake clock, except that a wait of exactly stall (a
// retry backoff in these tests) reports itself and lasts until the run is
// stopped.
type stallClock struct {
	fakeClock
	stall   time.Duration
	stalled chan<- string
}

func (c *stallClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.stall > 0 && d == c.stall {
		c.stalled <- "backoff"
		<-ctx.Done()
		return ctx.Err()
	}
	return c.fakeClock.Sleep(ctx, d)
}

// stallHandler is the step function, except that the calls hang selects
// report themselves and hang until the run is stopped, as a call in
// flight when the process is killed.
type stallHandler struct {
	inner   StepHandler
	hang    func(req task.Request, name string) bool
	stalled chan<- string
}

func (h stallHandler) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	var cfg struct{ Name string }
	_ = json.Unmarshal(req.Step, &cfg)
	if h.hang != nil && h.hang(req, cfg.Name) {
		h.stalled <- cfg.Name
		<-ctx.Done()
		return task.Response{}, ctx.Err()
	}
	return h.inner.Handle(ctx, req)
}

// interruptAt runs the pipeline in path on a Runner of dir (endsRunner's,
// with clock and responses) until step starts, then ends the run's
// context as a process that dies would and closes that Runner. It returns
// where the run stood; the test fails if it ended.
func interruptAt(t *testing.T, dir, path, responses string, clock engine.Clock, trigger json.RawMessage, runID, step string) Outcome {
	t.Helper()
	stalled := make(chan string, 1)
	first := endsRunner(t, dir, responses, clock, func(h StepHandler) StepHandler {
		return stallHandler{inner: h, hang: func(_ task.Request, name string) bool { return name == step }, stalled: stalled}
	})
	runCtx, die := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() {
		o, _ := first.Run(runCtx, path, trigger, runID)
		done <- o
	}()
	select {
	case <-stalled:
	case <-time.After(20 * time.Second):
		die()
		t.Fatalf("step %s never started", step)
	}
	die() // the process dies with step in flight
	o := <-done
	if o.Status.Terminal() {
		t.Fatalf("the run ended %s as its driver died", o.Status)
	}
	first.Close()
	return o
}

// TestInterruptedRunNamesItsSteps interrupts runs of a pipeline with
// durable: {on_interrupted: escalate} — with a call in flight, while a
// retry waits out its backoff, with branches and items in flight — and
// sweeps them from another runner: the run is escalated with a reason
// that names the steps that were interrupted, never "unknown".
func TestInterruptedRunNamesItsSteps(t *testing.T) {
	const durable = "durable: {on_interrupted: escalate}\n"
	cases := []struct {
		name      string
		steps     string
		responses string
		hang      func(req task.Request, name string) bool
		stall     time.Duration
		stalls    int // how many hangs or backoffs to wait for before stopping
		reason    string
	}{
		{
			name:      "a call in flight",
			steps:     "  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "a", "") + "]\n",
			hang:      func(_ task.Request, name string) bool { return name == "b" },
			stalls:    1,
			reason:    `step "b" was interrupted; escalated on resume (durable: on_interrupted: escalate)`,
		},
		{
			name:      "a retry waiting out its backoff",
			steps:     "  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, retry: {attempts: 3, backoff: fixed, delay_seconds: 7}}\n",
			responses: "a: [" + reply(0.9, "a", "") + "]\nb: [{error: http 503}]\n",
			stall:     7 * time.Second,
			stalls:    1,
			reason:    `step "b" was interrupted`,
		},
		{
			name:      "parallel branches in flight",
			steps:     "  - {name: a, executor: scripted}\n  - parallel:\n      name: g\n      steps:\n        - {name: x, executor: scripted}\n        - {name: y, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "a", "") + "]\n",
			hang:      func(req task.Request, _ string) bool { return req.Mode == task.ModeBranch },
			stalls:    2,
			reason:    `steps "g/x", "g/y" were interrupted`,
		},
		{
			name:      "fan-out items in flight",
			steps:     "  - {name: a, executor: scripted}\n  - fan_out: {name: f, over: '[1, 2]', executor: scripted}\n",
			responses: "a: [" + reply(0.9, "a", "") + "]\n",
			hang:      func(req task.Request, _ string) bool { return req.Mode == task.ModeBranch },
			stalls:    2,
			reason:    `steps "f/0", "f/1" were interrupted`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writePipeline(t, path, "name: p\n"+durable+"steps:\n"+c.steps)
			responses, err := executor.ParseResponses("responses.yaml", []byte(c.responses))
			if err != nil {
				t.Fatal(err)
			}
			stalled := make(chan string, 4)
			// Now: the sweep measures the run's age on the system clock.
			clock := &stallClock{fakeClock: fakeClock{now: time.Now().UTC()}, stall: c.stall, stalled: stalled}
			r, err := Open(context.Background(), Config{
				Dir:   filepath.Join(dir, "state"),
				Clock: clock,
				Handler: func(st *sqlite.Store) StepHandler {
					inner := &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
					return stallHandler{inner: inner, hang: c.hang, stalled: stalled}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = r.Run(ctx, path, json.RawMessage(`{}`), "")
			}()
			for range c.stalls {
				select {
				case <-stalled:
				case <-time.After(20 * time.Second):
					stop()
					t.Fatal("the run never reached the point to interrupt")
				}
			}
			stop() // the process dies: the last checkpoint stays
			wg.Wait()
			r.Close()

			other := reopen(t, dir, responses)
			swept, err := other.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(swept) != 1 || swept[0].Action != "escalated" {
				t.Fatalf("swept %+v, want one run escalated", swept)
			}
			run, err := other.Store.GetRun(context.Background(), swept[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != store.RunEscalated || !strings.Contains(run.Reason, c.reason) || !strings.Contains(swept[0].Reason, c.reason) {
				t.Errorf("run %q with reason %q (swept: %q), want escalated with %q", run.Status, run.Reason, swept[0].Reason, c.reason)
			}
		})
	}
}

func writePipeline(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
