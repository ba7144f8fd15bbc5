// Package rerun prepares a rerun: a new run of an earlier run's pipeline
// that reuses the earlier run's outputs for the steps before the one it
// starts from, and runs that step and the ones after it.
//
// Prepare reads the earlier run and its step records and returns a Plan:
// the new run's record (source "rerun", the earlier run's trigger with
// metadata.original_run_id and metadata.from_step, no fingerprint, the
// same team and stage, the config fingerprint of the pipeline as it is
// now), the step records it reuses (copies flagged
// store.FlagReused, usage left out: the rerun spent nothing on them) and
// the block the compiled state machine reads from its input (see package
// compiler, "Start run"). Apply writes the record and the reused records;
// the caller then starts the state machine with Plan.Input — the local
// engine (stepline rerun, serve's POST /runs/{id}/rerun) or Step
// Functions (the ingest function), the same machine either way.
package rerun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// SourceRerun is the source of a rerun's trigger and record.
const SourceRerun = "rerun"

// Errors Prepare returns (wrapped); callers map them to HTTP statuses
// with HTTPStatus.
var (
	// ErrUnknownStep: from_step is not a step of the pipeline, or not a
	// sequential one (groups, their branches and fan-outs are not rerun
	// from).
	ErrUnknownStep = errors.New("not a step to rerun from")
	// ErrActive: the earlier run is still running or waiting.
	ErrActive = errors.New("run still active")
	// ErrPipeline: the earlier run's pipeline is not loaded.
	ErrPipeline = errors.New("pipeline not loaded")
	// ErrTooLarge: the reused outputs do not fit a state machine's input.
	ErrTooLarge = errors.New("reused outputs too large")
)

// MaxInputBytes bounds a rerun's state machine input (trigger and reused
// outputs): Step Functions takes at most 256 KiB.
const MaxInputBytes = 256 << 10

// HTTPStatus maps an error of Prepare or Apply to an HTTP status.
func HTTPStatus(err error) int {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 404
	case errors.Is(err, ErrUnknownStep), errors.Is(err, ErrPipeline), errors.Is(err, store.ErrInvalid):
		return 422
	case errors.Is(err, ErrActive), errors.Is(err, store.ErrExists):
		return 409
	case errors.Is(err, ErrTooLarge), errors.Is(err, store.ErrTooLarge):
		return 413
	}
	return 500
}

// Reader reads the earlier run.
type Reader interface {
	GetRunWithSteps(ctx context.Context, id string) (store.Run, []store.StepRecord, error)
}

// Writer writes the new run.
type Writer interface {
	CreateRun(ctx context.Context, r store.Run) error
	PutStep(ctx context.Context, rec store.StepRecord) error
}

// Plan is a prepared rerun.
type Plan struct {
	Run           store.Run          // the new run, running
	Reused        []store.StepRecord // the records it reuses, as the new run's
	Input         json.RawMessage    // the state machine's input: {"trigger", "rerun"}
	OriginalRunID string
	FromStep      string
}

// Block is the rerun block of a state machine's input.
type Block struct {
	OriginalRunID string                                `json:"original_run_id"`
	FromStep      string                                `json:"from_step"`
	Steps         map[string]json.RawMessage            `json:"steps"`
	Items         map[string]map[string]json.RawMessage `json:"items"`
}

