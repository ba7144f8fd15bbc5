package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// liveForbidden is a live step function that fails the test when called:
// a scripted run must never reach the real executors.
type liveForbidden struct{ t *testing.T }

func (l liveForbidden) Handle(_ context.Context, req task.Request) (task.Response, error) {
	l.t.Errorf("run %s called the live step function (mode %s)", req.Run.ID, req.Mode)
	return task.Response{}, errors.New("live executors called")
}

// openScripted opens a Runner on dir's state, "another process", whose
// live step function fails the test.
func openScripted(t *testing.T, dir string) *Runner {
	t.Helper()
	r, err := Open(context.Background(), Config{
		Dir:     filepath.Join(dir, "state"),
		Handler: func(*sqlite.Store) StepHandler { return liveForbidden{t} },
		Scripted: func(st *sqlite.Store, replies *executor.Responses) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeText(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScriptedRunStaysScripted starts a scripted run that waits for a
// human, and decides it from other Runners: the rest of the run answers
// from the replies recorded with it, past those already used, never from
// the live step function; with its replies gone, the decision is refused
// and the run waits on until they are given again.
func TestScriptedRunStaysScripted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: ok, executor: human}\n"+
		"  - {name: b, executor: webhook, executor_config: {url: 'https://automation.example.com/hook'}}\n")
	replies := filepath.Join(dir, "replies.yaml")
	// a's first reply is malformed (asked again: the second is used); b's
	// first reply would be a's second if counts were not kept per run.
	writeText(t, replies, "a: ['{\"confidence\": 0.9', "+reply(0.9, "a done", "")+"]\nb: ['{\"status\": \"accepted\"}']\n")

	first := openScripted(t, dir)
	o, err := first.Run(ctx, path, json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || o.Status != store.RunWaiting {
		t.Fatalf("start: %+v, %v", o, err)
	}
	rec, err := first.Store.GetReplies(ctx, o.RunID)
	if err != nil || rec.Source != replies || !reflect.DeepEqual(rec.Consumed, map[string]int{"a": 2}) {
		t.Fatalf("recorded replies %+v, %v; want %s with a: 2 used", rec, err, replies)
	}

	// The file is gone: the decision is refused, the approval stays pending.
	moved := filepath.Join(dir, "moved.yaml")
	if err := os.Rename(replies, moved); err != nil {
		t.Fatal(err)
	}
	second := openScripted(t, dir)
	_, err = second.Decide(ctx, o.RunID, "ok", task.Approve, "tester")
	var re *RepliesError
	if !errors.As(err, &re) || re.Source != replies {
		t.Fatalf("decide without the replies: %v, want a RepliesError naming %s", err, replies)
	}
	if run, _ := second.Store.GetRun(ctx, o.RunID); run.Status != store.RunWaiting {
		t.Fatalf("run %s after a refused decision", run.Status)
	}

	// Given the file again, the run goes on from where it was.
	third := openScripted(t, dir)
	o, err = third.Decide(ctx, o.RunID, "ok", task.Approve, "tester", WithResponses(moved))
	if err != nil || o.Status != store.RunCompleted {
		t.Fatalf("decide with the replies: %+v, %v", o, err)
	}
	steps, _ := third.Store.ListSteps(ctx, o.RunID)
	if got := finals(steps); got["b"] != "completed 1" || got["ok"] != "completed 1" {
		t.Errorf("steps %v", got)
	}
	if rec, _ = third.Store.GetReplies(ctx, o.RunID); rec.Source != moved || rec.Consumed["b"] != 1 || rec.Consumed["a"] != 2 {
		t.Errorf("recorded replies after the run %+v", rec)
	}
}

// TestLiveRunStaysLive: a run started without replies answers from the
// live step function, also when another Runner resumes it.
func TestLiveRunStaysLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, "name: p\nsteps:\n  - {name: ok, executor: human}\n  - {name: a, executor: scripted}\n")
	var liveCalls int
	open := func() *Runner {
		replies, _ := executor.ParseResponses("live.yaml", []byte("a: ["+reply(0.9, "live", "")+"]\n"))
		r, err := Open(ctx, Config{
			Dir: filepath.Join(dir, "state"),
			Handler: func(st *sqlite.Store) StepHandler {
				return countingHandler{&steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}, &liveCalls}
			},
			Scripted: func(*sqlite.Store, *executor.Responses) StepHandler { return liveForbidden{t} },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	o, err := open().Run(ctx, path, json.RawMessage(`{}`), "")
	if err != nil || o.Status != store.RunWaiting {
		t.Fatalf("start: %+v, %v", o, err)
	}
	if o, err = open().Decide(ctx, o.RunID, "ok", task.Approve, "tester"); err != nil || o.Status != store.RunCompleted {
		t.Fatalf("decide: %+v, %v", o, err)
	}
	if liveCalls == 0 {
		t.Error("the live step function was never called")
	}
}

type countingHandler struct {
	inner StepHandler
	n     *int
}

func (c countingHandler) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	*c.n++
	return c.inner.Handle(ctx, req)
}

// TestScriptedSubPipeline: the child run of a scripted run answers from
// its parent's replies.
func TestScriptedSubPipeline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "parent.yaml"), "name: parent\nsteps:\n  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work}}\n")
	writeText(t, filepath.Join(dir, "child.yaml"), "name: child-work\nsteps:\n  - {name: inner, executor: scripted}\n")
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "inner: ["+reply(0.9, "child done", "")+"]\n")
	r := openScripted(t, dir)
	o, err := r.Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || o.Status != store.RunCompleted {
		t.Fatalf("%+v, %v", o, err)
	}
}

