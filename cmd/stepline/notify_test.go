package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// hangAt is a step function that hangs at one step until the run stops,
// as a call in flight when the process is killed.
type hangAt struct {
	local.StepHandler
	step    string
	entered chan<- struct{}
}

func (h hangAt) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	var cfg struct{ Name string }
	_ = json.Unmarshal(req.Step, &cfg)
	if cfg.Name == h.step {
		h.entered <- struct{}{}
		<-ctx.Done()
		return task.Response{}, ctx.Err()
	}
	return h.StepHandler.Handle(ctx, req)
}

// TestRunNotifiesSweptRun: `stepline run` sweeps the runs a dead process
// left running before it runs its pipeline; a durable run it escalates
// there, outside any step, fires the pipeline's escalate notification
// once, through the live step function's dispatcher.
func TestRunNotifiesSweptRun(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	state := filepath.Join(t.TempDir(), "state")
	durable := writeFile(t, "durable.yaml", "name: durable\nstage: production\ndurable: {on_interrupted: escalate}\n"+
		"notifications:\n  escalate:\n    - channel: webhook\n      config: {url: \""+srv.URL+"\"}\n"+
		"      template: \"{{ pipeline_name }} {{ escalation_reason }}: {{ step_summary }}\"\n"+
		"steps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n")
	replies, err := executor.ParseResponses("r.yaml", []byte(`a: ['{"confidence": 0.9, "summary": "a", "next_step_context": ""}']`+"\n"))
	if err != nil {
		t.Fatal(err)
	}

	// A process drives a run until step b is in flight, and dies.
	entered := make(chan struct{}, 1)
	dead, err := local.Open(context.Background(), local.Config{Dir: state, Handler: func(st *sqlite.Store) local.StepHandler {
		return hangAt{StepHandler: &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}, step: "b", entered: entered}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, die := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = dead.Run(ctx, durable, json.RawMessage(`{}`), "")
	}()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("step b never started")
	}
	die()
	<-done
	dead.Close()

	other := writeFile(t, "other.yaml", "name: other\nsteps:\n  - {name: x, executor: scripted}\n")
	responses := writeFile(t, "responses.yaml", `x: ['{"confidence": 0.9, "summary": "x", "next_step_context": ""}']`+"\n")
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	if code := dispatch(context.Background(), []string{"run", "--dir", state, "--responses", responses, other}, e); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "escalated: step \"b\" was interrupted") {
		t.Errorf("stderr does not tell of the escalated run:\n%s", errOut.String())
	}
	mu.Lock()
	got := append([]string(nil), bodies...)
	mu.Unlock()
	want := `durable escalated: step "b" was interrupted; escalated on resume (durable: on_interrupted: escalate)`
	if len(got) != 1 || got[0] != want {
		t.Errorf("notifications %q, want one: %q", got, want)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "stepline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.RunFilter{Pipeline: "durable"})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunEscalated {
		t.Errorf("durable runs %+v, %v; want one escalated", runs, err)
	}
}

// TestStepNotifications: the runner's notifications go through the
// dispatcher of the step function the run answers from — the live one's,
// or a scripted run's, whose HTTP client refuses every request — and a
// step function the commands did not build has none.
func TestStepNotifications(t *testing.T) {
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "stepline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	regs := &registries{}
	defer regs.Close()
	live := stepHandler(e, dir, nil, regs)(st)
	scripted := scriptedHandler(e, dir, nil)(st, &executor.Responses{})
	for name, h := range map[string]local.StepHandler{"live": live, "scripted": scripted} {
		want := h.(*steprun.Handler).Notifications
		if got := stepNotifications(h); got == nil || got != want {
			t.Errorf("%s: %v, want the step function's own dispatcher %v", name, got, want)
		}
	}
	if stepNotifications(live) == stepNotifications(scripted) {
		t.Error("live and scripted runs share a dispatcher")
	}
	if got := stepNotifications(hangAt{StepHandler: live}); got != nil {
		t.Errorf("another step function: %v, want none", got)
	}
	if got := stepNotifications(&steprun.Handler{}); got != nil {
		t.Errorf("a step function without notifications: %v, want none", got)
	}
}
