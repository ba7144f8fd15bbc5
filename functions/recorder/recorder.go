package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/runend"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// What the recorder is sent.
const (
	EventSource     = "aws.states"
	EventDetailType = "Step Functions Execution Status Change"
)

// Execution statuses.
const (
	ExecutionRunning   = "RUNNING"
	ExecutionSucceeded = "SUCCEEDED"
	ExecutionFailed    = "FAILED"
	ExecutionTimedOut  = "TIMED_OUT"
	ExecutionAborted   = "ABORTED"
)

// statusChange is the detail of a status change event. Dates are
// milliseconds since the epoch; input and output are JSON text, null when
// too large for the event (inputDetails.included false).
type statusChange struct {
	ExecutionARN    string  `json:"executionArn"`
	StateMachineARN string  `json:"stateMachineArn"`
	Name            string  `json:"name"`
	Status          string  `json:"status"`
	StartDate       int64   `json:"startDate"`
	StopDate        *int64  `json:"stopDate"`
	Input           *string `json:"input"`
	Output          *string `json:"output"`
	Error           *string `json:"error"`
	Cause           *string `json:"cause"`
}

// outcome is how a run ends, as its execution's final status says.
type outcome = runend.Outcome

// outcomeOf reads the run's end from a final execution status (package
// shared/runend: the rule the local runner follows too); ok is false for a
// status that is not final (RUNNING) or unknown.
func outcomeOf(d statusChange) (outcome, bool) {
	e := runend.End{Error: deref(d.Error), Cause: deref(d.Cause)}
	switch d.Status {
	case ExecutionSucceeded:
		e.Kind = runend.Succeeded
		if d.Output != nil {
			e.Output = json.RawMessage(*d.Output)
		}
	case ExecutionFailed:
		e.Kind = runend.Failed
	case ExecutionTimedOut:
		e.Kind = runend.TimedOut
	case ExecutionAborted:
		e.Kind = runend.Aborted
	default:
		return outcome{}, false
	}
	return runend.Of(e)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// RunStore is what the recorder needs of the run store.
type RunStore interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	CreateRun(ctx context.Context, r store.Run) error
	UpdateRun(ctx context.Context, id string, u store.RunUpdate) error
}

var _ RunStore = (store.Store)(nil)

// Pipelines returns the facts of the pipeline a state machine runs: its
// name, stage and notifications (satisfied by definitions).
type Pipelines interface {
	Pipeline(ctx context.Context, stateMachineARN string) (task.Pipeline, error)
}

// PipelineNames names the pipeline of a state machine (satisfied by
// awsenv.StateMachines, the deployment's naming rule).
type PipelineNames interface {
	Pipeline(stateMachineARN string) (string, bool)
}

var _ PipelineNames = awsenv.StateMachines{}

// pipelineOf names the pipeline of a state machine, "" when unknown.
func (r *Recorder) pipelineOf(arn string) string {
	if r.Machines == nil {
		return ""
	}
	name, _ := r.Machines.Pipeline(arn)
	return name
}

// Recorder closes the run of an execution that ended and, when it is the
// one that closed it, sends the notifications the outcome fires. Set the
// fields, then call Handle from any number of goroutines.
type Recorder struct {
	Store         RunStore
	Pipelines     Pipelines
	Notifications notify.Notifier // nil: none are sent
	Machines      PipelineNames   // names the pipeline of a state machine; nil: none
	Metrics       *Metrics        // nil: none are written
	Log           *slog.Logger
}

