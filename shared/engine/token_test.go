package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

type defs map[string]*asl.StateMachine

func (d defs) Definition(_ context.Context, name, _ string) (*asl.StateMachine, error) {
	if def, ok := d[name]; ok {
		return def, nil
	}
	return nil, errors.New("unknown state machine " + name)
}

// human records the tokens and payloads it is called with.
type human struct {
	mu     sync.Mutex
	tokens []string
	calls  int
}

func (h *human) handler(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	var in struct{ Token string }
	if err := json.Unmarshal(p, &in); err != nil || in.Token == "" {
		return nil, errors.New("no token in payload")
	}
	h.mu.Lock()
	h.tokens = append(h.tokens, in.Token)
	h.calls++
	h.mu.Unlock()
	return json.RawMessage(`{"notified":true}`), nil
}

func (h *human) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokens[len(h.tokens)-1]
}

func TestTokenPauseAndCompleteFromAnotherEngine(t *testing.T) {
	def := loadDef(t, "token.asl.json")
	cases := []struct {
		name     string
		complete func(e *Engine, token string) (Result, error)
		status   Status
		output   string
	}{
		{"success", func(e *Engine, tok string) (Result, error) {
			return e.SendTaskSuccess(context.Background(), tok, json.RawMessage(`"yes"`))
		}, StatusSucceeded, `{"answer":"yes"}`},
		{"failure caught by name", func(e *Engine, tok string) (Result, error) {
			return e.SendTaskFailure(context.Background(), tok, "Rejected", "no thanks")
		}, StatusSucceeded, `{"Error":"Rejected","Cause":"no thanks"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, clock, h := newJournal(), newClock(false), &human{}
			res := Functions{"${HumanArn}": h.handler, "echo": echo}
			e1 := New(Config{Journal: j, Clock: clock, Resources: res})
			r, err := e1.Start(context.Background(), "t1", def, json.RawMessage(`{"question":"ok?"}`), WithStateMachine("approve"))
			r = mustResult(t, r, err, StatusWaiting)
			if len(r.Tokens) != 1 || r.Tokens[0] != h.last() {
				t.Fatalf("tokens = %v, handler saw %v", r.Tokens, h.tokens)
			}
			if want := clock.Now().Add(time.Hour); !r.WakeAt.Equal(want) {
				t.Errorf("WakeAt = %v, want %v", r.WakeAt, want)
			}
			// Another process: a new engine over the same journal.
			e2 := New(Config{Journal: j, Clock: clock, Resources: res, Definitions: defs{"approve": def}})
			if got, err := e2.Tokens(context.Background(), "t1"); err != nil || len(got) != 1 || got[0] != r.Tokens[0] {
				t.Fatalf("Tokens = %v, %v; want %v", got, err, r.Tokens)
			}
			r, err = c.complete(e2, r.Tokens[0])
			r = mustResult(t, r, err, c.status)
			if got, err := e2.Tokens(context.Background(), "t1"); err != nil || len(got) != 0 {
				t.Errorf("Tokens of the ended run = %v, %v; want none", got, err)
			}
			if _, err := e2.Tokens(context.Background(), "nobody"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Tokens of no run: %v, want ErrNotFound", err)
			}
			jsonEqual(t, r.Output, c.output)
			if _, err := e2.SendTaskSuccess(context.Background(), h.last(), json.RawMessage(`1`)); !errors.Is(err, ErrTaskDoesNotExist) {
				t.Errorf("second completion: err = %v, want ErrTaskDoesNotExist", err)
			}
			if h.calls != 1 {
				t.Errorf("handler called %d times", h.calls)
			}
		})
	}
}

func TestTokenTimeoutOnResume(t *testing.T) {
	def := loadDef(t, "token.asl.json")
	j, clock, h := newJournal(), newClock(false), &human{}
	e := New(Config{Journal: j, Clock: clock, Resources: Functions{"${HumanArn}": h.handler}})
	r, err := e.Start(context.Background(), "to", def, json.RawMessage(`{"question":"q"}`))
	mustResult(t, r, err, StatusWaiting)
	clock.Advance(time.Hour - time.Second)
	r, err = New(Config{Journal: j, Clock: clock}).Resume(context.Background(), "to", def)
	mustResult(t, r, err, StatusWaiting) // not yet
	clock.Advance(time.Second)
	r, err = New(Config{Journal: j, Clock: clock}).Resume(context.Background(), "to", def)
	r = mustResult(t, r, err, StatusFailed)
	if r.Error != "HumanTimeout" || r.Cause != `{"timedOut":"States.Timeout"}` {
		t.Errorf("error %q cause %q", r.Error, r.Cause)
	}
	if _, err := e.SendTaskSuccess(context.Background(), h.last(), nil); !errors.Is(err, ErrTaskDoesNotExist) {
		t.Errorf("completion after timeout: err = %v", err)
	}
	evs, _ := e.History(context.Background(), "to")
	if countType(evs, "TaskTimedOut") != 1 || countType(evs, "ExecutionResumed") != 2 {
		t.Errorf("history: %v", eventTypes(evs))
	}
}

func TestHeartbeat(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Ask"}
	must(t, def.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments:      map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		TimeoutSeconds: 100, HeartbeatSeconds: 10, End: true}))
	j, clock, h := newJournal(), newClock(false), &human{}
	e := New(Config{Journal: j, Clock: clock, Resources: Functions{"h": h.handler}, Definitions: defs{"": def}})
	start := clock.Now()
	r, err := e.Start(context.Background(), "hb", def, nil)
	r = mustResult(t, r, err, StatusWaiting)
	if !r.WakeAt.Equal(start.Add(10 * time.Second)) {
		t.Errorf("WakeAt = %v", r.WakeAt)
	}
	clock.Advance(8 * time.Second)
	r, err = e.SendTaskHeartbeat(context.Background(), h.last())
	r = mustResult(t, r, err, StatusWaiting)
	if !r.WakeAt.Equal(start.Add(18 * time.Second)) {
		t.Errorf("WakeAt after heartbeat = %v", r.WakeAt)
	}
	clock.Advance(11 * time.Second)
	r, err = e.Resume(context.Background(), "hb", def)
	r = mustResult(t, r, err, StatusFailed)
	if r.Error != asl.StatesTimeout || !strings.Contains(r.Cause, "heartbeat") {
		t.Errorf("error %q cause %q", r.Error, r.Cause)
	}
}

func TestTokenTimeoutWhileRunning(t *testing.T) {
	// One branch waits for a token with a 10 s timeout while the other
	// waits 60 s: the process is still busy when the token task times out.
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var b1, b2 asl.Branch
	b1.StartAt = "Ask"
	must(t, b1.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments:      map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		TimeoutSeconds: 10, End: true}))
	b2.StartAt = "Nap"
	must(t, b2.States.Add("Nap", &asl.Wait{Seconds: 60, End: true}))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{b1, b2}, End: true}))
	clock, h := newClock(false), &human{}
	e := New(Config{Journal: newJournal(), Clock: clock, Resources: Functions{"h": h.handler}})
	done := make(chan struct{})
	var r Result
	var err error
	t0 := clock.Now()
	go func() {
		r, err = e.Start(context.Background(), "live", def, nil)
		close(done)
	}()
	// The token deadline (or the handler's timeout) and the Wait.
	waitFor(t, func() bool { return clock.sleepsUntil(t0.Add(10*time.Second), t0.Add(time.Minute)) })
	clock.Advance(10 * time.Second)
	<-done
	r = mustResult(t, r, err, StatusFailed)
	if r.Error != asl.StatesTimeout {
		t.Errorf("error = %q", r.Error)
	}
}

func TestTokenCompletedWhileRunIsLive(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "P"}
	var b1, b2 asl.Branch
	b1.StartAt = "Ask"
	must(t, b1.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments: map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
		End:       true}))
	b2.StartAt = "Slow"
	must(t, b2.States.Add("Slow", &asl.Task{Resource: asl.ResourceLambdaInvoke,
		Arguments: map[string]any{"FunctionName": "slow"}, Output: "slow done", End: true}))
	must(t, def.States.Add("P", &asl.Parallel{Branches: []asl.Branch{b1, b2}, End: true}))
	h := &human{}
	release := make(chan struct{})
	slow := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{}`), nil
	}
	e := New(Config{Journal: newJournal(), Clock: newClock(true), Resources: Functions{"h": h.handler, "slow": slow}})
	done := make(chan struct{})
	var r Result
	var err error
	go func() {
		r, err = e.Start(context.Background(), "live", def, nil)
		close(done)
	}()
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.calls == 1 })
	// The run is busy with the slow branch: the completion goes to its driver.
	var sent Result
	waitFor(t, func() bool {
		var serr error
		sent, serr = e.SendTaskSuccess(context.Background(), h.last(), json.RawMessage(`"approved"`))
		return serr == nil
	})
	if sent.Status != StatusRunning {
		t.Errorf("SendTaskSuccess on a live run reported %s", sent.Status)
	}
	close(release)
	<-done
	r = mustResult(t, r, err, StatusSucceeded)
	jsonEqual(t, r.Output, `["approved","slow done"]`)
}