// TestSweepResumesScriptedRun: a scripted run of a durable pipeline
// interrupted in flight is resumed by the next Runner's sweep from the
// replies recorded with it, not by the live step function.
func TestSweepResumesScriptedRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, "name: p\ndurable: true\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n")
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "a: ["+reply(0.9, "a", "")+"]\nb: ["+reply(0.9, "b", "")+"]\n")
	g := &holdingGate{step: "b", entered: make(chan struct{}, 1), open: make(chan struct{})}
	first, err := Open(ctx, Config{
		Dir:     filepath.Join(dir, "state"),
		Handler: func(*sqlite.Store) StepHandler { return liveForbidden{t} },
		Scripted: func(st *sqlite.Store, r *executor.Responses) StepHandler {
			g.inner = &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: r})}
			return g
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := first.Run(runCtx, path, json.RawMessage(`{}`), "run-swept", WithResponses(replies))
		done <- err
	}()
	<-g.entered
	stop() // the process dies with b in flight
	<-done
	first.Close()

	swept, err := openScripted(t, dir).Sweep(ctx)
	if err != nil || len(swept) != 1 || swept[0].Action != "resumed" || swept[0].Outcome.Status != store.RunCompleted {
		t.Fatalf("swept %+v, %v; want the run resumed and completed", swept, err)
	}
}

// TestDecisionAfterPipelineChanged: a run that waits for a decision goes
// on with the definition it started with when the pipeline is changed
// and run again in the meantime (as a Step Functions execution goes on
// with its own), and the decision is not lost; the new run goes on with
// the new one.
func TestDecisionAfterPipelineChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	pipeline := func(prompt string) string {
		return "name: p\nsteps:\n  - {name: ok, executor: human}\n  - {name: b, executor: scripted, prompt_template: '" + prompt + "'}\n"
	}
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "b: ["+reply(0.9, "b done", "")+", "+reply(0.9, "b again", "")+"]\n")
	r := openScripted(t, dir)
	writeText(t, path, pipeline("first prompt"))
	old, err := r.Run(ctx, path, json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || old.Status != store.RunWaiting {
		t.Fatalf("first run: %+v, %v", old, err)
	}
	writeText(t, path, pipeline("second prompt"))
	changed, err := r.Run(ctx, path, json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || changed.Status != store.RunWaiting {
		t.Fatalf("second run: %+v, %v", changed, err)
	}
	// A resume of a waiting run goes on with its own definition too (it
	// waits on).
	if o, err := r.Resume(ctx, old.RunID); err != nil || o.Status != store.RunWaiting {
		t.Errorf("resume of the first run: %+v, %v; want it waiting", o, err)
	}

	other := openScripted(t, dir) // another process
	for _, run := range []struct {
		id, prompt string
	}{{old.RunID, "first prompt"}, {changed.RunID, "second prompt"}} {
		o, err := other.Decide(ctx, run.id, "ok", task.Approve, "tester")
		if err != nil || o.Status != store.RunCompleted {
			t.Fatalf("decide %s: %+v, %v", run.id, o, err)
		}
		steps, err := other.Store.ListSteps(ctx, run.id)
		if err != nil {
			t.Fatal(err)
		}
		prompts := 0
		for _, s := range steps {
			if s.Name == "b" {
				prompts++
				if s.Prompt != run.prompt {
					t.Errorf("run %s: b's prompt %q, want %q", run.id, s.Prompt, run.prompt)
				}
			}
		}
		if prompts != 1 {
			t.Errorf("run %s: %d records of b, want 1", run.id, prompts)
		}
	}
}

// TestDefinitionsByHash: only an engine hash names a kept definition;
// without one kept, the definition saved under the name is loaded.
func TestDefinitionsByHash(t *testing.T) {
	d := definitions{dir: t.TempDir()}
	hash := strings.Repeat("0123456789abcdef", 4)
	for _, bad := range []string{"", hash[:63], hash + "0", strings.ToUpper(hash), "../" + hash[3:], hash[:63] + "g"} {
		if got := d.byHash(bad); got != "" {
			t.Errorf("byHash(%q) = %q, want none", bad, got)
		}
	}
	if got := d.byHash(hash); got != filepath.Join(d.dir, byHashDir, hash+".asl.json") {
		t.Errorf("byHash = %q", got)
	}
	sm := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Done"}
	if err := sm.States.Add("Done", &asl.Succeed{}); err != nil {
		t.Fatal(err)
	}
	b, err := asl.Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(d.dir, "p.asl.json"), string(b))
	if got, err := d.Definition(context.Background(), "p", hash); err != nil || got.StartAt != "Done" {
		t.Errorf("nothing kept by hash: %v, %v; want the one saved under the name", got, err)
	}
	if _, err := d.Definition(context.Background(), "q", hash); err == nil || !strings.Contains(err.Error(), `"q"`) {
		t.Errorf("neither: %v", err)
	}
}

