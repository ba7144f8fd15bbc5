package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// TestDecisionSentAgain: a decision recorded whose continuation failed
// (here the run's definition could not be loaded) leaves the run waiting
// for it; the next decision of that step sends the recorded one again and
// the run goes on with it. Asked the other way, the run still goes on
// with the recorded decision, and the error says so. A step whose run
// went on is not decided again.
func TestDecisionSentAgain(t *testing.T) {
	for _, again := range []string{task.Approve, task.Reject} {
		t.Run(again, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, "name: p\nsteps:\n  - {name: ok, executor: human}\n  - {name: b, executor: scripted}\n")
			replies := filepath.Join(dir, "replies.yaml")
			writeText(t, replies, "b: ["+reply(0.9, "b done", "")+"]\n")
			o, err := openScripted(t, dir).Run(ctx, path, json.RawMessage(`{}`), "", WithResponses(replies))
			if err != nil || o.Status != store.RunWaiting {
				t.Fatalf("start: %+v, %v", o, err)
			}

			// The definitions are gone: the decision is recorded, the
			// continuation fails.
			defs := filepath.Join(dir, "state", "definitions")
			kept := filepath.Join(dir, "kept")
			if err := os.Rename(defs, kept); err != nil {
				t.Fatal(err)
			}
			r := openScripted(t, dir)
			if _, err := r.Decide(ctx, o.RunID, "ok", task.Approve, "first"); err == nil {
				t.Fatal("decided without a definition")
			}
			approvals, _ := r.Store.RunApprovals(ctx, o.RunID)
			if len(approvals) != 1 || approvals[0].Decision != store.DecisionApproved || approvals[0].DecidedBy != "first" {
				t.Fatalf("approvals after the failed continuation: %+v", approvals)
			}
			if run, _ := r.Store.GetRun(ctx, o.RunID); run.Status != store.RunWaiting {
				t.Fatalf("run %s after the failed continuation, want waiting", run.Status)
			}

			// Back: the next decision sends the recorded one.
			if err := os.RemoveAll(defs); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(kept, defs); err != nil {
				t.Fatal(err)
			}
			r = openScripted(t, dir)
			o2, err := r.Decide(ctx, o.RunID, "ok", again, "second")
			if again == task.Approve && err != nil {
				t.Fatalf("approve again: %v", err)
			}
			if again == task.Reject && !errors.Is(err, ErrDecided) {
				t.Fatalf("reject after approved: %v, want ErrDecided", err)
			}
			if o2.Status != store.RunCompleted {
				t.Fatalf("run after the decision sent again: %+v", o2)
			}
			steps, _ := r.Store.ListSteps(ctx, o.RunID)
			if got := finals(steps); got["ok"] != "completed 1" || got["b"] != "completed 0.9" {
				t.Errorf("steps %v", got)
			}
			if approvals, _ = r.Store.RunApprovals(ctx, o.RunID); approvals[0].DecidedBy != "first" {
				t.Errorf("the record changed: %+v", approvals[0])
			}

			// Its run went on: nothing is sent a third time.
			if _, err := r.Decide(ctx, o.RunID, "ok", task.Approve, "third"); !errors.Is(err, ErrNoApproval) {
				t.Fatalf("a third decision: %v, want ErrNoApproval", err)
			}
		})
	}
}
