package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// crashDef is a machine with sequential tasks, a Parallel, a Map, a retry
// and variables, so that a crash can land in every kind of state.
func crashDef(t testing.TB) *asl.StateMachine {
	t.Helper()
	task := func(key string, next string) *asl.Task {
		return &asl.Task{Resource: asl.ResourceLambdaInvoke,
			Arguments: map[string]any{"FunctionName": "work", "Payload": map[string]any{"k": key, "in": asl.Expr("$states.input")}},
			Output:    asl.Expr("$states.result.Payload.out"),
			Next:      next, End: next == ""}
	}
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "A"}
	a := task("A", "B")
	a.Assign = map[string]any{"fromA": asl.Expr("$states.result.Payload.out")}
	must(t, def.States.Add("A", a))
	b := task("B", "Both")
	b.Retry = []asl.Retrier{{ErrorEquals: []string{"Flaky"}, IntervalSeconds: 1, MaxAttempts: asl.Attempts(2)}}
	must(t, def.States.Add("B", b))
	var b1, b2 asl.Branch
	b1.StartAt = "C"
	must(t, b1.States.Add("C", task("C", "")))
	b2.StartAt = "D"
	must(t, b2.States.Add("D", task("D", "")))
	must(t, def.States.Add("Both", &asl.Parallel{Branches: []asl.Branch{b1, b2}, Next: "Fan"}))
	proc := asl.ItemProcessor{StartAt: "E"}
	e := task("E", "")
	e.Arguments = map[string]any{"FunctionName": "work", "Payload": map[string]any{
		"k": asl.Expr("'E' & $states.input.i"), "in": asl.Expr("$states.input")}}
	must(t, proc.States.Add("E", e))
	must(t, def.States.Add("Fan", &asl.Map{Items: asl.Expr("[0, 1, 2]"), MaxConcurrency: 2,
		ItemSelector:  map[string]any{"i": asl.Expr("$states.context.Map.Item.Index"), "prev": asl.Expr("$states.input")},
		ItemProcessor: proc, Next: "F"}))
	f := task("F", "")
	f.Output = map[string]any{"last": asl.Expr("$states.result.Payload.out"), "fromA": asl.Expr("$fromA")}
	must(t, def.States.Add("F", f))
	return def
}

// worker is the "work" handler: it records each invocation's key and
// fails B's first attempt once.
type worker struct{ calls calls }

func (w *worker) handle(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	var in struct {
		K  string
		In any
	}
	if err := json.Unmarshal(p, &in); err != nil {
		return nil, err
	}
	w.calls.add(in.K)
	if in.K == "B" && countOf(w.calls.get(), "B") == 1 {
		return nil, Flaky{}
	}
	out, _ := json.Marshal(map[string]any{"out": fmt.Sprintf("%s(%v)", in.K, summary(in.In))})
	return out, nil
}

// Flaky is a retryable handler error.
type Flaky struct{}

func (Flaky) Error() string { return "flaky" }

func summary(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return fmt.Sprintf("%d bytes", len(b))
	}
	return string(b)
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestCrashAndResumeAtEveryCheckpoint(t *testing.T) {
	def := crashDef(t)
	// The reference run, never interrupted.
	ref := newJournal()
	w := &worker{}
	e := New(Config{Journal: ref, Clock: newClock(true), Resources: Functions{"work": w.handle}})
	want, err := e.Start(context.Background(), "run", def, json.RawMessage(`{"x":1}`))
	want = mustResult(t, want, err, StatusSucceeded)
	wantCalls := sortedCopy(w.calls.get())
	// A checkpoint precedes every dispatch and ends the run, and the pure
	// steps between share it: at least A, B, B's retry wait, B again, C
	// and D, the first two iterations of Fan, the third, F, the end
	// (completions that arrive together share one too).
	saves := ref.saves
	if saves < 9 {
		t.Fatalf("only %d checkpoints", saves)
	}
	refHist, _ := ref.History(context.Background(), "run")

	for k := 1; k < saves; k++ {
		t.Run(fmt.Sprintf("killed after checkpoint %d", k), func(t *testing.T) {
			j := newJournal()
			j.setFailAfter(k)
			w := &worker{}
			res := Functions{"work": w.handle}
			first, err := New(Config{Journal: j, Clock: newClock(true), Resources: res}).
				Start(context.Background(), "run", def, json.RawMessage(`{"x":1}`))
			if err == nil && first.Status == StatusSucceeded {
				// Concurrent completions can share a checkpoint, so a run
				// may need fewer than the reference; this one ended first.
				jsonEqual(t, first.Output, string(want.Output))
				return
			}
			if !errors.Is(err, errKilled) {
				t.Fatalf("Start: err = %v, want the journal failure", err)
			}
			before := w.calls.get()
			hist, _ := j.History(context.Background(), "run")
			durable := succeededTasks(t, hist)

			j.setFailAfter(0)
			got, err := New(Config{Journal: j, Clock: newClock(true), Resources: res}).Resume(context.Background(), "run", def)
			got = mustResult(t, got, err, StatusSucceeded)
			jsonEqual(t, got.Output, string(want.Output))

			all := w.calls.get()
			after := all[len(before):]
			// Every invocation of the reference run happened, and those
			// whose success was checkpointed were not repeated.
			if missing := subtract(wantCalls, all); len(missing) > 0 {
				t.Errorf("invocations missing: %v", missing)
			}
			for _, key := range durable {
				if countOf(after, key) > 0 {
					t.Errorf("%s completed before the crash but ran again after it", key)
				}
			}
			if extra := subtract(after, subtract(wantCalls, durable)); len(extra) > 0 {
				t.Errorf("resume invoked more than the unfinished tasks: %v", extra)
			}
			hist, _ = j.History(context.Background(), "run")
			if last := hist[len(hist)-1].Type; last != "ExecutionSucceeded" {
				t.Errorf("history ends with %s", last)
			}
			if n := countType(hist, "TaskSucceeded"); n != countType(refHist, "TaskSucceeded") {
				t.Errorf("TaskSucceeded events = %d, reference %d", n, countType(refHist, "TaskSucceeded"))
			}
		})
	}
}

