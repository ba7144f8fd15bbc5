package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// TestTimedOutHandlerIsAbandoned runs a handler that ignores its context
// past the task's TimeoutSeconds: the task times out and the run goes on
// and ends without waiting for the handler.
func TestTimedOutHandlerIsAbandoned(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Stuck"}
	must(t, def.States.Add("Stuck", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 5,
		Arguments: map[string]any{"FunctionName": "stuck", "Payload": map[string]any{}},
		Catch:     []asl.Catcher{{ErrorEquals: []string{asl.StatesTimeout}, Next: "Caught"}},
		End:       true}))
	must(t, def.States.Add("Caught", &asl.Pass{Output: asl.Expr("$states.input.Error"), End: true}))
	release := make(chan struct{})
	defer close(release)
	returned := make(chan struct{})
	stuck := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		<-release // ignores its context
		close(returned)
		return json.RawMessage(`{}`), nil
	}
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"stuck": stuck}})
		res, err = e.Start(context.Background(), "t", def, nil)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run waited for the timed-out handler")
	}
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `"States.Timeout"`)
	select {
	case <-returned:
		t.Error("the handler returned before it was released")
	default:
	}
}

// TestCancelWaitsForHandlers stops a run whose handler is running: Start
// returns only once the handler has returned.
func TestCancelWaitsForHandlers(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Slow"}
	must(t, def.States.Add("Slow", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 60,
		Arguments: map[string]any{"FunctionName": "slow", "Payload": map[string]any{}}, End: true}))
	ctx, cancel := context.WithCancel(context.Background())
	var returned bool
	slow := func(c context.Context, _ json.RawMessage) (json.RawMessage, error) {
		cancel()
		<-c.Done()
		time.Sleep(20 * time.Millisecond)
		returned = true
		return nil, c.Err()
	}
	res, err := New(Config{Journal: newJournal(), Clock: newClock(false), Resources: Functions{"slow": slow}}).
		Start(ctx, "t", def, nil)
	if err == nil || res.Status != StatusRunning {
		t.Fatalf("Start = %v, %v; want RUNNING and the context's error", res.Status, err)
	}
	if !returned {
		t.Error("Start returned while the handler still ran")
	}
}

// TestTimeoutOnTheSystemClock times a task out on the real clock (a timer,
// not a goroutine asleep): the run takes its Catch at about
// TimeoutSeconds, and the handler's context is cancelled; a task that
// returns in time is not timed out.
func TestTimeoutOnTheSystemClock(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Slow"}
	must(t, def.States.Add("Slow", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 1,
		Arguments: map[string]any{"FunctionName": "slow", "Payload": map[string]any{}},
		Catch:     []asl.Catcher{{ErrorEquals: []string{asl.StatesTimeout}, Next: "Caught"}},
		Output:    "done", End: true}))
	must(t, def.States.Add("Caught", &asl.Pass{Output: asl.Expr("$states.input.Error"), End: true}))
	for _, tc := range []struct {
		takes time.Duration
		want  string
	}{{10 * time.Millisecond, `"done"`}, {5 * time.Second, `"States.Timeout"`}} {
		cancelled := make(chan struct{})
		slow := func(c context.Context, _ json.RawMessage) (json.RawMessage, error) {
			select {
			case <-time.After(tc.takes):
				return json.RawMessage(`{}`), nil
			case <-c.Done():
				close(cancelled)
				return nil, c.Err()
			}
		}
		start := time.Now()
		res, err := New(Config{Journal: newJournal(), Clock: SystemClock{}, Resources: Functions{"slow": slow}}).
			Start(context.Background(), "t", def, nil)
		took := time.Since(start)
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, tc.want)
		if tc.want == `"States.Timeout"` {
			if took < 900*time.Millisecond || took > 4*time.Second {
				t.Errorf("timed out after %v, want about 1s", took)
			}
			select {
			case <-cancelled:
			case <-time.After(time.Second):
				t.Error("the timed-out handler's context was not cancelled")
			}
		}
	}
}

