package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

func TestQueryEvaluationErrors(t *testing.T) {
	def := loadDef(t, "errors.asl.json")
	cases := []struct {
		name      string
		input     string
		status    Status
		errName   string
		causeHas  string
		outputHas string
	}{
		{"undefined argument is caught on a Task", `{"case":"args"}`, StatusSucceeded, "", "",
			`returned nothing (undefined)`},
		{"non-boolean Condition fails the run", `{"case":"choice"}`, StatusFailed, asl.StatesQueryEvaluationError, "not a boolean", ""},
		{"undefined Output of a Pass fails the run", `{"case":"pass"}`, StatusFailed, asl.StatesQueryEvaluationError, "returned nothing", ""},
		{"type error", `{"case":"other"}`, StatusFailed, asl.StatesQueryEvaluationError, "must evaluate to a number", ""},
		{"Fail state with JSONata Error and Cause", `{"case":"fail","why":"x"}`, StatusFailed, "CustomError", "because x", ""},
		{"Choice without Default", `{"case":"nomatch"}`, StatusFailed, asl.StatesNoChoiceMatched, "no Condition", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"echo": echo}})
			res, err := e.Start(context.Background(), "q", def, json.RawMessage(c.input))
			res = mustResult(t, res, err, c.status)
			if res.Error != c.errName || !strings.Contains(res.Cause, c.causeHas) {
				t.Errorf("error %q cause %q; want %q containing %q", res.Error, res.Cause, c.errName, c.causeHas)
			}
			if !strings.Contains(string(res.Output), c.outputHas) {
				t.Errorf("output %s does not contain %q", res.Output, c.outputHas)
			}
		})
	}
	e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"echo": echo}})
	res, _ := e.Start(context.Background(), "q", def, json.RawMessage(`{"case":"args"}`))
	jsonEqual(t, res.Output, `{"Error":"States.QueryEvaluationError","Cause":"The JSONata expression '$states.input.nothere' specified for the field 'Arguments/Payload/missing' returned nothing (undefined)."}`)
}

func TestTaskTimeoutAndMissingFunction(t *testing.T) {
	mk := func(fn string, timeout any) *asl.StateMachine {
		def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "T"}
		must(t, def.States.Add("T", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: timeout,
			Arguments: map[string]any{"FunctionName": fn, "Payload": map[string]any{}},
			Retry:     []asl.Retrier{{ErrorEquals: []string{asl.StatesTimeout}, MaxAttempts: asl.Attempts(1), IntervalSeconds: 3}},
			Catch:     []asl.Catcher{{ErrorEquals: []string{asl.StatesTaskFailed}, Next: "Other"}},
			End:       true}))
		must(t, def.States.Add("Other", &asl.Pass{Output: asl.Expr("$states.input.Error"), End: true}))
		return def
	}
	hang := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	t.Run("timeout is retried, not matched by States.TaskFailed", func(t *testing.T) {
		clock := newClock(true)
		j := newJournal()
		e := New(Config{Journal: j, Clock: clock, Resources: Functions{"hang": hang}})
		res, err := e.Start(context.Background(), "t", mk("hang", 5), nil)
		res = mustResult(t, res, err, StatusFailed)
		if res.Error != asl.StatesTimeout {
			t.Errorf("error %q", res.Error)
		}
		if got := clock.recorded(); !equalDurations(got, []time.Duration{5 * time.Second, 3 * time.Second, 5 * time.Second}) {
			t.Errorf("sleeps %v: want timeout, backoff, timeout", got)
		}
		evs, _ := j.History(context.Background(), "t")
		if countType(evs, "TaskTimedOut") != 2 || countType(evs, "TaskRetried") != 1 {
			t.Errorf("history %v", eventTypes(evs))
		}
	})
	t.Run("timeout from an expression", func(t *testing.T) {
		e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"hang": hang}})
		res, err := e.Start(context.Background(), "t", mk("hang", "{% $states.input.secs %}"), json.RawMessage(`{"secs":2}`))
		res = mustResult(t, res, err, StatusFailed)
		if res.Error != asl.StatesTimeout {
			t.Errorf("error %q", res.Error)
		}
	})
	t.Run("unknown function is a task failure", func(t *testing.T) {
		e := New(Config{Journal: newJournal(), Clock: newClock(true)})
		res, err := e.Start(context.Background(), "t", mk("nobody", nil), nil)
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, `"Lambda.ResourceNotFoundException"`)
	})
	t.Run("panic is a function error", func(t *testing.T) {
		boom := func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("kaboom") }
		e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"boom": boom}})
		res, err := e.Start(context.Background(), "t", mk("boom", nil), nil)
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, `"string"`)
	})
}