// Handle records one execution status change. Events of other kinds and
// statuses that are not final are ignored. The run record is closed once:
// a run a step already closed (the state machine ended in a Stepline Fail
// or Succeed state after the step recorded why) keeps its record and is
// not notified again; a run nothing closed (a timeout, an abort, an error
// the state machine could not catch, a completed run) is closed here and
// its notifications fired. Errors are returned when a retry may help
// (store or Step Functions unavailable); Lambda then retries the event.
func (r *Recorder) Handle(ctx context.Context, ev events.CloudWatchEvent) error {
	if ev.Source != EventSource || ev.DetailType != EventDetailType {
		r.Log.WarnContext(ctx, "event ignored: not an execution status change", "source", ev.Source, "detail_type", ev.DetailType, "id", ev.ID)
		return nil
	}
	var d statusChange
	if err := json.Unmarshal(ev.Detail, &d); err != nil || d.Name == "" {
		r.Log.ErrorContext(ctx, "event ignored: its detail is not an execution status change", "id", ev.ID)
		return nil
	}
	o, final := outcomeOf(d)
	if !final {
		r.Log.DebugContext(ctx, "status change ignored", "run", d.Name, "status", d.Status)
		return nil
	}
	run, closed, p, err := r.close(ctx, d, o)
	if err != nil {
		return fmt.Errorf("record run %s (%s): %w", d.Name, d.Status, err)
	}
	name := run.Pipeline
	if name == "" {
		name = r.pipelineOf(d.StateMachineARN)
	}
	r.Log.InfoContext(ctx, "run recorded", "run", d.Name, "pipeline", name, "execution_status", d.Status,
		"status", string(run.Status), "closed_here", closed, "reason", run.Reason)
	r.Metrics.Run(name, string(run.Status))
	if closed {
		r.notify(ctx, d, o, p)
	}
	return nil
}

// close writes the outcome unless the run is closed already. It returns
// the run as stored afterwards, whether this call closed it, and the
// pipeline's facts when they were needed.
func (r *Recorder) close(ctx context.Context, d statusChange, o outcome) (store.Run, bool, task.Pipeline, error) {
	var p task.Pipeline
	havePipeline := false
	pipelineFacts := func() error {
		if havePipeline {
			return nil
		}
		var err error
		if p, err = r.Pipelines.Pipeline(ctx, d.StateMachineARN); err != nil {
			return fmt.Errorf("read pipeline of %s: %w", d.StateMachineARN, err)
		}
		havePipeline = true
		return nil
	}
	stopped := time.UnixMilli(deref64(d.StopDate)).UTC()
	if d.StopDate == nil {
		stopped = time.Now().UTC()
	}
	for attempt := 0; attempt < 2; attempt++ {
		run, err := r.Store.GetRun(ctx, d.Name)
		switch {
		case err == nil && run.Status.Terminal():
			return run, false, p, nil
		case err == nil:
			// The notifications must be known before the run is closed:
			// once it is, a retried event would find it closed and
			// notify nobody.
			if o.Action() != "" {
				if err := pipelineFacts(); err != nil {
					return store.Run{}, false, p, err
				}
			}
			err := r.Store.UpdateRun(ctx, d.Name, store.RunUpdate{Status: o.Status, Reason: cut(o.Reason), CompletedAt: &stopped, FinalOutput: o.Final})
			if errors.Is(err, store.ErrConflict) {
				continue // closed meanwhile: read what it became
			}
			if err != nil {
				return store.Run{}, false, p, err
			}
			run.Status, run.Reason = o.Status, cut(o.Reason)
			return run, true, p, nil
		case errors.Is(err, store.ErrNotFound):
			// The execution ended before any step recorded the run.
			if err := pipelineFacts(); err != nil {
				return store.Run{}, false, p, err
			}
			run := r.newRun(d, o, p, stopped)
			err := r.Store.CreateRun(ctx, run)
			if errors.Is(err, store.ErrExists) {
				continue
			}
			if err != nil {
				return store.Run{}, false, p, err
			}
			return run, true, p, nil
		default:
			return store.Run{}, false, p, err
		}
	}
	return store.Run{}, false, p, fmt.Errorf("run %s changed while it was being closed", d.Name)
}

