package runend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// fired records what Fire was called with and answers with deliveries.
type fired struct {
	calls      int
	p          task.Pipeline
	action     string
	data       notify.Context
	deliveries []notify.Delivery
}

func (f *fired) Fire(_ context.Context, p task.Pipeline, action string, data notify.Context) []notify.Delivery {
	f.calls++
	f.p, f.action, f.data = p, action, data
	return f.deliveries
}

// TestOutcomeAction: the action of every end Of gives, and of the
// statuses no execution end gives.
func TestOutcomeAction(t *testing.T) {
	for _, tc := range []struct {
		end  End
		want string
	}{
		{End{Kind: Succeeded, Output: json.RawMessage(`{"status":"completed"}`)}, ""},
		{End{Kind: Succeeded, Output: json.RawMessage(`{"status":"stopped","reason":"done"}`)}, notify.ActionStopped},
		{End{Kind: Failed, Error: task.ErrorEscalated}, notify.ActionEscalate},
		{End{Kind: Failed, Error: task.ErrorAborted}, pipeline.DefaultOnAbort},
		{End{Kind: Failed, Error: task.ErrorFailed}, notify.ActionEscalate},
		{End{Kind: Failed, Error: "States.Runtime"}, notify.ActionEscalate},
		{End{Kind: TimedOut}, notify.ActionEscalate},
		{End{Kind: Aborted}, notify.ActionEscalate},
	} {
		o, _ := Of(tc.end)
		if got := o.Action(); got != tc.want {
			t.Errorf("%+v: action %q, want %q", o, got, tc.want)
		}
	}
	for _, st := range []store.RunStatus{store.RunRunning, store.RunWaiting, store.RunInterrupted, ""} {
		if got := (Outcome{Status: st}).Action(); got != "" {
			t.Errorf("%q: action %q, want none", st, got)
		}
	}
}

// TestNotify: what a run closed outside a step is told, once, and how
// its deliveries are logged; nothing for an outcome that fires nothing
// or without a dispatcher.
func TestNotify(t *testing.T) {
	ctx := context.Background()
	p := task.Pipeline{Name: "triage"}
	timedOut, _ := Of(End{Kind: TimedOut, Cause: "after 3600 s"})
	closed := Closed{RunID: "run-1", Pipeline: p, Outcome: timedOut, Trigger: json.RawMessage(`{"team":"sre"}`),
		Extra: map[string]any{"execution_status": "TIMED_OUT"}}
	f := &fired{deliveries: []notify.Delivery{
		{RunID: "run-1", Action: "escalate", Channel: "webhook", Via: "webhook"}, // as the Dispatcher fills them
		{RunID: "run-1", Action: "escalate", Channel: "slack", Via: "slack", Err: errors.New("hooks.slack.com answered 500")},
	}}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	got := Notify(ctx, f, log, closed)
	if f.calls != 1 || len(got) != 2 {
		t.Fatalf("%d calls, %d deliveries; want 1 call, 2 deliveries", f.calls, len(got))
	}
	want := notify.Context{RunID: "run-1", Status: "failed", Trigger: closed.Trigger, EscalationReason: notify.EscalationTimedOut,
		StepSummary: "the execution timed out (the state machine's time limit passed): after 3600 s"}
	d := f.data
	if f.p.Name != "triage" || f.action != notify.ActionEscalate || d.RunID != want.RunID || d.Status != want.Status ||
		string(d.Trigger) != string(want.Trigger) || d.EscalationReason != want.EscalationReason || d.StepSummary != want.StepSummary ||
		d.CurrentStep != "" || d.Extra["execution_status"] != "TIMED_OUT" {
		t.Errorf("fired %s %q with %+v; want escalate with %+v", f.p.Name, f.action, d, want)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], `msg="notification delivered" run=run-1 action=escalate channel=webhook`) ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], `msg="notification not delivered" run=run-1 action=escalate channel=slack`) ||
		!strings.Contains(lines[1], `error="hooks.slack.com answered 500"`) {
		t.Errorf("logs:\n%s", logs.String())
	}

	// Nothing to send: a completed run, no dispatcher.
	completed, _ := Of(End{Kind: Succeeded})
	if got := Notify(ctx, f, log, Closed{RunID: "run-2", Pipeline: p, Outcome: completed}); got != nil || f.calls != 1 {
		t.Errorf("a completed run: %d calls, deliveries %v", f.calls, got)
	}
	if got := Notify(ctx, nil, log, closed); got != nil {
		t.Errorf("no dispatcher: deliveries %v", got)
	}
	// No logger: sent, not logged.
	logs.Reset()
	if got := Notify(ctx, f, nil, closed); len(got) != 2 || f.calls != 2 || logs.Len() != 0 {
		t.Errorf("no logger: %d deliveries, %d calls, logs %q", len(got), f.calls, logs.String())
	}
}
