package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

const testMachineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-rie-recorder"

// pipelineSource compiles the recorder's test pipeline, with its escalate
// notification posted to hookURL.
func pipelineSource(hookURL string) string {
	return `name: rie-recorder
description: Triage with notifications.
stage: production
vars:
  runbook: |
    first line
    second line
  marker: "{% raw %}kept{% endraw %}"
  empty: ""
notifications:
  escalate:
    - channel: webhook
      config:
        url: ` + hookURL + `
      template: '{"run": "{{ pipeline_run_id }}", "status": "{{ status }}", "reason": "{{ escalation_reason }}", "summary": {{ step_summary | json }}, "service": "{{ labels.service }}"}'
  stopped:
    - channel: log
      template: "{% if proceed_reason %}stopped: {{ proceed_reason }}{% endif %}"
steps:
  - name: triage
    executor: scripted
`
}

// compiled returns the deployed definition of the test pipeline.
func compiled(t *testing.T, hookURL string) string {
	t.Helper()
	sm, ds := compiler.Compile("rie-recorder.yaml", []byte(pipelineSource(hookURL)))
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	def, err := compiler.MarshalCompact(sm)
	if err != nil {
		t.Fatal(err)
	}
	return string(def)
}

func TestPipelineOf(t *testing.T) {
	p, err := task.PipelineOf([]byte(compiled(t, "https://hooks.example.com/escalate")))
	if err != nil {
		t.Fatal(err)
	}
	want := task.Pipeline{
		Name:          "rie-recorder",
		Stage:         pipeline.StageProduction,
		RunEndedError: true, // the definition catches Stepline.RunEnded
		Vars:          map[string]string{"runbook": "first line\nsecond line\n", "marker": "{% raw %}kept{% endraw %}", "empty": ""},
		Notifications: []pipeline.Action{
			{Name: "escalate", Notices: []pipeline.Notification{{Channel: "webhook", Config: map[string]any{"url": "https://hooks.example.com/escalate"},
				Template: `{"run": "{{ pipeline_run_id }}", "status": "{{ status }}", "reason": "{{ escalation_reason }}", "summary": {{ step_summary | json }}, "service": "{{ labels.service }}"}`}}},
			{Name: "stopped", Notices: []pipeline.Notification{{Channel: "log", Template: "{% if proceed_reason %}stopped: {{ proceed_reason }}{% endif %}"}}},
		},
	}
	// The definition's fingerprint, which a run the recorder creates
	// records (ConfigFingerprint).
	sm, _ := compiler.Compile("rie-recorder.yaml", []byte(pipelineSource("https://hooks.example.com/escalate")))
	if want.Config = compiler.ConfigOf(sm); len(want.Config) != 12 {
		t.Fatalf("config %q", want.Config)
	}
	for i := range p.Notifications { // positions are not part of the facts
		p.Notifications[i].Pos = pipeline.Pos{}
		for j := range p.Notifications[i].Notices {
			p.Notifications[i].Notices[j].Pos = pipeline.Pos{}
		}
	}
	if !reflect.DeepEqual(p, want) {
		got, _ := json.MarshalIndent(p, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("pipeline facts\n%s\nwant\n%s", got, exp)
	}
}

func TestPipelineOfRefuses(t *testing.T) {
	tests := []struct{ name, def, want string }{
		{"not JSON", `{`, "definition"},
		{"no pipeline", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}`, "assigns no pipeline"},
		{"nameless", `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Assign": {"pipeline": {"stage": "testing"}}, "End": true}}}`, "no name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := task.PipelineOf([]byte(tc.def)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func readDetail(t *testing.T, name string) (events.CloudWatchEvent, statusChange) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "lambda", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	var d statusChange
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		t.Fatal(err)
	}
	return ev, d
}

func str(s string) *string { return &s }

func TestOutcomeOf(t *testing.T) {
	_, failed := readDetail(t, "eventbridge-execution-failed.json")
	_, timedOut := readDetail(t, "eventbridge-execution-timed-out.json")
	_, escalated := readDetail(t, "eventbridge-execution-escalated.json")
	_, succeeded := readDetail(t, "eventbridge-execution-succeeded.json")
	with := func(d statusChange, f func(*statusChange)) statusChange { f(&d); return d }
	tests := []struct {
		name       string
		d          statusChange
		want       store.RunStatus
		wantReason string // substring
		wantFinal  string
		notFinal   bool
	}{
		{name: "uncaught error", d: failed, want: store.RunFailed, wantReason: "the execution failed with States.Runtime: An error occurred while executing the state 'triage: outcome'"},
		{name: "timed out", d: timedOut, want: store.RunFailed, wantReason: "timed out"},
		{name: "escalated by a step", d: escalated, want: store.RunEscalated, wantReason: `step "triage": confidence 0.42 is below the threshold 0.75`},
		{name: "aborted by a step", d: with(escalated, func(d *statusChange) { d.Error, d.Cause = str(task.ErrorAborted), str("rejected") }), want: store.RunAborted, wantReason: "rejected"},
		{name: "failed by a step", d: with(escalated, func(d *statusChange) { d.Error, d.Cause = str(task.ErrorFailed), str("webhook down") }), want: store.RunFailed, wantReason: "webhook down"},
		{name: "failed without a cause", d: with(failed, func(d *statusChange) { d.Cause = nil }), want: store.RunFailed, wantReason: "the execution failed with States.Runtime"},
		{name: "stopped through Step Functions", d: with(timedOut, func(d *statusChange) { d.Status, d.Cause = ExecutionAborted, str("operator stop") }),
			want: store.RunFailed, wantReason: "aborted (stopped through Step Functions): operator stop"},
		{name: "completed", d: succeeded, want: store.RunCompleted, wantFinal: `{"confidence":0.91,"summary":"checkout-api restarted","next_step_context":""}`},
		{name: "stopped", d: with(succeeded, func(d *statusChange) {
			d.Output = str(`{"status": "stopped", "reason": "the alert resolved itself", "output": {"proceed": false}}`)
		}), want: store.RunStopped, wantReason: "the alert resolved itself", wantFinal: `{"proceed": false}`},
		{name: "succeeded without output", d: with(succeeded, func(d *statusChange) { d.Output = nil }), want: store.RunCompleted},
		{name: "running", d: with(timedOut, func(d *statusChange) { d.Status = ExecutionRunning }), notFinal: true},
		{name: "unknown status", d: with(timedOut, func(d *statusChange) { d.Status = "PENDING_REDRIVE" }), notFinal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := outcomeOf(tc.d)
			if ok == tc.notFinal {
				t.Fatalf("final = %v", ok)
			}
			if tc.notFinal {
				return
			}
			if o.Status != tc.want || !strings.Contains(o.Reason, tc.wantReason) || string(o.Final) != tc.wantFinal {
				t.Errorf("outcome %s %q %s", o.Status, o.Reason, o.Final)
			}
		})
	}
}

// fakePipelines answers the facts of the test pipeline, or err.
type fakePipelines struct {
	p     task.Pipeline
	err   error
	calls int
}

func (f *fakePipelines) Pipeline(_ context.Context, arn string) (task.Pipeline, error) {
	f.calls++
	if arn != testMachineARN {
		return task.Pipeline{}, errors.New("StateMachineDoesNotExist")
	}
	return f.p, f.err
}

type fired struct {
	action string
	data   notify.Context
}

type fakeNotifications struct {
	mu  sync.Mutex
	got []fired
}

func (f *fakeNotifications) Fire(_ context.Context, _ task.Pipeline, action string, data notify.Context) []notify.Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fired{action, data})
	return []notify.Delivery{{Action: action, Channel: "webhook", Via: "webhook"}}
}

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	facts, err := task.PipelineOf([]byte(compiled(t, "https://hooks.example.com/escalate")))
	if err != nil {
		t.Fatal(err)
	}
	pipelines := &fakePipelines{p: facts}
	notes := &fakeNotifications{}
	var metrics bytes.Buffer
	r := &Recorder{
		Store: st, Pipelines: pipelines, Notifications: notes,
		Machines: awsenv.StateMachines{Partition: "aws", Region: "us-east-1", Account: "123456789012", Prefix: "stepline"},
		Metrics:  &Metrics{W: &metrics, Namespace: "Stepline"},
		Log:      slog.New(slog.DiscardHandler),
	}
	started := time.Date(2026, 11, 29, 17, 52, 3, 0, time.UTC)
	for id, status := range map[string]store.RunStatus{
		"run-rie-failed": store.RunRunning, "run-rie-escalated": store.RunRunning, "run-rie-succeeded": store.RunRunning, "run-rie-waiting": store.RunWaiting,
	} {
		if err := st.CreateRun(ctx, store.Run{ID: id, Pipeline: "rie-recorder", Status: status, Stage: "production", StartedAt: started}); err != nil {
			t.Fatal(err)
		}
	}
	// The step closed this run before the state machine failed.
	if err := st.UpdateRun(ctx, "run-rie-escalated", store.RunUpdate{Status: store.RunEscalated, Reason: "low confidence at triage", CompletedAt: &started}); err != nil {
		t.Fatal(err)
	}
	event := func(name string, edit func(*statusChange)) events.CloudWatchEvent {
		ev, d := readDetail(t, name)
		if edit != nil {
			edit(&d)
			ev.Detail, _ = json.Marshal(d)
		}
		return ev
	}
	steps := []struct {
		name        string
		ev          events.CloudWatchEvent
		run         string
		wantStatus  store.RunStatus
		wantReason  string
		wantFired   []string // actions fired so far
		wantMetric  string   // status counted by this event
		wantDescrib int      // DescribeStateMachine calls so far
	}{
		{name: "an uncaught failure closes the run and escalates", ev: event("eventbridge-execution-failed.json", nil), run: "run-rie-failed",
			wantStatus: store.RunFailed, wantReason: "States.Runtime", wantFired: []string{"escalate"}, wantMetric: "failed", wantDescrib: 1},
		{name: "the same event again notifies nobody", ev: event("eventbridge-execution-failed.json", nil), run: "run-rie-failed",
			wantStatus: store.RunFailed, wantReason: "States.Runtime", wantFired: []string{"escalate"}, wantMetric: "failed", wantDescrib: 1},
		{name: "a run the step escalated keeps its record", ev: event("eventbridge-execution-escalated.json", nil), run: "run-rie-escalated",
			wantStatus: store.RunEscalated, wantReason: "low confidence at triage", wantFired: []string{"escalate"}, wantMetric: "escalated", wantDescrib: 1},
		{name: "a timeout before any step creates the run", ev: event("eventbridge-execution-timed-out.json", nil), run: "run-rie-timed-out",
			wantStatus: store.RunFailed, wantReason: "timed out", wantFired: []string{"escalate", "escalate"}, wantMetric: "failed", wantDescrib: 2},
		{name: "a completed run is closed without notifications", ev: event("eventbridge-execution-succeeded.json", nil), run: "run-rie-succeeded",
			wantStatus: store.RunCompleted, wantFired: []string{"escalate", "escalate"}, wantMetric: "completed", wantDescrib: 2},
		{name: "a waiting run that is stopped fails", ev: event("eventbridge-execution-timed-out.json", func(d *statusChange) {
			d.Name, d.Status = "run-rie-waiting", ExecutionAborted
		}), run: "run-rie-waiting", wantStatus: store.RunFailed, wantReason: "aborted", wantFired: []string{"escalate", "escalate", "escalate"}, wantMetric: "failed", wantDescrib: 3},
		{name: "RUNNING is ignored", ev: event("eventbridge-execution-timed-out.json", func(d *statusChange) {
			d.Name, d.Status = "run-rie-new", ExecutionRunning
		}), wantFired: []string{"escalate", "escalate", "escalate"}, wantDescrib: 3},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			metrics.Reset()
			if err := r.Handle(ctx, s.ev); err != nil {
				t.Fatal(err)
			}
			if s.run != "" {
				run, err := st.GetRun(ctx, s.run)
				if err != nil {
					t.Fatal(err)
				}
				if run.Status != s.wantStatus || !strings.Contains(run.Reason, s.wantReason) || run.CompletedAt == nil {
					t.Errorf("run %s %q completed %v, want %s with %q", run.Status, run.Reason, run.CompletedAt, s.wantStatus, s.wantReason)
				}
			}
			var actions []string
			for _, f := range notes.got {
				actions = append(actions, f.action)
			}
			if strings.Join(actions, ",") != strings.Join(s.wantFired, ",") {
				t.Errorf("fired %v, want %v", actions, s.wantFired)
			}
			if pipelines.calls != s.wantDescrib {
				t.Errorf("%d pipeline reads, want %d", pipelines.calls, s.wantDescrib)
			}
			if s.wantMetric == "" {
				if metrics.Len() != 0 {
					t.Errorf("metric written: %s", metrics.String())
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(metrics.Bytes(), &m); err != nil {
				t.Fatalf("metric %q: %v", metrics.String(), err)
			}
			if m["Pipeline"] != "rie-recorder" || m["Status"] != s.wantMetric || m["Runs"] != 1.0 || m["_aws"] == nil {
				t.Errorf("metric %s", metrics.String())
			}
		})
	}

	created, err := st.GetRun(ctx, "run-rie-timed-out")
	if err != nil {
		t.Fatal(err)
	}
	if created.Pipeline != "rie-recorder" || created.Stage != "production" || created.Source != "alertmanager" || created.Team != "checkout" ||
		created.Fingerprint != "5f1c2a9e7d3b4c10:firing" || !created.StartedAt.Equal(time.UnixMilli(1795974723512)) || len(created.Trigger) == 0 ||
		len(created.ConfigFingerprint) != 12 {
		t.Errorf("created run %+v", created)
	}
	done, _ := st.GetRun(ctx, "run-rie-succeeded")
	if string(done.FinalOutput) != `{"confidence":0.91,"summary":"checkout-api restarted","next_step_context":""}` {
		t.Errorf("final output %s", done.FinalOutput)
	}
	n := notes.got[0].data
	if n.RunID != "run-rie-failed" || n.Status != "failed" || n.EscalationReason != "failed" || !strings.Contains(n.StepSummary, "States.Runtime") ||
		!strings.Contains(string(n.Trigger), "checkout-api") || n.Extra["execution_status"] != "FAILED" {
		t.Errorf("notification context %+v", n)
	}
	if n := notes.got[1].data; n.EscalationReason != "timed_out" {
		t.Errorf("timeout escalation reason %q", n.EscalationReason)
	}
}

