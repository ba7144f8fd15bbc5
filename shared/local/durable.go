package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/internal/atomicfile"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/runend"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// meta is what the sweep needs to know of a pipeline as it was when its
// runs started; Compile saves it beside the definition.
type meta struct {
	Name    string            `json:"name"`
	Durable *pipeline.Durable `json:"durable,omitempty"`
}

func (r *Runner) metaPath(name string) string {
	return filepath.Join(r.dir, "definitions", name+".meta.json")
}

// saveMeta saves m and returns what it wrote.
func (r *Runner) saveMeta(m meta) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return b, atomicfile.Write(r.metaPath(m.Name), b)
}

func (r *Runner) loadMeta(name string) (meta, error) {
	var m meta
	b, err := os.ReadFile(r.metaPath(name))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// Swept is what Sweep did with one interrupted run.
type Swept struct {
	RunID   string
	Action  string // resumed, escalated or interrupted
	Reason  string
	Outcome Outcome // resumed: where the run stands now
}

// Sweep handles the runs left running by a process that died: a run is
// interrupted when no live process holds its claim (see Resume), and a
// child run when no live process drives its parent either (the parent's
// driver drives it). A run of a durable pipeline is resumed when its
// guards hold — the pipeline's compiled definition is the one the run
// started with, and the run is younger than max_resume_age_seconds —
// applying on_interrupted: rerun
// resumes it (the step in flight runs again), escalate ends it escalated
// without running that step and fires the pipeline's escalate
// notifications (escalation_reason "escalated"; see Config.Notifications).
// Any other interrupted run is marked interrupted. Runs that wait for an
// approval are not interrupted.
func (r *Runner) Sweep(ctx context.Context) ([]Swept, error) {
	runs, err := r.Store.ListRuns(ctx, store.RunFilter{Status: store.RunRunning, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var out []Swept
	var errs []error
	for _, run := range runs {
		release, err := r.holdInterrupted(ctx, run)
		var driven *DrivenError
		switch {
		case errors.As(err, &driven):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		s := r.sweepOne(ctx, run)
		release()
		out = append(out, s)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("sweep: %w", errors.Join(errs...))
	}
	return out, nil
}

// holdInterrupted claims a run left running, for the sweep to handle;
// a *DrivenError means that a live process drives it, or drives the
// parent that drives it.
func (r *Runner) holdInterrupted(ctx context.Context, run store.Run) (func(), error) {
	if run.ParentRunID != "" {
		_, release, err := r.hold(ctx, run.ParentRunID)
		if err != nil {
			return nil, err
		}
		release()
	}
	_, release, err := r.hold(ctx, run.ID)
	return release, err
}

func (r *Runner) sweepOne(ctx context.Context, run store.Run) Swept {
	s := Swept{RunID: run.ID}
	m, err := r.loadMeta(run.Pipeline)
	switch {
	case err != nil || m.Durable == nil:
		s.Action, s.Reason = "interrupted", "the pipeline is not durable"
	case r.now().Sub(run.StartedAt) > maxResumeAge(m.Durable):
		s.Action, s.Reason = "interrupted", fmt.Sprintf("the run is older than max_resume_age_seconds (%s)", maxResumeAge(m.Durable))
	case m.Durable.OnInterrupted == "escalate":
		s.Action = "escalated"
		s.Reason = interruptedReason(r.inFlight(ctx, run.ID))
		// Ended as a Fail state of the escalate policy would end it.
		end, _ := runend.Of(runend.End{Kind: runend.Failed, Error: task.ErrorEscalated, Cause: s.Reason})
		now := r.now().UTC()
		closed, rec, err := r.closeRun(ctx, run.ID, store.RunUpdate{Status: end.Status, Reason: end.Reason, CompletedAt: &now})
		switch {
		case err != nil:
			s.Action, s.Reason = "interrupted", "escalate: "+err.Error()
		case closed:
			r.metrics.RunEnded(run.Pipeline, end.Status)
			r.notifyClosed(ctx, run.Pipeline, nil, rec, end, nil)
		}
		return s
	default:
		o, err := r.Resume(ctx, run.ID)
		if err == nil {
			s.Action, s.Outcome = "resumed", o
			return s
		}
		s.Action, s.Reason = "interrupted", "resume: "+err.Error()
		if errors.Is(err, engine.ErrDefinitionChanged) {
			s.Reason = "the pipeline changed since the run started"
		}
	}
	now := r.now().UTC()
	_ = r.Store.UpdateRun(ctx, run.ID, store.RunUpdate{Status: store.RunInterrupted, Reason: "interrupted: " + s.Reason, CompletedAt: &now})
	return s
}

func maxResumeAge(d *pipeline.Durable) time.Duration {
	if d.MaxResumeAgeSeconds != nil {
		return time.Duration(*d.MaxResumeAgeSeconds) * time.Second
	}
	return pipeline.DefaultMaxResumeAgeSeconds * time.Second
}

// interruptedReason is the reason of a run escalated on resume, naming
// the steps that were in flight.
func interruptedReason(steps []string) string {
	const how = "escalated on resume (durable: on_interrupted: escalate)"
	switch len(steps) {
	case 0:
		return "the run was interrupted between steps; " + how
	case 1:
		return fmt.Sprintf("step %q was interrupted; %s", steps[0], how)
	}
	quoted := make([]string, len(steps))
	for i, st := range steps {
		quoted[i] = strconv.Quote(st)
	}
	return fmt.Sprintf("steps %s were interrupted; %s", strings.Join(quoted, ", "), how)
}

// inFlight names, sorted, the steps whose work was under way when the run
// stopped: a Task scheduled and not finished, or waiting out a retry
// backoff (a failed attempt followed by TaskRetried), in any branch or
// item. A parallel branch is named "<group>/<branch>" and a fan-out item
// "<fan_out>/<i>", as their records are.
func (r *Runner) inFlight(ctx context.Context, runID string) []string {
	h, err := r.History(ctx, runID)
	if err != nil {
		return nil
	}
	type key struct{ path, state string }
	open := map[key]string{} // → the step's name
	for _, e := range h {
		var d struct {
			Path    string `json:"path"`
			Payload struct {
				Step struct {
					Name string `json:"name"`
				} `json:"step"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(e.Detail, &d)
		k := key{d.Path, e.State}
		switch e.Type {
		case "TaskScheduled":
			open[k] = stepOf(d.Path, e.State, d.Payload.Step.Name)
		case "TaskRetried", "StateRetried":
			if _, ok := open[k]; !ok {
				open[k] = stepOf(d.Path, e.State, "")
			}
		case "TaskFailed", "TaskTimedOut":
			// Open again if TaskRetried follows: the retry is in flight.
			delete(open, k)
		case "TaskSucceeded", "StateExited", "CatchTaken":
			delete(open, k)
		}
	}
	var out []string
	for _, name := range open {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// stepOf names the step a state belongs to: "<step>" for the states
// "<step>", "<step>: decision" and the like, "<group>/<branch>" for a
// parallel branch's, "<fan_out>/<i>" for the states of a fan-out's item i
// (path "…/<fan_out>#<i>"), and the failing step for "Record failure"
// (named in its payload).
func stepOf(path, state, payloadStep string) string {
	if state == compiler.StateRecord && payloadStep != "" {
		return payloadStep
	}
	name, _, _ := strings.Cut(state, ": ")
	if fan, ok := strings.CutSuffix(name, " item"); ok {
		seg := path[strings.LastIndex(path, "/")+1:]
		if base, i, ok := strings.Cut(seg, "#"); ok && base == fan {
			return fan + "/" + i
		}
	}
	return name
}