func TestWaitStates(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Secs"}
	must(t, def.States.Add("Secs", &asl.Wait{Seconds: asl.Expr("$states.input.n"), Assign: map[string]any{"w": 1}, Next: "Past"}))
	must(t, def.States.Add("Past", &asl.Wait{Timestamp: "2020-01-01T00:00:00Z", Next: "Until"}))
	must(t, def.States.Add("Until", &asl.Wait{Timestamp: asl.Expr("$states.input.at"),
		Output: map[string]any{"w": asl.Expr("$w"), "entered": asl.Expr("$states.context.State.EnteredTime")}, End: true}))
	clock := newClock(true)
	at := clock.Now().Add(time.Minute).Format(time.RFC3339)
	e := New(Config{Journal: newJournal(), Clock: clock})
	res, err := e.Start(context.Background(), "w", def, json.RawMessage(`{"n":30,"at":"`+at+`"}`))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{"w":1,"entered":"2025-03-14T01:59:30.000Z"}`)
	if got := clock.recorded(); !equalDurations(got, []time.Duration{30 * time.Second, 30 * time.Second}) {
		t.Errorf("sleeps %v", got)
	}
}

func TestMachineTimeout(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Nap", TimeoutSeconds: 10}
	must(t, def.States.Add("Nap", &asl.Wait{Seconds: 60, End: true}))
	clock := newClock(false)
	e := New(Config{Journal: newJournal(), Clock: clock})
	done := make(chan struct{})
	var res Result
	var err error
	t0 := clock.Now()
	go func() {
		res, err = e.Start(context.Background(), "mt", def, nil)
		close(done)
	}()
	waitFor(t, func() bool { return clock.sleepsUntil(t0.Add(10*time.Second), t0.Add(time.Minute)) })
	clock.Advance(10 * time.Second)
	<-done
	res = mustResult(t, res, err, StatusTimedOut)
	if res.Error != asl.StatesTimeout {
		t.Errorf("error %q", res.Error)
	}
}

// starter runs child state machines as their own runs on the same engine.
type starter struct {
	e    *Engine
	defs defs
}

func (s *starter) StartChild(ctx context.Context, req ChildRequest) (Result, error) {
	def, err := s.defs.Definition(ctx, req.StateMachine, "")
	if err != nil {
		return Result{}, err
	}
	res, err := s.e.Start(ctx, req.RunID, def, req.Input, WithParent(req))
	if errors.Is(err, ErrRunExists) {
		res, err = s.e.Resume(ctx, req.RunID, def)
	}
	if errors.Is(err, ErrRunActive) {
		// Driven elsewhere in this process; it completes the parent's task.
		return Result{RunID: req.RunID, Status: StatusWaiting}, nil
	}
	return res, err
}

func TestChildExecutions(t *testing.T) {
	parent, child := loadDef(t, "child_parent.asl.json"), loadDef(t, "child.asl.json")
	d := defs{"parent": parent, "child": child}
	var continued []Result // OnParentContinued's
	newEngine := func(j *memJournal, h *human) *Engine {
		s := &starter{defs: d}
		s.e = New(Config{Journal: j, Clock: newClock(true), Children: s, Definitions: d,
			Resources:         Functions{"human": h.handler},
			OnParentContinued: func(_ context.Context, r Result) { continued = append(continued, r) }})
		return s.e
	}
	t.Run("succeeds with the child's output", func(t *testing.T) {
		j := newJournal()
		e := newEngine(j, &human{})
		res, err := e.Start(context.Background(), "p1", parent, json.RawMessage(`{"value":21}`), WithStateMachine("parent"))
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, `{"child":{"doubled":42},"status":"SUCCEEDED"}`)
		hist, _ := j.History(context.Background(), "p1/Sub@0")
		if len(hist) == 0 || hist[len(hist)-1].Type != "ExecutionSucceeded" {
			t.Errorf("child run history: %v", eventTypes(hist))
		}
	})
	t.Run("a failed child fails the task with States.TaskFailed", func(t *testing.T) {
		e := newEngine(newJournal(), &human{})
		res, err := e.Start(context.Background(), "p2", parent, json.RawMessage(`{"value":"bad"}`), WithStateMachine("parent"))
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, `{"failed":"States.TaskFailed"}`)
	})
	t.Run("a waiting child pauses the parent until its token completes", func(t *testing.T) {
		j, h := newJournal(), &human{}
		e := newEngine(j, h)
		res, err := e.Start(context.Background(), "p3", parent, json.RawMessage(`{"value":"ask"}`), WithStateMachine("parent"))
		res = mustResult(t, res, err, StatusWaiting)
		if len(res.Tokens) != 0 {
			t.Errorf("parent reports tokens %v; only the child's task has one", res.Tokens)
		}
		if len(res.Children) != 1 || res.Children[0] != "p3/Sub@0" {
			t.Errorf("parent waits for children %v, want [p3/Sub@0]", res.Children)
		}
		if got, err := e.Children(context.Background(), "p3"); err != nil || len(got) != 1 || got[0] != "p3/Sub@0" {
			t.Errorf("Children(p3) = %v, %v; want [p3/Sub@0]", got, err)
		}
		if got, err := e.Children(context.Background(), "p3/Sub@0"); err != nil || len(got) != 0 {
			t.Errorf("Children of the child that waits for a token = %v, %v; want none", got, err)
		}
		if _, err := e.Children(context.Background(), "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Children of a run without a checkpoint: %v, want store.ErrNotFound", err)
		}
		if len(continued) != 0 {
			t.Errorf("OnParentContinued called at the start: %+v", continued)
		}
		// Another process approves the child's task: the child's end
		// continues the parent to its end, reported to OnParentContinued.
		e2 := newEngine(j, h)
		cres, err := e2.SendTaskSuccess(context.Background(), h.last(), json.RawMessage(`{"approved":true}`))
		mustResult(t, cres, err, StatusSucceeded)
		if len(continued) != 1 || continued[0].RunID != "p3" || continued[0].Status != StatusSucceeded {
			t.Fatalf("OnParentContinued got %+v, want p3 SUCCEEDED once", continued)
		}
		jsonEqual(t, continued[0].Output, `{"child":{"approved":true},"status":"SUCCEEDED"}`)
		if got, err := e2.Children(context.Background(), "p3"); err != nil || len(got) != 0 {
			t.Errorf("Children of the ended parent = %v, %v; want none", got, err)
		}
		pres, err := e2.Resume(context.Background(), "p3", parent)
		pres = mustResult(t, pres, err, StatusSucceeded)
		jsonEqual(t, pres.Output, `{"child":{"approved":true},"status":"SUCCEEDED"}`)
	})
}

func TestStartRejectsBadDefinitionsAndInput(t *testing.T) {
	bad, err := asl.Parse([]byte(`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := bad.States.Get("A")
	a.(*asl.Pass).Next = "Nowhere" // now both Next and End, and a missing target
	e := New(Config{Journal: newJournal()})
	_, err = e.Start(context.Background(), "x", bad, nil)
	if err == nil || !strings.Contains(err.Error(), `state "A": Next "Nowhere" does not exist`) {
		t.Errorf("bad definition: err = %v", err)
	}
	good := loadDef(t, "basics.asl.json")
	if _, err := e.Start(context.Background(), "y", good, json.RawMessage(`{not json`)); err == nil {
		t.Error("bad input accepted")
	}
	if _, err := e.Start(context.Background(), "", good, nil); err == nil {
		t.Error("empty run ID accepted")
	}
	if _, err := New(Config{}).Start(context.Background(), "z", good, nil); err == nil {
		t.Error("an engine without journal started a run")
	}
	if _, err := e.Start(context.Background(), "y", nil, nil); err == nil {
		t.Error("nil definition accepted")
	}
}