func deref64(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// cut bounds a reason to what a run record holds.
func cut(s string) string {
	s, _ = store.Cut(s, store.MaxTextBytes)
	return s
}

// newRun is the record of a run that ended before any step recorded it:
// what the execution's input (the trigger) and the pipeline say.
func (r *Recorder) newRun(d statusChange, o outcome, p task.Pipeline, stopped time.Time) store.Run {
	run := store.Run{
		ID: d.Name, Pipeline: r.pipelineOf(d.StateMachineARN), Status: o.Status, Reason: cut(o.Reason),
		Stage: store.StageTesting, StartedAt: time.UnixMilli(d.StartDate).UTC(), CompletedAt: &stopped, FinalOutput: o.Final,
	}
	if run.Pipeline == "" {
		run.Pipeline = p.Name
	}
	run.ConfigFingerprint = p.Config
	if string(p.Stage) == store.StageProduction {
		run.Stage = store.StageProduction
	}
	if d.StartDate == 0 {
		run.StartedAt = stopped
	}
	trig := triggerOf(d)
	if len(trig) > 0 && len(trig) <= store.MaxTriggerBytes {
		run.Trigger = trig
		var t struct {
			Source      string `json:"source"`
			Team        string `json:"team"`
			Fingerprint string `json:"fingerprint"`
		}
		_ = json.Unmarshal(trig, &t)
		run.Source, run.Team, run.Fingerprint = t.Source, t.Team, t.Fingerprint
	}
	var in struct {
		ParentRunID string `json:"parent_run_id"`
	}
	if d.Input != nil {
		_ = json.Unmarshal([]byte(*d.Input), &in)
	}
	run.ParentRunID = in.ParentRunID
	return run
}

// triggerOf returns the trigger of the execution's input, a JSON object,
// or nil.
func triggerOf(d statusChange) json.RawMessage {
	if d.Input == nil {
		return nil
	}
	var in struct {
		Trigger json.RawMessage `json:"trigger"`
	}
	if json.Unmarshal([]byte(*d.Input), &in) != nil {
		return nil
	}
	t := strings.TrimSpace(string(in.Trigger))
	if !strings.HasPrefix(t, "{") {
		return nil
	}
	return in.Trigger
}

// notify fires the notifications of a run closed here (runend.Notify:
// escalate for failed and escalated, the default on_abort action for
// aborted, stopped for stopped; nothing for completed), with the
// execution's ARN, status and error as extra variables. Deliveries are
// logged; a failed one is not retried.
func (r *Recorder) notify(ctx context.Context, d statusChange, o outcome, p task.Pipeline) {
	runend.Notify(ctx, r.Notifications, r.Log, runend.Closed{
		RunID:    d.Name,
		Pipeline: p,
		Outcome:  o,
		Trigger:  triggerOf(d),
		Extra: map[string]any{
			"execution_arn":    d.ExecutionARN,
			"execution_status": d.Status,
			"error":            deref(d.Error),
		},
	})
}

// Metrics writes CloudWatch embedded metric format records, one JSON line
// each, to W (the function's standard output, which Lambda sends to
// CloudWatch Logs, where the metrics are extracted).
type Metrics struct {
	W         io.Writer
	Namespace string
	Now       func() time.Time // nil: time.Now

	mu sync.Mutex
}

// Run counts one run that ended: metric Runs (Count), dimensions Pipeline
// and Status, and again with Status alone (the deployment-wide count the
// failed-runs alarm reads). A nil Metrics writes nothing.
func (m *Metrics) Run(pipeline, status string) {
	if m == nil || m.W == nil {
		return
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	rec := map[string]any{
		"_aws": map[string]any{
			"Timestamp": now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  m.Namespace,
				"Dimensions": [][]string{{"Pipeline", "Status"}, {"Status"}},
				"Metrics":    []any{map[string]string{"Name": "Runs", "Unit": "Count"}},
			}},
		},
		"Pipeline": pipeline,
		"Status":   status,
		"Runs":     1,
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.W.Write(append(b, '\n'))
}