// TestDecisionInSubPipelineSettlesParent: a parent run whose sub-pipeline
// waits for a decision is recorded waiting, names the child's approval,
// and is recorded as it ends when the decision, taken in
// another process, ends the child: completed when approved (its last step
// recorded), escalated as its child when rejected; a sweep afterwards leaves it alone
// (it was left running and marked interrupted before).
func TestDecisionInSubPipelineSettlesParent(t *testing.T) {
	for _, tc := range []struct {
		decision string
		child    store.RunStatus
		parent   store.RunStatus
		last     bool // the parent's step after the child ran
	}{
		{task.Approve, store.RunCompleted, store.RunCompleted, true},
		{task.Reject, store.RunEscalated, store.RunEscalated, false},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			writeText(t, filepath.Join(dir, "parent.yaml"), "name: parent\nsteps:\n"+
				"  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work}}\n"+
				"  - {name: last, executor: scripted, prompt_template: '{{ steps.delegate.summary }}'}\n")
			writeText(t, filepath.Join(dir, "child.yaml"), "name: child-work\nsteps:\n  - {name: ok, executor: human}\n  - {name: inner, executor: scripted}\n")
			replies := filepath.Join(dir, "replies.yaml")
			writeText(t, replies, "inner: ["+reply(0.9, "inner done", "")+"]\nlast: ["+reply(0.9, "last done", "")+"]\n")
			o, err := openScripted(t, dir).Run(ctx, filepath.Join(dir, "parent.yaml"), json.RawMessage(`{}`), "", WithResponses(replies))
			if err != nil || o.Status != store.RunWaiting {
				t.Fatalf("start: %+v, %v", o, err)
			}
			child := o.RunID + "/delegate@0"
			if len(o.Waiting) != 1 || o.Waiting[0].RunID != child || o.Waiting[0].Step != "ok" {
				t.Errorf("the parent waits for %+v, want the child's approval of ok", o.Waiting)
			}
			other := openScripted(t, dir)
			if run, err := other.Store.GetRun(ctx, o.RunID); err != nil || run.Status != store.RunWaiting || run.CompletedAt != nil {
				t.Errorf("the waiting parent's record: %+v, %v", run, err)
			}
			co, err := other.Decide(ctx, child, "ok", tc.decision, "tester")
			if err != nil || co.Status != tc.child {
				t.Fatalf("decide: %+v, %v; want the child %s", co, err, tc.child)
			}
			if co.Parent == nil || co.Parent.RunID != o.RunID || co.Parent.Status != tc.parent || co.Parent.Parent != nil {
				t.Errorf("the decision's outcome names the parent %+v, want %s %s", co.Parent, o.RunID, tc.parent)
			}
			run, err := other.Store.GetRun(ctx, o.RunID)
			if err != nil || run.Status != tc.parent || run.CompletedAt == nil {
				t.Fatalf("parent %+v, %v; want %s and ended", run, err, tc.parent)
			}
			steps, _ := other.Store.ListSteps(ctx, o.RunID)
			if got := strings.HasPrefix(finals(steps)["last"], "completed"); got != tc.last {
				t.Errorf("the parent's last step recorded: %v, want %v (%v)", got, tc.last, finals(steps))
			}
			if swept, err := openScripted(t, dir).Sweep(ctx); err != nil || len(swept) != 0 {
				t.Errorf("sweep: %+v, %v; want nothing", swept, err)
			}
			if run, _ := other.Store.GetRun(ctx, o.RunID); run.Status != tc.parent {
				t.Errorf("parent %s after the sweep", run.Status)
			}
		})
	}
}

