package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// TestTestingStageTimeoutApproves: a human step of a testing pipeline that
// nobody decides is approved when it times out (the reference runner's
// rule); in production the same timeout fails the step. Both for a
// sequential step and for a parallel branch.
func TestTestingStageTimeoutApproves(t *testing.T) {
	seq := "steps:\n  - {name: ok, executor: human, timeout_seconds: 1}\n  - {name: after, executor: scripted}\n"
	branch := "steps:\n  - parallel:\n      name: g\n      steps: [{name: ok, executor: human, timeout_seconds: 1}, {name: after, executor: scripted}]\n"
	cases := []struct {
		name, stage, steps string
		status             store.RunStatus
		ok                 string
	}{
		{"sequential, testing", "testing", seq, store.RunCompleted, "completed 1"},
		{"sequential, production", "production", seq, store.RunFailed, "failed 0"},
		{"branch, testing", "testing", branch, store.RunCompleted, "completed 1"},
		{"branch, production", "production", branch, store.RunEscalated, "failed 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, "name: p\nstage: "+c.stage+"\n"+c.steps)
			r := openNotifying(t, dir)
			o, err := r.Run(ctx, path, json.RawMessage(`{}`), "")
			if err != nil || o.Status != store.RunWaiting || len(o.Waiting) != 1 {
				t.Fatalf("start: %+v, %v", o, err)
			}
			expiry := o.Waiting[0].ExpiresAt
			time.Sleep(time.Until(expiry) + 50*time.Millisecond)
			if _, _, err := r.ExpireApprovals(ctx); err != nil {
				t.Fatal(err)
			}
			run, steps, _ := r.Store.GetRunWithSteps(ctx, o.RunID)
			if run.Status != c.status {
				t.Fatalf("run %s (%s), want %s", run.Status, run.Reason, c.status)
			}
			var name string
			for n := range finals(steps) {
				if n == "ok" || strings.HasSuffix(n, "/ok") {
					name = n
				}
			}
			if got := finals(steps)[name]; got != c.ok {
				t.Errorf("human step %q: %q, want %q (steps %v)", name, got, c.ok, finals(steps))
			}
			if c.stage == "testing" {
				for _, s := range steps {
					if s.Name == name && !strings.Contains(string(s.Output), compiler.TimeoutApprover) {
						t.Errorf("output %s does not say who approved", s.Output)
					}
				}
			}
		})
	}
}

// TestTestingStageTimeoutFirstOnly: in a testing pipeline, a human step
// with retry: is approved at its first timeout, without asking again (the
// reference runner's human executor approves there; nothing failed to
// retry), and a human deterministic check nobody decides passes, as the
// reference's human checks share its human steps' testing behaviour. In
// production the check's timeout fails it, zeroing the step's trust.
func TestTestingStageTimeoutFirstOnly(t *testing.T) {
	cases := []struct {
		name, stage, steps string
		status             store.RunStatus
		approvals          int // approvals asked for before the run ended
		ok                 string
	}{
		{"retried human step, testing", "testing",
			"steps:\n  - {name: ok, executor: human, timeout_seconds: 1, retry: {attempts: 3, delay_seconds: 1}}\n", store.RunCompleted, 1, "completed 1"},
		{"human check, testing", "testing",
			"steps:\n  - {name: ok, executor: scripted, deterministic_checks: [{name: signoff, type: human, timeout_seconds: 1}]}\n", store.RunCompleted, 1, "completed 0.9"},
		{"human check, production", "production",
			"steps:\n  - {name: ok, executor: scripted, deterministic_checks: [{name: signoff, type: human, timeout_seconds: 1}]}\n", store.RunEscalated, 1, "escalated 0.9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, "name: p\nstage: "+c.stage+"\n"+c.steps)
			replies, err := executor.ParseResponses("r.yaml", []byte("ok: ["+reply(0.9, "ok done", "")+"]\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(ctx, Config{Dir: filepath.Join(dir, "state"), Handler: func(st *sqlite.Store) StepHandler {
				return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			o, err := r.Run(ctx, path, json.RawMessage(`{}`), "")
			asked := 0
			for o.Status == store.RunWaiting && err == nil && asked < 5 {
				if len(o.Waiting) != 1 {
					t.Fatalf("waiting on %d approvals", len(o.Waiting))
				}
				asked++
				time.Sleep(time.Until(o.Waiting[0].ExpiresAt) + 50*time.Millisecond)
				if _, _, err = r.ExpireApprovals(ctx); err != nil {
					t.Fatal(err)
				}
				run, _ := r.Store.GetRun(ctx, o.RunID)
				o.Status = run.Status
				if run.Status == store.RunWaiting {
					as, _ := r.Store.RunApprovals(ctx, o.RunID)
					o.Waiting = nil
					for _, a := range as {
						if a.Decision == store.DecisionPending {
							o.Waiting = append(o.Waiting, a)
						}
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			run, steps, _ := r.Store.GetRunWithSteps(ctx, o.RunID)
			if run.Status != c.status {
				t.Fatalf("run %s (%s), want %s", run.Status, run.Reason, c.status)
			}
			if asked != c.approvals {
				t.Errorf("asked for approval %d times, want %d", asked, c.approvals)
			}
			if got := finals(steps)["ok"]; got != c.ok {
				t.Errorf("step ok: %q, want %q (all %v)", got, c.ok, finals(steps))
			}
		})
	}
}

// TestTestingStageTimeoutApprovesItem: a fan-out item of a human fan-out
// nobody decides is approved at its timeout in a testing pipeline (as a
// branch is) and fails in production.
func TestTestingStageTimeoutApprovesItem(t *testing.T) {
	steps := "steps:\n  - fan_out: {name: f, over: '[\"x\"]', executor: human, timeout_seconds: 1}\n  - {name: after, executor: scripted}\n"
	for _, c := range []struct {
		stage  string
		status store.RunStatus
		item   string
	}{{"testing", store.RunCompleted, "completed 1"}, {"production", store.RunEscalated, "failed 0"}} {
		t.Run(c.stage, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			writeText(t, path, "name: p\nstage: "+c.stage+"\n"+steps)
			r := openNotifying(t, dir)
			o, err := r.Run(ctx, path, json.RawMessage(`{}`), "")
			if err != nil || o.Status != store.RunWaiting || len(o.Waiting) != 1 || o.Waiting[0].Step != "f/0" {
				t.Fatalf("start: %+v, %v", o, err)
			}
			time.Sleep(time.Until(o.Waiting[0].ExpiresAt) + 50*time.Millisecond)
			if _, _, err := r.ExpireApprovals(ctx); err != nil {
				t.Fatal(err)
			}
			run, steps, _ := r.Store.GetRunWithSteps(ctx, o.RunID)
			if run.Status != c.status {
				t.Fatalf("run %s (%s), want %s", run.Status, run.Reason, c.status)
			}
			if got := finals(steps)["f/0"]; got != c.item {
				t.Errorf("item f/0: %q, want %q (steps %v)", got, c.item, finals(steps))
			}
		})
	}
}