// Prepare plans a rerun of run originalID from step fromStep as run newID,
// started at now. p is the pipeline the earlier run ran (as loaded now);
// an empty fromStep reruns from the first step, reusing nothing. Errors:
// store.ErrNotFound (no such run), ErrPipeline (p is not the run's
// pipeline), ErrActive, ErrUnknownStep, ErrTooLarge.
func Prepare(ctx context.Context, r Reader, p *pipeline.Pipeline, originalID, fromStep, newID string, now time.Time) (Plan, error) {
	run, records, err := r.GetRunWithSteps(ctx, originalID)
	if err != nil {
		return Plan{}, fmt.Errorf("rerun %s: %w", originalID, err)
	}
	if p == nil || p.Name != run.Pipeline {
		return Plan{}, fmt.Errorf("rerun %s: %w: %q", originalID, ErrPipeline, run.Pipeline)
	}
	if run.Status.Active() {
		return Plan{}, fmt.Errorf("rerun %s: %w: it is %s; rerun it once it has ended", originalID, ErrActive, run.Status)
	}
	from := 0
	if fromStep != "" {
		from = -1
		for i, n := range p.Steps {
			if _, ok := n.(*pipeline.Step); ok && n.NodeName() == fromStep {
				from = i
			}
		}
		if from < 0 {
			return Plan{}, fmt.Errorf("rerun %s: %w: %s", originalID, ErrUnknownStep, describe(p, fromStep))
		}
	} else if len(p.Steps) > 0 {
		fromStep = p.Steps[0].NodeName()
		if _, ok := p.Steps[0].(*pipeline.Step); !ok {
			return Plan{}, fmt.Errorf("rerun %s: %w: the first step %q is a group: name a sequential step to rerun from", originalID, ErrUnknownStep, fromStep)
		}
	}

	// The outcome of each step: its last record, by name.
	last := map[string]store.StepRecord{}
	for _, rec := range records {
		if rec.Status == store.StepWaiting || rec.Status == store.StepRunning {
			continue
		}
		if prev, ok := last[rec.Name]; !ok || rec.Attempt >= prev.Attempt {
			last[rec.Name] = rec
		}
	}
	block := Block{OriginalRunID: originalID, FromStep: fromStep, Steps: map[string]json.RawMessage{}, Items: map[string]map[string]json.RawMessage{}}
	var reused []store.StepRecord
	take := func(record, as string) bool {
		rec, ok := last[record]
		if !ok || len(rec.Output) == 0 {
			return false
		}
		block.Steps[as] = rec.Output
		reused = append(reused, store.CopyForRerun(rec, newID))
		return true
	}
	for _, n := range p.Steps[:from] {
		switch n := n.(type) {
		case *pipeline.Step:
			take(n.Name, n.Name)
		case *pipeline.Parallel:
			take(n.Name, n.Name)
			for _, b := range n.Branches {
				take(n.Name+"/"+b.Name, b.Name)
			}
		case *pipeline.FanOut:
			take(n.Name, n.Name)
			items := map[string]json.RawMessage{}
			for name, rec := range last {
				if strings.HasPrefix(name, n.Name+"/") && len(rec.Output) > 0 {
					items[name] = rec.Output
					reused = append(reused, store.CopyForRerun(rec, newID))
				}
			}
			if len(items) > 0 {
				block.Items[n.Name] = items
			}
		}
	}

	trigger, err := rerunTrigger(run.Trigger, originalID, fromStep)
	if err != nil {
		return Plan{}, fmt.Errorf("rerun %s: %w", originalID, err)
	}
	input, err := json.Marshal(map[string]any{"trigger": trigger, "rerun": block})
	if err != nil {
		return Plan{}, fmt.Errorf("rerun %s: encode input: %w", originalID, err)
	}
	if len(input) > MaxInputBytes {
		return Plan{}, fmt.Errorf("rerun %s: %w: the trigger and the outputs of the steps before %q take %d bytes, over the %d a state machine's input may have", originalID, ErrTooLarge, fromStep, len(input), MaxInputBytes)
	}
	newRun := store.Run{
		ID: newID, Pipeline: run.Pipeline, Status: store.RunRunning, Stage: run.Stage, Source: SourceRerun,
		Team: run.Team, Trigger: trigger, ConfigFingerprint: p.Config, StartedAt: now,
	}
	return Plan{Run: newRun, Reused: reused, Input: input, OriginalRunID: originalID, FromStep: fromStep}, nil
}

// describe says why name is not a step to rerun from.
func describe(p *pipeline.Pipeline, name string) string {
	var steps []string
	for _, n := range p.Steps {
		if _, ok := n.(*pipeline.Step); ok {
			steps = append(steps, n.NodeName())
		}
		if n.NodeName() == name {
			return fmt.Sprintf("%q is a group of pipeline %q, not a sequential step", name, p.Name)
		}
		if g, ok := n.(*pipeline.Parallel); ok {
			for _, b := range g.Branches {
				if b.Name == name {
					return fmt.Sprintf("%q is a branch of parallel %q, not a sequential step", name, g.Name)
				}
			}
		}
	}
	return fmt.Sprintf("pipeline %q has no step %q (its sequential steps: %s)", p.Name, name, strings.Join(steps, ", "))
}

// rerunTrigger is the earlier trigger as a rerun's: source "rerun", no
// fingerprint, metadata.original_run_id and metadata.from_step.
func rerunTrigger(raw json.RawMessage, originalID, fromStep string) (json.RawMessage, error) {
	t := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &t); err != nil || t == nil {
			t = map[string]any{}
		}
	}
	md, _ := t["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["original_run_id"], md["from_step"] = originalID, fromStep
	t["metadata"], t["source"], t["fingerprint"] = md, SourceRerun, ""
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode trigger: %w", err)
	}
	return b, nil
}

// Apply writes the plan's run record and reused step records.
func Apply(ctx context.Context, w Writer, plan Plan) error {
	if err := w.CreateRun(ctx, plan.Run); err != nil {
		return fmt.Errorf("rerun %s: %w", plan.OriginalRunID, err)
	}
	for _, rec := range plan.Reused {
		if err := w.PutStep(ctx, rec); err != nil {
			return fmt.Errorf("rerun %s: reuse step %q: %w", plan.OriginalRunID, rec.Name, err)
		}
	}
	return nil
}