// TestWithParents: the parents a call continued are chained from the
// decided run's parent up, as far as they were continued, and a cycle in
// what was collected ends the chain.
func TestWithParents(t *testing.T) {
	c := &continued{runs: map[string]continuedRun{
		"p": {outcome: Outcome{RunID: "p", Status: store.RunCompleted}, parent: "g"},
		"g": {outcome: Outcome{RunID: "g", Status: store.RunWaiting}, parent: "top"},
	}}
	o := c.withParents(Outcome{RunID: "p/c@0"}, "p")
	if o.Parent == nil || o.Parent.RunID != "p" || o.Parent.Parent == nil || o.Parent.Parent.RunID != "g" || o.Parent.Parent.Parent != nil {
		t.Errorf("chain %+v", o.Parent)
	}
	if o := c.withParents(Outcome{RunID: "x"}, ""); o.Parent != nil {
		t.Errorf("a run without a parent: %+v", o.Parent)
	}
	if o := c.withParents(Outcome{RunID: "q/c@0"}, "q"); o.Parent != nil {
		t.Errorf("a parent not continued: %+v", o.Parent)
	}
	loop := &continued{runs: map[string]continuedRun{"a": {outcome: Outcome{RunID: "a"}, parent: "b"}, "b": {outcome: Outcome{RunID: "b"}, parent: "a"}}}
	n := 0
	for p := loop.withParents(Outcome{RunID: "c"}, "a").Parent; p != nil; p = p.Parent {
		n++
	}
	if n > 3 {
		t.Errorf("a cycle chained %d parents", n)
	}
}

// TestResumeInterruptedAfterPipelineChanged: a run interrupted in flight
// is resumed with its pipeline as compiled now: as it was, the run goes
// on; changed since, the resume is refused (engine.ErrDefinitionChanged)
// and the run left as it was.
func TestResumeInterruptedAfterPipelineChanged(t *testing.T) {
	for _, changed := range []bool{false, true} {
		t.Run(fmt.Sprint("changed=", changed), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			pipeline := "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, prompt_template: first}\n"
			writeText(t, path, pipeline)
			responses := "a: [" + reply(0.9, "a done", "") + "]\nb: [" + reply(0.9, "b done", "") + "]\n"
			interruptAt(t, dir, path, responses, nil, json.RawMessage(`{}`), "run-x", "b")

			other := endsRunner(t, dir, responses, nil, nil)
			if changed {
				writeText(t, path, strings.Replace(pipeline, "first", "second", 1))
				if _, _, _, err := other.Compile(path); err != nil {
					t.Fatal(err)
				}
			}
			o, err := other.Resume(ctx, "run-x")
			switch {
			case changed && !errors.Is(err, engine.ErrDefinitionChanged):
				t.Errorf("resume after a change: %+v, %v; want engine.ErrDefinitionChanged", o, err)
			case !changed && (err != nil || o.Status != store.RunCompleted):
				t.Errorf("resume: %+v, %v; want completed", o, err)
			}
			if run, _ := other.Store.GetRun(ctx, "run-x"); changed && run.Status != store.RunRunning {
				t.Errorf("the refused run is %s, want running as it was", run.Status)
			}
		})
	}
}

// TestTimeoutAfterPipelineChanged: a human step that times out after its
// pipeline was changed and compiled again times out in the definition
// its run started with, and the run goes on (a testing pipeline's
// timeout approves); it was marked interrupted before.
func TestTimeoutAfterPipelineChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	pipeline := func(prompt string) string {
		return "name: p\nsteps:\n  - {name: ok, executor: human, timeout_seconds: 1}\n  - {name: b, executor: scripted, prompt_template: '" + prompt + "'}\n"
	}
	writeText(t, path, pipeline("first prompt"))
	r := endsRunner(t, dir, "b: ["+reply(0.9, "b done", "")+"]\n", nil, nil)
	o, err := r.Run(ctx, path, json.RawMessage(`{}`), "")
	if err != nil || o.Status != store.RunWaiting || len(o.Waiting) != 1 {
		t.Fatalf("start: %+v, %v", o, err)
	}
	writeText(t, path, pipeline("second prompt"))
	if _, _, _, err := r.Compile(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(o.Waiting[0].ExpiresAt) + 50*time.Millisecond)
	if _, _, err := r.ExpireApprovals(ctx); err != nil {
		t.Fatal(err)
	}
	run, steps, err := r.Store.GetRunWithSteps(ctx, o.RunID)
	if err != nil || run.Status != store.RunCompleted {
		t.Fatalf("run %s (%s), %v; want completed", run.Status, run.Reason, err)
	}
	for _, s := range steps {
		if s.Name == "b" && s.Prompt != "first prompt" {
			t.Errorf("b's prompt %q, want the run's own", s.Prompt)
		}
	}
}
