package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// asker records the token of each item it is asked about.
type asker struct {
	mu     sync.Mutex
	tokens map[string]string // item → token
}

func (a *asker) handler(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Token string
		Item  string
	}
	if err := json.Unmarshal(p, &in); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.tokens[in.Item] = in.Token
	a.mu.Unlock()
	return json.RawMessage(`{}`), nil
}

// TestWaitingInsideParallelAndMap runs a Parallel whose branches wait
// inside Map iterations (a task token per item), start a child execution
// per item (one of which waits for a token of its own) and start one
// child: the run pauses with the iterations' tokens, survives the process
// (another engine over the same journal completes it), and the results
// land in their branches and items in order.
func TestWaitingInsideParallelAndMap(t *testing.T) {
	parent, child := loadDef(t, "waiting.asl.json"), loadDef(t, "child.asl.json")
	d := defs{"parent": parent, "child": child}
	j, a, h := newJournal(), &asker{tokens: map[string]string{}}, &human{}
	clock := newClock(false) // the tokens' deadlines never pass
	newEngine := func() *Engine {
		s := &starter{defs: d}
		s.e = New(Config{Journal: j, Clock: clock, Children: s, Definitions: d,
			Resources: Functions{"ask": a.handler, "human": h.handler}})
		return s.e
	}
	ctx := context.Background()
	res, err := newEngine().Start(ctx, "w", parent, json.RawMessage(`{"items": ["a", "b"], "values": [1, "ask", 3]}`), WithStateMachine("parent"))
	res = mustResult(t, res, err, StatusWaiting)
	if len(res.Tokens) != 2 || len(a.tokens) != 2 || h.calls != 1 {
		t.Fatalf("waiting for %v; asked %v; the child asked %d times", res.Tokens, a.tokens, h.calls)
	}
	for _, tok := range res.Tokens {
		if tok != a.tokens["a"] && tok != a.tokens["b"] {
			t.Errorf("the run reports token %q, which no iteration was given", tok)
		}
	}
	childRun, err := tokenRun(h.last())
	if err != nil || !strings.HasPrefix(childRun, "w/") || strings.ContainsAny(childRun, " \t") {
		t.Fatalf("the waiting child's token names run %q (%v): want the parent's ID and the path, without blanks", childRun, err)
	}

	// Another process completes the tasks, one at a time.
	e2 := newEngine()
	r, err := e2.SendTaskSuccess(ctx, a.tokens["b"], json.RawMessage(`"yes b"`))
	mustResult(t, r, err, StatusWaiting)
	r, err = e2.SendTaskSuccess(ctx, h.last(), json.RawMessage(`{"approved": true}`))
	mustResult(t, r, err, StatusSucceeded) // the child; its parent still waits for "a"
	r, err = e2.SendTaskSuccess(ctx, a.tokens["a"], json.RawMessage(`"yes a"`))
	r = mustResult(t, r, err, StatusSucceeded)
	jsonEqual(t, r.Output, `[["yes a", "yes b"], [{"doubled": 2}, {"approved": true}, {"doubled": 6}], {"doubled": 10}]`)
	if a.calls() != 2 || h.calls != 1 {
		t.Errorf("asked %d and %d times: a task whose result was checkpointed ran again", a.calls(), h.calls)
	}
}

func (a *asker) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tokens)
}
