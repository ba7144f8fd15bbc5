package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// TestRunEnds: a run in which no step completed — its only step skipped
// by when:, or its only steps failed under on_failure: continue — ends
// completed with no final output (the last completed step's output, of
// which there is none), as does one whose steps all completed or
// skipped; a failure after a success leaves that success as the output.
func TestRunEnds(t *testing.T) {
	cases := []struct {
		name      string
		pipeline  string
		responses string
		output    string // the run's final output: "" none, else a substring
		steps     map[string]string
	}{
		{
			name:     "only step skipped",
			pipeline: "name: p\nvars: {mode: dry}\nsteps:\n  - {name: a, executor: scripted, when: 'vars.mode == \"live\"'}\n",
			steps:    map[string]string{},
		},
		{
			name:      "every step skipped after the first",
			pipeline:  "name: p\nvars: {mode: dry}\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, when: 'vars.mode == \"live\"'}\n",
			responses: "a: [" + reply(0.9, "first", "") + "]\n",
			output:    `"summary":"first"`,
			steps:     map[string]string{"a": "completed 0.9"},
		},
		{
			name:      "only step failed and continued",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: continue, retry: {attempts: 2, delay_seconds: 1}}\n",
			responses: "a: [{error: http 503}, {error: timeout}]\n",
			steps:     map[string]string{"a": "failed 0"},
		},
		{
			name:      "every step failed and continued",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: continue}\n  - {name: b, executor: scripted, on_failure: continue}\n",
			responses: "a: [{error: http 500}]\nb: [{error: http 500}]\n",
			steps:     map[string]string{"a": "failed 0", "b": "failed 0"},
		},
		{
			name:      "last step failed after a success",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted, on_failure: continue}\n",
			responses: "a: [" + reply(0.9, "kept", "") + "]\nb: [{error: http 500}]\n",
			output:    `"summary":"kept"`,
			steps:     map[string]string{"a": "completed 0.9", "b": "failed 0"},
		},
		{
			name:      "skipped after a failure",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: continue}\n  - {name: b, executor: scripted, when: 'steps.a.confidence > 0.5'}\n",
			responses: "a: [{error: http 500}]\n",
			steps:     map[string]string{"a": "failed 0"},
		},
		{
			name:      "empty fan-out after a failure",
			pipeline:  "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: continue}\n  - fan_out: {name: f, over: '[]', executor: scripted}\n",
			responses: "a: [{error: http 500}]\n",
			output:    `"summary":"No items"`,
			steps:     map[string]string{"a": "failed 0", "f": "completed 1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, steps := runToEnd(t, c.pipeline, c.responses)
			if o.Status != store.RunCompleted {
				t.Fatalf("status %q (%s), want completed", o.Status, o.Reason)
			}
			if o.Reason != "" {
				t.Errorf("reason %q, want none", o.Reason)
			}
			out := string(o.Output)
			switch {
			case c.output == "" && out != "" && out != "null":
				t.Errorf("output %s, want none", out)
			case c.output != "" && !strings.Contains(out, c.output):
				t.Errorf("output %s, want one with %s", out, c.output)
			}
			got := finals(steps)
			for name, want := range c.steps {
				if got[name] != want {
					t.Errorf("step %q: %q, want %q (all %v)", name, got[name], want, got)
				}
			}
			if len(got) != len(c.steps) {
				t.Errorf("steps %v, want %v", got, c.steps)
			}
		})
	}
}

// runToEnd is runScenario for runs that may end before any Task ran: the
// step handler creates the run's record on first contact, so a run whose
// every step was skipped has none locally (on AWS the recorder creates it
// when the execution ends). The record's status is checked when there is
// one.
func runToEnd(t *testing.T, pipelineYAML, responsesYAML string) (Outcome, []store.StepRecord) {
	t.Helper()
	r, dir, _ := openScenario(t, map[string]string{"p.yaml": pipelineYAML}, responsesYAML)
	ctx := context.Background()
	o, err := r.Run(ctx, filepath.Join(dir, "p.yaml"), json.RawMessage(`{"source": "test"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := r.Store.ListSteps(ctx, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.Store.GetRun(ctx, o.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound) && len(steps) == 0:
	case err != nil:
		t.Fatal(err)
	case run.Status != o.Status:
		t.Errorf("stored run status %q, outcome %q", run.Status, o.Status)
	}
	return o, steps
}

// openScenario writes the pipeline files (name → YAML) to a temporary
// directory and opens a runner over it (state in <dir>/state) with the
// scripted replies. It returns the directory.
func openScenario(t *testing.T, files map[string]string, responsesYAML string) (*Runner, string, *executor.Responses) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(responsesYAML))
	if err != nil {
		t.Fatal(err)
	}
	return reopen(t, dir, responses), dir, responses
}

// reopen opens another runner over the state of dir, as another process
// would.
func reopen(t *testing.T, dir string, responses *executor.Responses) *Runner {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	r, err := Open(context.Background(), Config{
		Dir:   filepath.Join(dir, "state"),
		Clock: clock,
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses})}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestFanOutEmptyAbortFails: a fan-out over no items with on_empty: abort
// ends the run failed, as the reference runner's does, and fires the
// escalate notification rather than the fan-out's on_abort action.
func TestFanOutEmptyAbortFails(t *testing.T) {
	p := "name: p\nsteps:\n  - fan_out: {name: f, over: '[]', on_empty: abort, on_abort: rejected, executor: scripted}\n  - {name: b, executor: scripted}\n"
	o, steps := runToEnd(t, p, "b: ["+reply(0.9, "must not run", "")+"]\n")
	if o.Status != store.RunFailed {
		t.Fatalf("status %q (%s), want failed", o.Status, o.Reason)
	}
	if !strings.Contains(o.Reason, `fan-out "f" has no items (on_empty: abort)`) {
		t.Errorf("reason %q", o.Reason)
	}
	if got := finals(steps); got["f"] != "failed 0" || len(got) != 1 {
		t.Errorf("steps %v, want only f failed 0", got)
	}
}
