package local

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/rerun"
	"github.com/stepline/stepline/shared/store"
)

const rerunPipeline = `name: p
steps:
  - {name: a, executor: scripted, prompt_template: "first step"}
  - parallel:
      name: g
      steps:
        - {name: b1, executor: scripted, prompt_template: "b1"}
        - {name: b2, executor: scripted, prompt_template: "b2"}
  - {name: c, executor: scripted, prompt_template: "a said {{ steps.a.summary }}; b1 said {{ steps.b1.summary }}"}
  - {name: d, executor: scripted, when: "steps.c.confidence > 0.5", prompt_template: "d"}
`

// TestRerun runs p, then reruns it from c: a and the group are not run
// again (their scripted second replies stay unused) but their records are
// copied, flagged reused, and c's prompt reads their outputs; c and d run.
func TestRerun(t *testing.T) {
	responses := "a: [" + reply(0.9, "a first", "") + ", " + reply(0.9, "a second", "") + "]\n" +
		"b1: [" + reply(0.9, "b1 first", "") + ", " + reply(0.9, "b1 second", "") + "]\n" +
		"b2: [" + reply(0.8, "b2 first", "") + ", " + reply(0.8, "b2 second", "") + "]\n" +
		"c: [" + reply(0.9, "c first", "") + ", " + reply(0.9, "c second", "") + "]\n" +
		"d: [" + reply(0.9, "d first", "") + ", " + reply(0.9, "d second", "") + "]\n"
	r, dir, _ := openScenario(t, map[string]string{"p.yaml": rerunPipeline}, responses)
	ctx := context.Background()
	path := filepath.Join(dir, "p.yaml")
	first, err := r.Run(ctx, path, json.RawMessage(`{"source": "generic", "team": "sre", "fingerprint": "fp1", "labels": {"k": "v"}}`), "")
	if err != nil || first.Status != store.RunCompleted {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	sm, name, _, err := r.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := intake.LoadPipelinesIn(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]

	plan, err := r.PrepareRerun(ctx, p, first.RunID, "c", "rerun-1")
	if err != nil {
		t.Fatal(err)
	}
	if plan.FromStep != "c" || plan.OriginalRunID != first.RunID || len(plan.Reused) != 4 {
		t.Fatalf("plan %+v", plan)
	}
	o, err := r.StartRerun(ctx, sm, name, plan)
	if err != nil || o.Status != store.RunCompleted || o.RunID != "rerun-1" {
		t.Fatalf("rerun: %+v, %v", o, err)
	}
	run, steps, err := r.Store.GetRunWithSteps(ctx, "rerun-1")
	if err != nil {
		t.Fatal(err)
	}
	var trig map[string]any
	_ = json.Unmarshal(run.Trigger, &trig)
	md, _ := trig["metadata"].(map[string]any)
	if run.Source != rerun.SourceRerun || run.Team != "sre" || run.Fingerprint != "" || run.Status != store.RunCompleted ||
		md["original_run_id"] != first.RunID || md["from_step"] != "c" || trig["labels"].(map[string]any)["k"] != "v" {
		t.Errorf("rerun record %+v, trigger %s", run, run.Trigger)
	}
	orig, err := r.Store.ListSteps(ctx, first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]store.StepRecord{}
	for _, s := range orig {
		byName[s.Name] = s
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
		reused := slices.Contains(s.Flags, store.FlagReused)
		switch s.Name {
		case "a", "g", "g/b1", "g/b2":
			if !reused || string(s.Output) != string(byName[s.Name].Output) || s.Attempt != 1 || s.InputTokens != 0 || s.CostUSD != nil {
				t.Errorf("step %s: reused=%v output %s, want the first run's %s", s.Name, reused, s.Output, byName[s.Name].Output)
			}
		case "c":
			if reused || !strings.Contains(string(s.Output), "c second") || !strings.Contains(s.Prompt, "a said a first; b1 said b1 first") {
				t.Errorf("step c ran with prompt %q, output %s", s.Prompt, s.Output)
			}
		case "d":
			if reused || !strings.Contains(string(s.Output), "d second") {
				t.Errorf("step d: %s", s.Output)
			}
		}
	}
	var origNames []string
	for _, s := range orig {
		origNames = append(origNames, s.Name)
	}
	slices.Sort(names)
	slices.Sort(origNames)
	if strings.Join(names, ",") != strings.Join(origNames, ",") || len(names) != 6 {
		t.Errorf("rerun records %v, want the first run's %v", names, origNames)
	}

	// From the first step: nothing reused, everything runs again.
	plan, err = r.PrepareRerun(ctx, p, first.RunID, "", "rerun-2")
	if err != nil || plan.FromStep != "a" || len(plan.Reused) != 0 {
		t.Fatalf("plan from the start: %+v, %v", plan, err)
	}
}

func TestRerunErrors(t *testing.T) {
	r, dir, _ := openScenario(t, map[string]string{"p.yaml": rerunPipeline},
		"a: ["+reply(0.9, "a", "")+"]\nb1: ["+reply(0.9, "b1", "")+"]\nb2: ["+reply(0.9, "b2", "")+"]\nc: ["+reply(0.9, "c", "")+"]\nd: ["+reply(0.9, "d", "")+"]\n")
	ctx := context.Background()
	first, err := r.Run(ctx, filepath.Join(dir, "p.yaml"), json.RawMessage(`{}`), "")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := intake.LoadPipelinesIn(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, run, from string
		want            error
		status          int
		msg             string
	}{
		{"unknown run", "nope", "c", store.ErrNotFound, 404, ""},
		{"unknown step", first.RunID, "zz", rerun.ErrUnknownStep, 422, `pipeline "p" has no step "zz" (its sequential steps: a, c, d)`},
		{"a group", first.RunID, "g", rerun.ErrUnknownStep, 422, `"g" is a group of pipeline "p", not a sequential step`},
		{"a branch", first.RunID, "b1", rerun.ErrUnknownStep, 422, `"b1" is a branch of parallel "g", not a sequential step`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.PrepareRerun(ctx, ps[0], tt.run, tt.from, "")
			if !errors.Is(err, tt.want) || rerun.HTTPStatus(err) != tt.status || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v (status %d), want %v %d %q", err, rerun.HTTPStatus(err), tt.want, tt.status, tt.msg)
			}
		})
	}
	// An active run is not rerun.
	if err := r.Store.CreateRun(ctx, store.Run{ID: "busy", Pipeline: "p", Status: store.RunWaiting, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepareRerun(ctx, ps[0], "busy", "c", ""); !errors.Is(err, rerun.ErrActive) || rerun.HTTPStatus(err) != 409 {
		t.Fatalf("rerun of a waiting run: %v", err)
	}
}

// TestRerunMachineRefusesUnknownStep: the state machine itself ends a
// rerun whose from_step is no sequential step in its Fail state.
func TestRerunMachineRefusesUnknownStep(t *testing.T) {
	r, dir, _ := openScenario(t, map[string]string{"p.yaml": rerunPipeline}, "a: ["+reply(0.9, "a", "")+"]\n")
	ctx := context.Background()
	sm, name, _, err := r.Compile(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"trigger": {}, "rerun": {"from_step": "g", "original_run_id": "x", "steps": {}, "items": {}}}`)
	o, err := r.Start(ctx, sm, name, nil, "bad-rerun", func(o *runOptions) { o.input = in })
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != store.RunFailed || !strings.Contains(o.Reason, "from_step g is not a sequential step") {
		t.Fatalf("outcome %+v", o)
	}
}
