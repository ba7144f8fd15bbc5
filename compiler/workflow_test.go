package compiler

import (
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// TestWorkflowOf pins the rule that picks a pipeline's workflow type:
// the bound of a run from its Tasks' TimeoutSeconds (timeout_seconds × 3
// calls + 15 s, a verifier doubling the calls), retries and their
// backoff, fan-out waves, joins and the failure Tasks; and what keeps a
// pipeline from Express, each where it is written.
func TestWorkflowOf(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		want    pipeline.Workflow
		max     int    // the bound, when the pipeline has no wait
		because string // the first reason, when it cannot be Express
		line    int    // where that reason is
	}{
		{"short steps", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n  - {name: b, executor: scripted, timeout_seconds: 10}\n",
			pipeline.WorkflowExpress, 45 + 45 + 60, "", 0},
		{"a step without timeout_seconds", "steps:\n  - {name: a, executor: scripted}\n",
			pipeline.WorkflowStandard, 900 + 60, "a run may last 960 s", 1},
		{"retries with backoff", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10, retry: {attempts: 3, delay_seconds: 2}}\n",
			pipeline.WorkflowExpress, 3*45 + 2 + 4 + 60, "", 0},
		{"fixed backoff, continue", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10, on_failure: continue, retry: {attempts: 3, backoff: fixed, delay_seconds: 1.5}}\n",
			pipeline.WorkflowExpress, 3*45 + 2 + 2 + 60, "", 0},
		{"a verifier doubles the calls", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10, verifier: {executor: scripted}}\n",
			pipeline.WorkflowExpress, 75 + 60, "", 0},
		{"too long together", "steps:\n" + strings.Repeat("  - {name: s%, executor: scripted, timeout_seconds: 20}\n", 4),
			pipeline.WorkflowStandard, 4*75 + 60, "a run may last 360 s", 1},
		{"a parallel group", "steps:\n  - parallel: {name: g, steps: [{name: x, executor: scripted, timeout_seconds: 5}, {name: y, executor: scripted, timeout_seconds: 10}]}\n",
			pipeline.WorkflowExpress, 45 + 60 + 60, "", 0},
		{"a fan-out in waves", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 1}\n  - fan_out: {name: f, over: steps.a.items, executor: scripted, timeout_seconds: 1, max_items: 41}\n",
			pipeline.WorkflowExpress, 18 + 2*18 + 60 + 60, "", 0},
		{"a human step", "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n  - {name: ok, executor: human}\n",
			pipeline.WorkflowStandard, 0, `step "ok" is a human step`, 4},
		{"a sub-pipeline", "steps:\n  - {name: c, executor: pipeline, executor_config: {pipeline: p}}\n",
			pipeline.WorkflowStandard, 0, `step "c" runs a sub-pipeline`, 3},
		{"a human branch", "steps:\n  - parallel: {name: g, steps: [{name: x, executor: human}, {name: y, executor: scripted}]}\n",
			pipeline.WorkflowStandard, 0, `branch "x" of parallel "g" is a human step`, 3},
		{"a human check", "steps:\n  - name: a\n    executor: scripted\n    timeout_seconds: 10\n    deterministic_checks:\n      - {name: lead, type: human}\n",
			pipeline.WorkflowStandard, 0, `deterministic check "lead" is a human check`, 7},
		{"standard asked", "workflow: standard\nsteps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n",
			pipeline.WorkflowStandard, 45 + 60, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: p\n" + c.src
			for i := 0; strings.Contains(src, "s%"); i++ {
				src = strings.Replace(src, "s%", "s"+string(rune('a'+i)), 1)
			}
			f, ds := Load("p.yaml", []byte(src))
			if ds.HasErrors() {
				t.Fatal(ds)
			}
			d := WorkflowOf(f.Pipeline)
			if d.Type != c.want || d.MaxSeconds != c.max {
				t.Errorf("type %s, bound %d s, want %s, %d s (reasons %v)", d.Type, d.MaxSeconds, c.want, c.max, d.Reasons)
			}
			if c.because == "" {
				if !d.Express() {
					t.Errorf("reasons %v", d.Reasons)
				}
				return
			}
			if d.Express() || !strings.Contains(d.Reasons[0].Msg, c.because) || d.Reasons[0].Pos.Line != c.line {
				t.Errorf("reasons %v, want %q at line %d", d.Reasons, c.because, c.line)
			}
		})
	}
}