// succeededTasks returns the keys of the tasks whose success is in the
// history, from the TaskScheduled payloads.
func succeededTasks(t *testing.T, hist []store.HistoryEvent) []string {
	t.Helper()
	pending := map[string]string{} // path+state -> key of the latest scheduled invocation
	var done []string
	for _, ev := range hist {
		var d struct {
			Path    string
			Payload struct{ K string }
		}
		_ = json.Unmarshal(ev.Detail, &d)
		at := d.Path + "|" + ev.State
		switch ev.Type {
		case "TaskScheduled":
			pending[at] = d.Payload.K
		case "TaskSucceeded":
			done = append(done, pending[at])
		}
	}
	return done
}

// subtract removes b's items from a, as multisets; both may be unsorted.
func subtract(a, b []string) []string {
	count := map[string]int{}
	for _, x := range b {
		count[x]++
	}
	var out []string
	for _, x := range a {
		if count[x] > 0 {
			count[x]--
			continue
		}
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}

func TestResumeNeedsTheSameDefinition(t *testing.T) {
	def := loadDef(t, "token.asl.json")
	j, h := newJournal(), &human{}
	e := New(Config{Journal: j, Clock: newClock(false), Resources: Functions{"${HumanArn}": h.handler}})
	_, err := e.Start(context.Background(), "d", def, json.RawMessage(`{"question":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	other := loadDef(t, "token.asl.json")
	st, _ := other.States.Get("After")
	st.(*asl.Task).Output = "changed"
	if _, err := e.Resume(context.Background(), "d", other); !errors.Is(err, ErrDefinitionChanged) {
		t.Errorf("err = %v, want ErrDefinitionChanged", err)
	}
	if _, err := e.Start(context.Background(), "d", def, nil); !errors.Is(err, ErrRunExists) {
		t.Errorf("second Start: err = %v, want ErrRunExists", err)
	}
	if !reflect.DeepEqual(loadDef(t, "token.asl.json"), def) {
		t.Error("running changed the definition")
	}
}

func TestCancelLeavesAResumableRun(t *testing.T) {
	def := crashDef(t)
	j := newJournal()
	ctx, cancel := context.WithCancel(context.Background())
	var blocked calls
	block := func(c context.Context, p json.RawMessage) (json.RawMessage, error) {
		var in struct{ K string }
		_ = json.Unmarshal(p, &in)
		blocked.add(in.K)
		if in.K == "C" {
			cancel()
			<-c.Done()
			return nil, c.Err()
		}
		return json.RawMessage(`{"out":"` + in.K + `"}`), nil
	}
	r, err := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"work": block}}).
		Start(ctx, "c", def, nil)
	if !errors.Is(err, context.Canceled) || r.Status != StatusRunning {
		t.Fatalf("Start = %v, %v; want RUNNING and context.Canceled", r.Status, err)
	}
	w := &worker{}
	r, err = New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"work": w.handle}}).Resume(context.Background(), "c", def)
	mustResult(t, r, err, StatusSucceeded)
	if got := w.calls.get(); countOf(got, "A") != 0 || countOf(got, "C") != 1 {
		t.Errorf("after resume: %v (A completed before the cancel, C did not)", got)
	}
}
