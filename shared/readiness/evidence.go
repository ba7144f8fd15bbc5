package readiness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// Source is what Gather reads of a store. store.Store satisfies it.
type Source interface {
	// ListRuns returns run summaries, newest first (store.Store.ListRuns).
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error)
	// ListSteps returns a run's step records in execution order.
	ListSteps(ctx context.Context, runID string) ([]store.StepRecord, error)
}

// Feedback is what Gather reads of the feedback people gave runs and
// steps (store.FeedbackStore). A Source that does not implement it
// leaves every result unmarked but by failed deterministic checks.
type Feedback interface {
	// GetRunFeedback returns the run's feedback, nil when it has none.
	GetRunFeedback(ctx context.Context, runID string) (*store.Feedback, error)
	// GetStepFeedback returns a step's feedback, nil when it has none.
	GetStepFeedback(ctx context.Context, runID, step string) (*store.Feedback, error)
}

var (
	_ Source   = (store.Store)(nil)
	_ Feedback = (store.Store)(nil)
)

// Kinds of Unit.
const (
	KindStep     = "step"
	KindParallel = "parallel"
	KindFanOut   = "fan_out"
)

// Unit is what a tier is judged on: a top-level step, parallel group or
// fan-out of the pipeline.
type Unit struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Executor string `json:"executor,omitempty"` // "" for a parallel group
	// Judged: its answers carry a confidence of their own
	// (pipeline.Judged), which the confidence, accuracy and calibration
	// tiers judge.
	Judged bool `json:"judged"`
}

// Units lists the units of a pipeline, in order.
func Units(p *pipeline.Pipeline) []Unit {
	var out []Unit
	for _, n := range p.Steps {
		u := Unit{Name: n.NodeName(), Judged: pipeline.Judged(n)}
		switch n := n.(type) {
		case *pipeline.Step:
			u.Kind, u.Executor = KindStep, n.Executor
		case *pipeline.Parallel:
			u.Kind = KindParallel
		case *pipeline.FanOut:
			u.Kind, u.Executor = KindFanOut, n.Executor
		}
		out = append(out, u)
	}
	return out
}

// Result is a unit's outcome in one run: its last recorded attempt.
type Result struct {
	RunID  string           `json:"run_id"`
	Config string           `json:"config,omitempty"` // the run's config fingerprint
	At     time.Time        `json:"at"`               // when the attempt finished
	Status store.StepStatus `json:"status"`
	// Confidence is the effective confidence (the trust report's
	// S_after_V, else the record's effective confidence); nil when the
	// result has none (a failed step).
	Confidence *float64 `json:"confidence,omitempty"`
	// DeterministicFailed: a deterministic check of the step failed.
	DeterministicFailed bool `json:"deterministic_failed,omitempty"`
	// StepFeedback and RunFeedback are the outcomes people gave the step
	// and its run ("" for none).
	StepFeedback store.Outcome `json:"step_feedback,omitempty"`
	RunFeedback  store.Outcome `json:"run_feedback,omitempty"`
}

// Label is the result's label and its source, by precedence (see
// store.Sample.Label): step feedback, a failed deterministic check, run
// feedback. ok is false for an unmarked result.
func (r Result) Label() (label float64, source string, ok bool) {
	return store.Sample{DeterministicFailed: r.DeterministicFailed, StepFeedback: r.StepFeedback, RunFeedback: r.RunFeedback}.Label()
}

// Evidence is what Gather read: the inputs of Evaluate.
type Evidence struct {
	Pipeline string `json:"pipeline"`
	Stage    string `json:"stage"`
	// Config is the fingerprint of the pipeline's current compiled
	// definition ("" when unknown: no run is then current).
	Config string `json:"config,omitempty"`
	Units  []Unit `json:"units"`
	// Runs counts the ended runs of the pipeline at its stage that were
	// read; Truncated says the read returned as many runs as one read
	// returns (store.MaxRunLimit, newest first), so older ones may have
	// been left out.
	Runs      int  `json:"runs"`
	Truncated bool `json:"truncated,omitempty"`
	// Feedback says whether the store keeps feedback. Without it only
	// failed deterministic checks mark results.
	Feedback bool `json:"feedback"`
	// Results holds each unit's results by unit name, newest run first.
	Results map[string][]Result `json:"results"`
}