// TestWorkflowExpressIsChecked: workflow: express on a pipeline that
// cannot run as one is an error at each reason (the bound at the
// workflow: key); auto and standard never are.
func TestWorkflowExpressIsChecked(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{"name: p\nworkflow: express\nsteps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n  - {name: b, executor: human}\n  - {name: c, executor: pipeline, executor_config: {pipeline: p}}\n",
			[]string{
				`p.yaml:5:5: workflow: express (line 2): step "b" is a human step: Express workflows cannot wait for a task token`,
				`p.yaml:6:5: workflow: express (line 2): step "c" runs a sub-pipeline: Express workflows cannot run startExecution.sync`,
			}},
		{"name: p\nworkflow: express\nsteps:\n  - {name: a, executor: scripted}\n",
			[]string{`p.yaml:2:11: workflow: express: a run may last 960 s (its steps' timeouts and retries), more than the 270 s an Express workflow allows`}},
		{"name: p\nworkflow: express\nsteps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n", nil},
		{"name: p\nsteps:\n  - {name: b, executor: human}\n", nil},
		{"name: p\nworkflow: standard\nsteps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n", nil},
		{"name: p\nworkflow: sometimes\nsteps:\n  - {name: a, executor: scripted}\n", []string{`p.yaml:2:11: workflow "sometimes" is not one of auto, standard, express`}},
	}
	for _, c := range cases {
		_, ds := build(t, c.src)
		if len(ds) != len(c.want) {
			t.Errorf("%s: diagnostics %q, want %q", c.src, ds, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(ds[i], w) {
				t.Errorf("%s: diagnostic %q, want %q", c.src, ds[i], w)
			}
		}
	}
}

// TestExpressRecordsItsRun: an Express workflow's completed runs end
// through "Record run" (mode finish, the run's output), and its
// $pipeline says it is Express so the step function counts its ends; a
// Standard one has neither (its recorder hears of its end).
func TestExpressRecordsItsRun(t *testing.T) {
	steps := "steps:\n  - {name: a, executor: scripted, timeout_seconds: 10}\n  - {name: b, executor: scripted, timeout_seconds: 10, when: steps.a.confidence > 0.5}\n"
	for _, wf := range []pipeline.Workflow{pipeline.WorkflowExpress, pipeline.WorkflowStandard} {
		sm, _ := compileString(t, "name: p\nworkflow: "+string(wf)+"\n"+steps)
		rec, hasRecord := sm.States.Get(StateRecordRun)
		facts, _ := startAssign(sm, StateStart)["pipeline"].(map[string]any)
		b, _ := sm.States.Get("b")
		router, _ := sm.States.Get("Check b")
		if wf == pipeline.WorkflowStandard {
			if hasRecord || facts["workflow"] != nil || b.(*asl.Task).Next != StateCompleted || router.(*asl.Choice).Default != StateCompleted {
				t.Errorf("standard: record %v, workflow %v, b goes to %s", hasRecord, facts["workflow"], b.(*asl.Task).Next)
			}
			continue
		}
		if facts["workflow"] != "express" || b.(*asl.Task).Next != StateRecordRun || router.(*asl.Choice).Default != StateRecordRun {
			t.Fatalf("express: workflow %v, b goes to %s, Check b's default %s", facts["workflow"], b.(*asl.Task).Next, router.(*asl.Choice).Default)
		}
		tk := rec.(*asl.Task)
		payload := tk.Arguments.(map[string]any)["Payload"].(map[string]any)
		if payload["mode"] != task.ModeFinish || payload["final"] != "{% $last %}" || tk.Next != StateCompleted ||
			len(tk.Catch) != 1 || tk.Catch[0].Next != StateCompleted || tk.TimeoutSeconds != bookkeepingTimeoutSeconds {
			t.Errorf("Record run = %+v", tk)
		}
	}
}