func TestInvalidToken(t *testing.T) {
	e := New(Config{Journal: newJournal()})
	for _, tok := range []string{"", "garbage", "stl1.!!!.x", tokenPrefix + "bm9ydW4.abc"} {
		_, err := e.SendTaskSuccess(context.Background(), tok, nil)
		if !errors.Is(err, ErrInvalidToken) && !errors.Is(err, ErrTaskDoesNotExist) {
			t.Errorf("token %q: err = %v", tok, err)
		}
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// byHash keeps definitions by their engine hash and records what it is
// asked for.
type byHash struct {
	defs  map[string]*asl.StateMachine
	asked []string // "name hash"
}

func (b *byHash) Definition(_ context.Context, name, hash string) (*asl.StateMachine, error) {
	b.asked = append(b.asked, name+" "+hash)
	if def, ok := b.defs[hash]; ok {
		return def, nil
	}
	return nil, errors.New("no definition of hash " + hash)
}

// TestDefinitionsAskedByHash: a waiting run continued without its
// definition is given the one of the hash it started with (Engine.Hash),
// even when another definition of the same state machine name was run
// since; a definition of another hash is refused.
func TestDefinitionsAskedByHash(t *testing.T) {
	ctx := context.Background()
	machine := func(answer string) *asl.StateMachine {
		def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Ask"}
		must(t, def.States.Add("Ask", &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken,
			Arguments: map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}},
			Next:      "Done"}))
		must(t, def.States.Add("Done", &asl.Succeed{Output: answer}))
		return def
	}
	v1, v2 := machine("first"), machine("second")
	j, h := newJournal(), &human{}
	first := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"h": h.handler}})
	h1, err := first.Hash(v1)
	must(t, err)
	h2, err := first.Hash(v2)
	must(t, err)
	if h1 == h2 || len(h1) != 64 {
		t.Fatalf("hashes %q and %q", h1, h2)
	}
	r, err := first.Start(ctx, "w", v1, nil, WithStateMachine("m"))
	mustResult(t, r, err, StatusWaiting)

	kept := &byHash{defs: map[string]*asl.StateMachine{h1: machine("first"), h2: v2}}
	e := New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"h": h.handler}, Definitions: kept})
	r, err = e.SendTaskSuccess(ctx, h.last(), json.RawMessage(`"yes"`))
	r = mustResult(t, r, err, StatusSucceeded)
	jsonEqual(t, r.Output, `"first"`)
	if len(kept.asked) != 1 || kept.asked[0] != "m "+h1 {
		t.Errorf("asked for %q, want m %s", kept.asked, h1)
	}

	r, err = first.Start(ctx, "w2", v1, nil, WithStateMachine("m"))
	mustResult(t, r, err, StatusWaiting)
	wrong := &byHash{defs: map[string]*asl.StateMachine{h1: v2}}
	e = New(Config{Journal: j, Clock: newClock(true), Resources: Functions{"h": h.handler}, Definitions: wrong})
	if _, err := e.SendTaskSuccess(ctx, h.last(), json.RawMessage(`"yes"`)); !errors.Is(err, ErrDefinitionChanged) {
		t.Errorf("a definition of another hash: %v, want ErrDefinitionChanged", err)
	}
}