// TestTakenOverTwice runs two handlers in a row that ignore their
// context past their deadlines, then one that answers: each timed-out call
// runs on the run's driver (it is the only work in flight), a new driver
// goes on at each timeout, and the run ends with the last task's result
// while both stuck handlers are still running.
func TestTakenOverTwice(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Stuck1"}
	for _, s := range []struct{ name, next string }{{"Stuck1", "Stuck2"}, {"Stuck2", "Fast"}} {
		must(t, def.States.Add(s.name, &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 5,
			Arguments: map[string]any{"FunctionName": "stuck", "Payload": map[string]any{}},
			Catch:     []asl.Catcher{{ErrorEquals: []string{asl.StatesTimeout}, Next: s.next}},
			Next:      s.next}))
	}
	must(t, def.States.Add("Fast", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 5,
		Arguments: map[string]any{"FunctionName": "fast", "Payload": map[string]any{}},
		Output:    "{% $states.result.Payload.n %}", End: true}))
	release := make(chan struct{})
	defer close(release)
	var stuckCalls atomic.Int32
	stuck := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		stuckCalls.Add(1)
		<-release // ignores its context
		return json.RawMessage(`{"n": 0}`), nil
	}
	fast := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"n": 7}`), nil
	}
	done := make(chan struct{})
	var res Result
	var err error
	j := newJournal()
	go func() {
		defer close(done)
		e := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"stuck": stuck, "fast": fast}})
		res, err = e.Start(context.Background(), "t", def, nil)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run waited for a timed-out handler")
	}
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `7`)
	if n := stuckCalls.Load(); n != 2 {
		t.Errorf("the stuck handler was called %d times, want 2", n)
	}
	var timedOut int
	events, err := j.History(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == "TaskTimedOut" {
			timedOut++
		}
	}
	if timedOut != 2 {
		t.Errorf("%d TaskTimedOut events, want 2", timedOut)
	}
}

// TestMachineTimeoutDuringCall times the run out while its only task's
// handler, which ignores its context, runs (on the driver: it is the only
// work in flight): the run ends TIMED_OUT at the machine's TimeoutSeconds,
// long before the task's own, without waiting for the handler.
func TestMachineTimeoutDuringCall(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Stuck", TimeoutSeconds: 10}
	must(t, def.States.Add("Stuck", &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 600,
		Arguments: map[string]any{"FunctionName": "stuck", "Payload": map[string]any{}}, End: true}))
	release := make(chan struct{})
	defer close(release)
	called := make(chan struct{})
	stuck := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		close(called)
		<-release // ignores its context
		return json.RawMessage(`{}`), nil
	}
	clock := newClock(false)
	e := New(Config{Journal: newJournal(), Clock: clock, Resources: Functions{"stuck": stuck}})
	t0 := clock.Now()
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = e.Start(context.Background(), "mt", def, nil)
	}()
	<-called
	waitFor(t, func() bool { return clock.sleepsUntil(t0.Add(10*time.Second), t0.Add(600*time.Second)) })
	clock.Advance(9 * time.Second)
	select {
	case <-done:
		t.Fatal("the run ended before its deadline")
	case <-time.After(50 * time.Millisecond):
	}
	clock.Advance(time.Second)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run waited for the handler past its deadline")
	}
	res = mustResult(t, res, err, StatusTimedOut)
	if res.Error != asl.StatesTimeout {
		t.Errorf("error %q, want %s", res.Error, asl.StatesTimeout)
	}
}

// TestDriverPanicReachesCaller panics in OnEvent, which the run's driver
// calls: the panic is raised again in the goroutine that called Start, as
// when the loop ran there, rather than ending the process from the
// driver's goroutine.
func TestDriverPanicReachesCaller(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	must(t, def.States.Add("P", &asl.Pass{End: true}))
	e := New(Config{Journal: newJournal(), Clock: newClock(true),
		OnEvent: func(string, store.HistoryEvent) { panic("boom") }})
	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("recovered %v, want boom", v)
		}
	}()
	e.Start(context.Background(), "p", def, nil)
	t.Error("Start returned")
}

// lambdaTask is a lambda:invoke Task of fn with payload, going to next
// ("" ends the branch).
func lambdaTask(fn string, payload map[string]any, next string) *asl.Task {
	t := &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 60,
		Arguments: map[string]any{"FunctionName": fn, "Payload": payload}}
	if next == "" {
		t.End = true
	} else {
		t.Next = next
	}
	return t
}

// startWithin runs Start and fails the test if it does not return within
// 10 s (a call left on the driver while other work needs it deadlocks).
func startWithin(t *testing.T, e *Engine, def *asl.StateMachine) (Result, error) {
	t.Helper()
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = e.Start(context.Background(), "t", def, nil)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run deadlocked")
	}
	return res, err
}

// TestCallWithOtherWorkRunsOnAWorker runs a branch's call that returns
// only once the other branch's second call has run: the first call must
// not hold the driver (two calls were in flight when it was dispatched),
// or the second call would never be dispatched.
func TestCallWithOtherWorkRunsOnAWorker(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var a, b asl.Branch
	a.StartAt = "A"
	must(t, a.States.Add("A", lambdaTask("waits", map[string]any{}, "")))
	b.StartAt = "B1"
	must(t, b.States.Add("B1", lambdaTask("quick", map[string]any{}, "B2")))
	must(t, b.States.Add("B2", lambdaTask("opens", map[string]any{}, "")))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{a, b}, End: true}))
	open := make(chan struct{})
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	e := New(Config{Journal: newJournal(), Clock: SystemClock{}, Resources: Functions{
		"waits": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			<-open
			return json.RawMessage(`{}`), nil
		},
		"quick": ok,
		"opens": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			close(open)
			return json.RawMessage(`{}`), nil
		},
	}})
	res, err := startWithin(t, e, def)
	mustResult(t, res, err, StatusSucceeded)
}

// TestCallWhileTokenPendsRunsOnAWorker runs, while one branch waits for
// its task token, the other branch's call that sends that token back: the
// call must not run on the driver, which takes the token.
func TestCallWhileTokenPendsRunsOnAWorker(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var a, b asl.Branch
	a.StartAt = "Ask"
	must(t, a.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken, TimeoutSeconds: 60,
		Arguments: map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		End:       true}))
	b.StartAt = "B1"
	must(t, b.States.Add("B1", lambdaTask("waitsForAsk", map[string]any{}, "B2")))
	must(t, b.States.Add("B2", lambdaTask("answers", map[string]any{}, "")))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{a, b}, End: true}))
	h := &human{}
	asked := make(chan struct{})
	var e *Engine
	e = New(Config{Journal: newJournal(), Clock: SystemClock{}, Resources: Functions{
		"h": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			defer close(asked)
			return h.handler(ctx, p)
		},
		"waitsForAsk": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			<-asked
			return json.RawMessage(`{}`), nil
		},
		"answers": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if _, err := e.SendTaskSuccess(ctx, h.last(), json.RawMessage(`"yes"`)); err != nil {
				return nil, err
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	res, err := startWithin(t, e, def)
	mustResult(t, res, err, StatusSucceeded)
}

// TestCallBeforeLongPureStretch dispatches a branch's call at the
// checkpoint taken every 1,000 events, while the other branch still has
// pure states to run and then fails the run: the call must go to a
// worker (the driver has more to do), and the failed run must not wait
// for a call that never started.
func TestCallBeforeLongPureStretch(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var a, b asl.Branch
	b.StartAt = "C"
	must(t, b.States.Add("C", lambdaTask("quick", map[string]any{}, "")))
	// Branch A loops through Pass states past the 1,000-event checkpoint,
	// then fails. Its loop runs first, so branch B's call is scheduled
	// within it.
	a.StartAt = "Init"
	must(t, a.States.Add("Init", &asl.Pass{Assign: map[string]any{"i": 0}, Next: "Loop"}))
	must(t, a.States.Add("Loop", &asl.Pass{Assign: map[string]any{"i": asl.Expr("$i + 1")}, Next: "More"}))
	must(t, a.States.Add("More", &asl.Choice{Choices: []asl.ChoiceRule{{Condition: asl.Expr("$i < 400"), Next: "Loop"}}, Default: "Stop"}))
	must(t, a.States.Add("Stop", &asl.Fail{Error: "Stopped"}))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{a, b}, End: true}))
	block := make(chan struct{})
	defer close(block)
	e := New(Config{Journal: newJournal(), Clock: SystemClock{}, Resources: Functions{
		"quick": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	res, err := startWithin(t, e, def)
	res = mustResult(t, res, err, StatusFailed)
	if res.Error != "Stopped" {
		t.Errorf("error %q, want Stopped", res.Error)
	}
}

// TestTokenSentBackByItsHandler runs a waitForTaskToken task whose handler
// sends its own token back before it returns: such a call never runs on
// the driver, which must be free to take the token.
func TestTokenSentBackByItsHandler(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Ask"}
	must(t, def.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken, TimeoutSeconds: 60,
		Arguments: map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		Output:    "{% $states.result %}", End: true}))
	var e *Engine
	e = New(Config{Journal: newJournal(), Clock: SystemClock{}, Resources: Functions{
		"h": func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			var in struct{ Token string }
			if err := json.Unmarshal(p, &in); err != nil {
				return nil, err
			}
			if _, err := e.SendTaskSuccess(ctx, in.Token, json.RawMessage(`"answered"`)); err != nil {
				return nil, err
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	res, err := startWithin(t, e, def)
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `"answered"`)
}