// Gather reads the evidence for pipeline p, whose current compiled
// definition has fingerprint config (compiler.ConfigOf). Feedback is read
// only when the accuracy or calibration tier is configured.
func Gather(ctx context.Context, src Source, p *pipeline.Pipeline, config string) (Evidence, error) {
	stage := string(p.Stage)
	if stage != store.StageProduction {
		stage = store.StageTesting
	}
	e := Evidence{Pipeline: p.Name, Stage: stage, Config: config, Units: Units(p), Results: map[string][]Result{}}
	fb, hasFeedback := src.(Feedback)
	wantLabels := p.Readiness != nil && (p.Readiness.Accuracy != nil || p.Readiness.Calibration != nil)
	e.Feedback = hasFeedback
	runs, err := src.ListRuns(ctx, store.RunFilter{Pipeline: p.Name, Limit: store.MaxRunLimit})
	if err != nil {
		return Evidence{}, fmt.Errorf("readiness of %q: %w", p.Name, err)
	}
	e.Truncated = len(runs) >= store.MaxRunLimit
	units := map[string]bool{}
	for _, u := range e.Units {
		units[u.Name] = true
	}
	for _, run := range runs {
		runStage := run.Stage
		if runStage != store.StageProduction {
			runStage = store.StageTesting
		}
		if runStage != stage || !run.Status.Terminal() {
			continue
		}
		e.Runs++
		recs, err := src.ListSteps(ctx, run.ID)
		if err != nil {
			return Evidence{}, fmt.Errorf("readiness of %q: run %s: %w", p.Name, run.ID, err)
		}
		last := map[string]store.StepRecord{}
		for _, rec := range recs {
			// A rerun's reused records are the earlier run's results,
			// counted with that run already.
			if !units[rec.Name] || !finished(rec.Status) || slices.Contains(rec.Flags, store.FlagReused) {
				continue
			}
			if prev, ok := last[rec.Name]; !ok || rec.Attempt > prev.Attempt {
				last[rec.Name] = rec
			}
		}
		var runFeedback store.Outcome
		if wantLabels && hasFeedback && len(last) > 0 {
			f, err := fb.GetRunFeedback(ctx, run.ID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return Evidence{}, fmt.Errorf("readiness of %q: feedback of run %s: %w", p.Name, run.ID, err)
			}
			if f != nil {
				runFeedback = f.Outcome
			}
		}
		for _, u := range e.Units {
			rec, ok := last[u.Name]
			if !ok {
				continue
			}
			r := resultOf(run, rec)
			r.RunFeedback = runFeedback
			if wantLabels && hasFeedback {
				f, err := fb.GetStepFeedback(ctx, run.ID, u.Name)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return Evidence{}, fmt.Errorf("readiness of %q: feedback of step %q of run %s: %w", p.Name, u.Name, run.ID, err)
				}
				if f != nil {
					r.StepFeedback = f.Outcome
				}
			}
			e.Results[u.Name] = append(e.Results[u.Name], r)
		}
	}
	return e, nil
}

// finished reports whether a step status is an outcome: not skipped,
// running or waiting.
func finished(s store.StepStatus) bool {
	switch s {
	case store.StepCompleted, store.StepStopped, store.StepEscalated, store.StepAborted, store.StepFailed:
		return true
	}
	return false
}

// resultOf reads a unit's result from its last record in run.
func resultOf(run store.Run, rec store.StepRecord) Result {
	r := Result{RunID: run.ID, Config: run.ConfigFingerprint, At: rec.FinishedAt, Status: rec.Status}
	if r.At.IsZero() {
		r.At = run.StartedAt
	}
	if rec.Status != store.StepFailed {
		switch {
		case rec.Trust != nil:
			c := rec.Trust.Signals.SAfterV
			r.Confidence = &c
		case rec.EffectiveConfidence != nil:
			c := *rec.EffectiveConfidence
			r.Confidence = &c
		}
	}
	if rec.Trust != nil && rec.Trust.Signals.D != nil && !*rec.Trust.Signals.D {
		r.DeterministicFailed = true
	}
	return r
}
