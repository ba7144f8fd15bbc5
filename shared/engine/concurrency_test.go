package engine

import (
	"context"
	"encoding/json"
	"github.com/stepline/stepline/shared/asl"
	"sync/atomic"
	"testing"
	"time"
)

// gauge measures how many handler calls run at once.
type gauge struct {
	cur, max atomic.Int32
}

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.cur.Add(-1) }

func TestParallelAndMapScopesAndConcurrency(t *testing.T) {
	def := loadDef(t, "parallel_map.asl.json")
	var g gauge
	slow := func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		g.enter()
		defer g.leave()
		time.Sleep(20 * time.Millisecond) // real time: overlap is what is measured
		return p, nil
	}
	e := New(Config{Journal: newJournal(), Clock: newClock(true),
		Resources: Functions{"echo": echo, "slow": slow}})
	in := `{"seed": 7, "items": ["a", "b", "c", "d", "e"]}`
	res, err := e.Start(context.Background(), "pm", def, json.RawMessage(in))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{
	  "both": [{"inner": "hello left", "seed": 7}, {"branch": "right", "outer": "hello"}],
	  "fan": [
	    {"index": 0, "mine": "a"}, {"index": 1, "mine": "b"}, {"index": 2, "mine": "c"},
	    {"index": 3, "mine": "d"}, {"index": 4, "mine": "e"}],
	  "mineOutside": false}`)
	if m := g.max.Load(); m != 2 {
		t.Errorf("max in-flight iterations = %d, want MaxConcurrency 2", m)
	}
}

func TestMapConcurrencyLimits(t *testing.T) {
	cases := []struct {
		name     string
		maxConc  any
		items    int
		wantPeak int32
	}{
		{"one at a time", 1, 4, 1},
		{"three", 3, 7, 3},
		{"zero means the inline cap", 0, InlineMapConcurrencyLimit + 5, InlineMapConcurrencyLimit},
		{"expression", "{% $states.input.conc %}", 6, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def := mapDef(t, c.maxConc)
			var g gauge
			var started atomic.Int32
			h := func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
				g.enter()
				defer g.leave()
				// Hold each call until as many as the limit allows have
				// started (or a while has passed), so the peak is reached
				// whatever the scheduling; more would show as a higher peak.
				started.Add(1)
				deadline := time.Now().Add(2 * time.Second)
				for started.Load() < c.wantPeak && time.Now().Before(deadline) {
					time.Sleep(100 * time.Microsecond)
				}
				time.Sleep(2 * time.Millisecond)
				return p, nil
			}
			e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"work": h}})
			items := make([]int, c.items)
			for i := range items {
				items[i] = i
			}
			in, _ := json.Marshal(map[string]any{"items": items, "conc": 4})
			res, err := e.Start(context.Background(), "m", def, in)
			res = mustResult(t, res, err, StatusSucceeded)
			var out []int
			if err := json.Unmarshal(res.Output, &out); err != nil || len(out) != c.items {
				t.Fatalf("output %s", res.Output)
			}
			for i, v := range out {
				if v != i {
					t.Fatalf("output out of order: %v", out)
				}
			}
			if g.max.Load() != c.wantPeak {
				t.Errorf("peak concurrency %d, want %d", g.max.Load(), c.wantPeak)
			}
		})
	}
}

func mapDef(t *testing.T, maxConc any) *asl.StateMachine {
	t.Helper()
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Fan"}
	proc := asl.ItemProcessor{StartAt: "Do"}
	must(t, proc.States.Add("Do", &asl.Task{Resource: asl.ResourceLambdaInvoke,
		Arguments: map[string]any{"FunctionName": "work", "Payload": asl.Expr("$states.input")},
		Output:    asl.Expr("$states.result.Payload"), End: true}))
	must(t, def.States.Add("Fan", &asl.Map{Items: asl.Expr("$states.input.items"), MaxConcurrency: maxConc,
		ItemProcessor: proc, End: true}))
	return def
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestParallelBranchFailureCancelsSiblingsAndIsCaught(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var b1, b2 asl.Branch
	b1.StartAt = "Hang"
	must(t, b1.States.Add("Hang", &asl.Task{Resource: asl.ResourceLambdaInvoke,
		Arguments: map[string]any{"FunctionName": "hang"}, End: true}))
	b2.StartAt = "Sync"
	must(t, b2.States.Add("Sync", &asl.Task{Resource: asl.ResourceLambdaInvoke,
		Arguments: map[string]any{"FunctionName": "sync"}, Output: asl.Expr("$states.input"), Next: "Boom"}))
	must(t, b2.States.Add("Boom", &asl.Fail{Error: "Broken", Cause: asl.Expr("'branch ' & $states.input.b")}))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{b1, b2},
		Catch: []asl.Catcher{{ErrorEquals: []string{"Broken"}, Output: asl.Expr("$states.errorOutput"), Next: "Caught"}},
		End:   true}))
	must(t, def.States.Add("Caught", &asl.Succeed{}))
	started := make(chan struct{})
	var cancelled atomic.Bool
	hang := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		cancelled.Store(true)
		return nil, ctx.Err()
	}
	sync := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		<-started // the other branch is in its handler
		return json.RawMessage(`{}`), nil
	}
	e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"hang": hang, "sync": sync}})
	res, err := e.Start(context.Background(), "p", def, json.RawMessage(`{"b":"two"}`))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{"Error":"Broken","Cause":"branch two"}`)
	if !cancelled.Load() {
		t.Error("the sibling branch's handler was not cancelled before the run went on")
	}
}
