package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/store"
)

// A human step waits for its decision at most its timeout_seconds: the
// approval expires then (store.Approval.ExpiresAt), and the engine has
// recorded the same deadline for the step's task token, a moment earlier.
// No process drives a waiting run, so nothing would notice the deadline
// pass; ExpireApprovals and Expire drive such runs on once their approval
// expired, and the engine, finding the deadline past, times the step out
// (States.Timeout): the step then fails under its on_failure policy
// (abort: the run fails and the pipeline's escalate notifications go out;
// continue: the run goes on), as on Step Functions. `stepline serve` calls
// ExpireApprovals every ApprovalPoll and at each expiry, an attached
// `stepline run` calls Expire when the approval it asks for on the
// terminal expires, and every `run` and `serve` calls ExpireApprovals as
// it starts, for the approvals that expired while no process ran.

// ExpireApprovals drives on every waiting run whose pending approval
// expired at or before now (see Expire), and returns their outcomes and
// the earliest expiry still to come (zero when no approval is pending). A
// run another process drives is left to it. A run that cannot go on —
// its definition changed or is gone, its scripted replies cannot be read —
// is marked interrupted with the reason, so it is not tried again.
func (r *Runner) ExpireApprovals(ctx context.Context) ([]Outcome, time.Time, error) {
	pending, err := r.Store.PendingApprovals(ctx, 0)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("expire approvals: %w", err)
	}
	now := r.now()
	var out []Outcome
	var errs []error
	seen := map[string]bool{}
	for _, a := range pending {
		if a.ExpiresAt.After(now) {
			return out, a.ExpiresAt, errors.Join(errs...) // the rest expire later
		}
		if seen[a.RunID] || r.isStuck(a.RunID) {
			continue
		}
		seen[a.RunID] = true
		o, fired, err := r.expire(ctx, a)
		switch {
		case err != nil:
			errs = append(errs, err)
		case fired:
			out = append(out, o)
		}
	}
	return out, time.Time{}, errors.Join(errs...)
}

// Expire drives runID on when one of its pending approvals expired at or
// before now, so that the engine times its human step out; fired is false
// (and nothing done) when none has, or when another process drives the
// run.
func (r *Runner) Expire(ctx context.Context, runID string) (o Outcome, fired bool, err error) {
	approvals, err := r.Store.RunApprovals(ctx, runID)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("expire approvals of run %s: %w", runID, err)
	}
	now := r.now()
	for _, a := range approvals {
		if a.Decision == store.DecisionPending && !a.ExpiresAt.After(now) {
			return r.expire(ctx, a)
		}
	}
	return Outcome{}, false, nil
}

// expire drives on the run of an expired approval.
func (r *Runner) expire(ctx context.Context, a store.Approval) (Outcome, bool, error) {
	o, err := r.Resume(ctx, a.RunID)
	if err == nil {
		r.metrics.ApprovalDecided(a.Pipeline, "expired")
		return o, true, nil
	}
	var driven *DrivenError
	if errors.As(err, &driven) || ctx.Err() != nil {
		return Outcome{}, false, nil
	}
	var replies *RepliesError
	if !errors.As(err, &replies) && !errors.Is(err, engine.ErrDefinitionChanged) && !errors.Is(err, os.ErrNotExist) {
		r.markStuck(a.RunID)
		return Outcome{}, false, fmt.Errorf("step %q of run %s timed out and the run could not go on: %w", a.Step, a.RunID, err)
	}
	reason := fmt.Sprintf("interrupted: step %q timed out waiting for approval and the run cannot go on: %v", a.Step, err)
	now := r.now().UTC()
	if uerr := r.Store.UpdateRun(ctx, a.RunID, store.RunUpdate{Status: store.RunInterrupted, Reason: reason, CompletedAt: &now}); uerr != nil {
		r.markStuck(a.RunID)
		return Outcome{}, false, fmt.Errorf("step %q of run %s timed out: %w", a.Step, a.RunID, errors.Join(err, uerr))
	}
	return Outcome{RunID: a.RunID, Pipeline: a.Pipeline, Status: store.RunInterrupted, Reason: reason}, true, nil
}

// markStuck and isStuck keep a run whose expiry failed for a reason that
// may pass from being tried again by this Runner at every poll.
func (r *Runner) markStuck(runID string) {
	r.expireMu.Lock()
	r.stuck[runID] = true
	r.expireMu.Unlock()
}

func (r *Runner) isStuck(runID string) bool {
	r.expireMu.Lock()
	defer r.expireMu.Unlock()
	return r.stuck[runID]
}
