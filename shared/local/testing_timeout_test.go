package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/store"
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