// TestRecorderRetriesWhenPipelineUnreadable checks that a run is left open
// when its notifications cannot be read, so that the retried event still
// notifies.
func TestRecorderRetriesWhenPipelineUnreadable(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "run-rie-failed", Pipeline: "rie-recorder", Status: store.RunRunning, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pipelines := &fakePipelines{err: errors.New("ThrottlingException")}
	notes := &fakeNotifications{}
	r := &Recorder{Store: st, Pipelines: pipelines, Notifications: notes, Log: slog.New(slog.DiscardHandler)}
	ev, _ := readDetail(t, "eventbridge-execution-failed.json")
	if err := r.Handle(ctx, ev); err == nil || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("err = %v", err)
	}
	if run, _ := st.GetRun(ctx, "run-rie-failed"); run.Status != store.RunRunning {
		t.Fatalf("run %s, want still running", run.Status)
	}
	pipelines.err = nil
	pipelines.p = task.Pipeline{Name: "rie-recorder"}
	if err := r.Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if len(notes.got) != 1 {
		t.Errorf("fired %d times after the retry, want 1", len(notes.got))
	}
}

func TestRecorderIgnoresOtherEvents(t *testing.T) {
	r := &Recorder{Log: slog.New(slog.DiscardHandler)} // no store: nothing may be read or written
	for _, ev := range []events.CloudWatchEvent{
		{Source: "aws.ec2", DetailType: EventDetailType, Detail: json.RawMessage(`{}`)},
		{Source: EventSource, DetailType: "Step Functions State Machine Change", Detail: json.RawMessage(`{}`)},
		{Source: EventSource, DetailType: EventDetailType, Detail: json.RawMessage(`"text"`)},
		{Source: EventSource, DetailType: EventDetailType, Detail: json.RawMessage(`{"status": "FAILED"}`)},
	} {
		if err := r.Handle(context.Background(), ev); err != nil {
			t.Errorf("%s/%s %s: %v", ev.Source, ev.DetailType, ev.Detail, err)
		}
	}
}

type fakeDescribe struct{ def string }

func (f fakeDescribe) Definition(_ context.Context, arn string) (string, error) {
	if arn != testMachineARN {
		return "", errors.New("StateMachineDoesNotExist")
	}
	return f.def, nil
}

func TestDefinitions(t *testing.T) {
	d := definitions{sfn: fakeDescribe{def: compiled(t, "https://hooks.example.com/x")}}
	p, err := d.Pipeline(context.Background(), testMachineARN)
	if err != nil || p.Name != "rie-recorder" || len(p.Notifications) != 2 {
		t.Errorf("pipeline %+v, %v", p, err)
	}
	if _, err := d.Pipeline(context.Background(), testMachineARN+"-other"); err == nil {
		t.Error("no error for an unknown state machine")
	}
}
