package local

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// endsPipeline is a production pipeline with the given steps whose
// escalate, stopped and notify notifications post to url what they were
// told: the action, escalation_reason, status, current_step, the
// trigger's labels.service, the execution's status and step_summary.
func endsPipeline(url, extra, steps string) string {
	hook := "    - channel: webhook\n      config: {url: \"" + url + "\"}\n" +
		"      template: \"{{ action }}|{{ escalation_reason }}|{{ status }}|{{ current_step }}|{{ labels.service }}|{{ execution_status }}|{{ step_summary }}\"\n"
	return "name: p\nstage: production\n" + extra + "notifications:\n  escalate:\n" + hook + "  stopped:\n" + hook + "  notify:\n" + hook +
		"steps:\n" + steps
}

const endsTrigger = `{"source": "test", "labels": {"service": "api"}}`

// gateClock is the fake clock, except that a wait of exactly gate (the
// state machine's time limit in these tests) lasts until open is closed,
// and then has passed.
type gateClock struct {
	fakeClock
	gate time.Duration
	open chan struct{}
}

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	if d != c.gate {
		return c.fakeClock.Sleep(ctx, d)
	}
	select {
	case <-c.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// endsRunner opens a runner over dir whose step function (wrapped by wrap
// when set) answers from responses and fires notifications through the
// same dispatcher the runner fires those of the runs it closes.
func endsRunner(t testing.TB, dir, responsesYAML string, clock engine.Clock, wrap func(StepHandler) StepHandler) *Runner {
	t.Helper()
	responses, err := executor.ParseResponses("responses.yaml", []byte(responsesYAML))
	if err != nil {
		t.Fatal(err)
	}
	d := &notify.Dispatcher{HTTP: http.DefaultClient}
	r, err := Open(context.Background(), Config{
		Dir:   filepath.Join(dir, "state"),
		Clock: clock,
		Handler: func(st *sqlite.Store) StepHandler {
			var h StepHandler = &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses}), Notifications: d}
			if wrap != nil {
				h = wrap(h)
			}
			return h
		},
		Notifications: func(StepHandler) notify.Notifier { return d },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestNotifyRunEnds: the runner fires the notifications of a run it
// closes outside a step once, with what the recorder tells them on AWS,
// and a run a step closed (notified by the step) or that completed gets
// nothing from it.
func TestNotifyRunEnds(t *testing.T) {
	hook := &notifications{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	const timedOut = "the execution timed out (the state machine's time limit passed): the run exceeded the state machine's TimeoutSeconds"
	cases := []struct {
		name      string
		steps     string
		responses string
		input     string // the whole state machine input; "": the trigger's
		timeLimit bool   // the run passes its state machine's time limit while b is in flight
		status    store.RunStatus
		want      []string // the notifications posted, in order
	}{
		{
			name:      "past its time limit",
			steps:     "  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "a done", "") + "]\n",
			timeLimit: true,
			status:    store.RunFailed,
			want:      []string{"escalate|timed_out|failed||api|TIMED_OUT|" + timedOut},
		},
		{
			name:   "ended by an error before any step (a rerun from a step that does not exist)",
			steps:  "  - {name: a, executor: scripted}\n",
			input:  `{"trigger": ` + endsTrigger + `, "rerun": {"from_step": "nope"}}`,
			status: store.RunFailed,
			want: []string{"escalate|failed|failed||api|FAILED|the execution failed with Stepline.RerunUnknownStep: " +
				"from_step nope is not a sequential step of this pipeline"},
		},
		{
			name:      "escalated by its step",
			steps:     "  - {name: a, executor: scripted}\n",
			responses: "a: [" + reply(0.4, "unsure", "") + "]\n",
			status:    store.RunEscalated,
			want:      []string{"escalate|low_confidence|escalated|a|api||unsure"},
		},
		{
			name:      "stopped by its step",
			steps:     "  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "nothing to do", `, "proceed": false`) + "]\n",
			status:    store.RunStopped,
			want:      []string{"stopped|stopped|stopped|a|api||nothing to do"},
		},
		{
			name:      "failed by its step",
			steps:     "  - {name: a, executor: scripted}\n",
			responses: "a: [{error: http 500}]\n",
			status:    store.RunFailed,
			want:      []string{`escalate|failed|failed|a|api||step "a" failed: ExecutorUnavailable: step "a": scripted error "http 500" (responses.yaml:1:5)`},
		},
		{
			name:      "completed",
			steps:     "  - {name: a, executor: scripted}\n",
			responses: "a: [" + reply(0.9, "done", "") + "]\n",
			status:    store.RunCompleted,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, endsPipeline(srv.URL, "", c.steps))
			const limit = time.Hour
			clock := &gateClock{fakeClock: fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}, gate: limit, open: make(chan struct{})}
			stalled := make(chan string, 1)
			r := endsRunner(t, dir, c.responses, clock, func(h StepHandler) StepHandler {
				return stallHandler{inner: h, hang: func(_ task.Request, name string) bool { return c.timeLimit && name == "b" }, stalled: stalled}
			})
			sm, name, _, err := r.Compile(path)
			if err != nil {
				t.Fatal(err)
			}
			var opts []RunOption
			if c.input != "" {
				opts = append(opts, func(o *runOptions) { o.input = json.RawMessage(c.input) })
			}
			if c.timeLimit {
				limited := *sm
				limited.TimeoutSeconds = int(limit / time.Second)
				sm = &limited
				go func() {
					<-stalled // b is in flight: the time limit passes
					close(clock.open)
				}()
			}
			before := len(hook.got())
			o, err := r.Start(ctx, sm, name, json.RawMessage(endsTrigger), "", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != c.status {
				t.Fatalf("status %s (%s), want %s", o.Status, o.Reason, c.status)
			}
			run, err := r.Store.GetRun(ctx, o.RunID)
			if err != nil || run.Status != c.status || run.CompletedAt == nil {
				t.Fatalf("run record %+v, %v; want %s and completed", run, err, c.status)
			}
			got := hook.got()[before:]
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("notifications\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestNotifySweepEscalates: a durable run with on_interrupted: escalate
// left running by a process that died is escalated by the sweep, which
// fires its escalate notifications once; the process that died (its
// context ended mid-run) fired none, and a second sweep finds nothing.
func TestNotifySweepEscalates(t *testing.T) {
	hook := &notifications{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, endsPipeline(srv.URL, "durable: {on_interrupted: escalate}\n",
		"  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n"))
	responses := "a: [" + reply(0.9, "a done", "") + "]\n"
	// Now: the sweep measures the run's age on the system clock.
	interruptAt(t, dir, path, responses, &fakeClock{now: time.Now().UTC()}, json.RawMessage(endsTrigger), "", "b")
	if got := hook.got(); len(got) != 0 {
		t.Fatalf("notified before the sweep: %q", got)
	}

	other := endsRunner(t, dir, responses, &fakeClock{now: time.Now().UTC()}, nil)
	// Before the sweep, the pipeline is changed and compiled under its
	// name with other recipients: the interrupted run still notifies as
	// the pipeline it started as.
	newHook := &notifications{}
	newSrv := httptest.NewServer(newHook)
	defer newSrv.Close()
	writeText(t, path, endsPipeline(newSrv.URL, "durable: {on_interrupted: escalate}\n",
		"  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n"))
	if _, _, _, err := other.Compile(path); err != nil {
		t.Fatal(err)
	}
	swept, err := other.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0].Action != "escalated" {
		t.Fatalf("swept %+v, want one run escalated", swept)
	}
	run, err := other.Store.GetRun(ctx, swept[0].RunID)
	if err != nil || run.Status != store.RunEscalated {
		t.Fatalf("run %+v, %v; want escalated", run, err)
	}
	want := `escalate|escalated|escalated||api||step "b" was interrupted; escalated on resume (durable: on_interrupted: escalate)`
	if got := hook.got(); len(got) != 1 || got[0] != want {
		t.Errorf("notifications %q, want one: %q", got, want)
	}
	if got := newHook.got(); len(got) != 0 {
		t.Errorf("the changed pipeline's recipients were notified: %q", got)
	}
	if got := scrape(t, other)[`stepline_runs_total{pipeline="p",status="escalated"}`]; got != "1" {
		t.Errorf("runs ended escalated counted %q times, want 1", got)
	}
	again, err := other.Sweep(ctx)
	if err != nil || len(again) != 0 {
		t.Errorf("second sweep: %+v, %v; want nothing", again, err)
	}
	if got := hook.got(); len(got) != 1 {
		t.Errorf("%d notifications after a second sweep, want 1", len(got))
	}
}

// TestNotifyScriptedRunOffline: the notifications of a scripted run that
// the runner closes go through its scripted step function's dispatcher
// (Config.Notifications is given the run's own step function), never the
// live one's; a live run's go through the live one.
func TestNotifyScriptedRunOffline(t *testing.T) {
	hook := &notifications{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, endsPipeline(srv.URL, "", "  - {name: a, executor: scripted}\n"))
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "a: ["+reply(0.9, "done", "")+"]\n")
	var mu sync.Mutex
	var via []string
	dispatcher := func(name string) *notify.Dispatcher {
		return &notify.Dispatcher{HTTP: http.DefaultClient, Record: func(_ context.Context, d notify.Delivery) {
			mu.Lock()
			via = append(via, name+" "+d.Action)
			mu.Unlock()
		}}
	}
	r, err := Open(ctx, Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{}), Notifications: dispatcher("live")}
		},
		Scripted: func(st *sqlite.Store, replies *executor.Responses) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies}), Notifications: dispatcher("scripted")}
		},
		Notifications: func(h StepHandler) notify.Notifier { return h.(*steprun.Handler).Notifications },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sm, name, _, err := r.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	rerun := func(o *runOptions) { o.input = json.RawMessage(`{"trigger": {}, "rerun": {"from_step": "nope"}}`) }
	for _, c := range []struct {
		opts []RunOption
		want string
	}{
		{[]RunOption{rerun, WithResponses(replies)}, "scripted escalate"},
		{[]RunOption{rerun}, "live escalate"},
	} {
		mu.Lock()
		via = nil
		mu.Unlock()
		o, err := r.Start(ctx, sm, name, nil, "", c.opts...)
		if err != nil || o.Status != store.RunFailed {
			t.Fatalf("run: %+v, %v; want failed", o, err)
		}
		mu.Lock()
		got := strings.Join(via, ", ")
		mu.Unlock()
		if got != c.want {
			t.Errorf("delivered through %q, want %q", got, c.want)
		}
	}
}
