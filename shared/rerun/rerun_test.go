package rerun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

type fakeReader struct {
	run   store.Run
	steps []store.StepRecord
}

func (f fakeReader) GetRunWithSteps(_ context.Context, id string) (store.Run, []store.StepRecord, error) {
	if id != f.run.ID {
		return store.Run{}, nil, store.ErrNotFound
	}
	return f.run, f.steps, nil
}

func rec(name string, attempt int, status store.StepStatus, out string) store.StepRecord {
	return store.StepRecord{RunID: "r1", Name: name, Attempt: attempt, Status: status, Output: json.RawMessage(out),
		InputTokens: 10, Flags: []string{"x"}}
}

var testPipeline = &pipeline.Pipeline{Name: "p", Steps: []pipeline.Node{
	&pipeline.Step{Name: "a"},
	&pipeline.Parallel{Name: "g", Branches: []*pipeline.Branch{{Name: "b1"}, {Name: "b2"}}},
	&pipeline.FanOut{Name: "f"},
	&pipeline.Step{Name: "c"},
	&pipeline.Step{Name: "d"},
}}

func TestPrepare(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := fakeReader{
		run: store.Run{ID: "r1", Pipeline: "p", Status: store.RunFailed, Stage: store.StageProduction, Team: "sre", Fingerprint: "fp",
			Trigger: json.RawMessage(`{"source": "alertmanager", "fingerprint": "fp", "metadata": {"k": 1}}`)},
		steps: []store.StepRecord{
			rec("a", 1, store.StepFailed, `{"v":"a1"}`), rec("a", 2, store.StepCompleted, `{"v":"a2"}`),
			rec("g/b1", 1, store.StepCompleted, `{"v":"b1"}`), rec("g", 1, store.StepCompleted, `{"v":"g"}`),
			// b2 has no record (lost); f has items.
			rec("f/0", 1, store.StepCompleted, `{"v":"f0"}`), rec("f/1", 1, store.StepCompleted, `{"v":"f1"}`),
			rec("f", 1, store.StepCompleted, `{"v":"f"}`),
			rec("c", 1, store.StepWaiting, `{"v":"c"}`), // not an outcome
		},
	}
	plan, err := Prepare(context.Background(), r, testPipeline, "r1", "d", "new", now)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Trigger map[string]any `json:"trigger"`
		Rerun   Block          `json:"rerun"`
	}
	if err := json.Unmarshal(plan.Input, &in); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range in.Rerun.Steps {
		got[k] = string(v)
	}
	want := map[string]string{"a": `{"v":"a2"}`, "g": `{"v":"g"}`, "b1": `{"v":"b1"}`, "f": `{"v":"f"}`}
	if len(got) != len(want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("steps[%s] = %s, want %s", k, got[k], v)
		}
	}
	if len(in.Rerun.Items["f"]) != 2 || string(in.Rerun.Items["f"]["f/1"]) != `{"v":"f1"}` {
		t.Errorf("items %v", in.Rerun.Items)
	}
	if in.Rerun.FromStep != "d" || in.Rerun.OriginalRunID != "r1" {
		t.Errorf("block %+v", in.Rerun)
	}
	md := in.Trigger["metadata"].(map[string]any)
	if in.Trigger["source"] != SourceRerun || in.Trigger["fingerprint"] != "" || md["k"] != float64(1) || md["original_run_id"] != "r1" || md["from_step"] != "d" {
		t.Errorf("trigger %v", in.Trigger)
	}
	if plan.Run.ID != "new" || plan.Run.Source != SourceRerun || plan.Run.Team != "sre" || plan.Run.Stage != store.StageProduction ||
		plan.Run.Fingerprint != "" || plan.Run.Status != store.RunRunning || !plan.Run.StartedAt.Equal(now) {
		t.Errorf("run %+v", plan.Run)
	}
	if len(plan.Reused) != 6 {
		t.Errorf("%d reused records, want 6 (a, g, g/b1, f, f/0, f/1)", len(plan.Reused))
	}
	for _, rec := range plan.Reused {
		if rec.RunID != "new" || rec.Attempt != 1 || rec.InputTokens != 0 || strings.Join(rec.Flags, ",") != "x,"+store.FlagReused {
			t.Errorf("reused %+v", rec)
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	r := fakeReader{run: store.Run{ID: "r1", Pipeline: "p", Status: store.RunCompleted, Trigger: json.RawMessage(`"not an object"`)}}
	ctx := context.Background()
	now := time.Now()
	if _, err := Prepare(ctx, r, &pipeline.Pipeline{Name: "q"}, "r1", "a", "n", now); !errors.Is(err, ErrPipeline) || HTTPStatus(err) != 422 {
		t.Errorf("another pipeline: %v", err)
	}
	if _, err := Prepare(ctx, r, testPipeline, "zz", "a", "n", now); !errors.Is(err, store.ErrNotFound) || HTTPStatus(err) != 404 {
		t.Errorf("unknown run: %v", err)
	}
	groups := &pipeline.Pipeline{Name: "p", Steps: []pipeline.Node{&pipeline.Parallel{Name: "g"}, &pipeline.Step{Name: "a"}}}
	if _, err := Prepare(ctx, r, groups, "r1", "", "n", now); !errors.Is(err, ErrUnknownStep) || !strings.Contains(err.Error(), "the first step \"g\" is a group") {
		t.Errorf("from a first group: %v", err)
	}
	// A trigger that is not an object is replaced by one that says what
	// the rerun is.
	plan, err := Prepare(ctx, r, testPipeline, "r1", "a", "n", now)
	if err != nil || !strings.Contains(string(plan.Run.Trigger), `"original_run_id":"r1"`) {
		t.Errorf("plan %s, %v", plan.Run.Trigger, err)
	}
}

// TestPrepareInputLimit: reused outputs that make the input longer than
// a state machine takes are refused, at the boundary.
func TestPrepareInputLimit(t *testing.T) {
	r := fakeReader{run: store.Run{ID: "r1", Pipeline: "p", Status: store.RunCompleted}}
	base, err := Prepare(context.Background(), r, testPipeline, "r1", "c", "n", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// One record for a whose output is a JSON string of n bytes adds
	// n + len(`"a":`) bytes (the steps object was empty).
	fill := func(n int) (Plan, error) {
		out := `"` + strings.Repeat("x", n-2) + `"`
		r.steps = []store.StepRecord{rec("a", 1, store.StepCompleted, out)}
		return Prepare(context.Background(), r, testPipeline, "r1", "c", "n", time.Now())
	}
	room := MaxInputBytes - len(base.Input) - len(`"a":`)
	if p, err := fill(room); err != nil || len(p.Input) != MaxInputBytes {
		t.Fatalf("at the limit: %d bytes, %v", len(p.Input), err)
	}
	if _, err := fill(room + 1); !errors.Is(err, ErrTooLarge) || HTTPStatus(err) != 413 {
		t.Fatalf("a byte over: %v", err)
	}
}
