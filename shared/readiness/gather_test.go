package readiness

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// TestGather reads runs and step records from a SQLite store: only ended
// runs of the pipeline's own stage count; a step's last attempt is its
// result; skipped and waiting records are none; feedback and failed
// checks mark results; branch records are not judged apart.
func TestGather(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f := false
	type rec struct {
		name    string
		attempt int
		status  store.StepStatus
		conf    *float64
		trust   *store.TrustReport
	}
	put := func(id, stage string, status store.RunStatus, config string, recs ...rec) {
		t.Helper()
		at := start.Add(time.Duration(len(id)) * time.Minute)
		done := at.Add(time.Minute)
		if err := st.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, Stage: stage, StartedAt: at, ConfigFingerprint: config}); err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if err := st.PutStep(ctx, store.StepRecord{RunID: id, Name: r.name, Index: i, Attempt: r.attempt, Status: r.status,
				EffectiveConfidence: r.conf, Trust: r.trust, StartedAt: at, FinishedAt: done}); err != nil {
				t.Fatal(err)
			}
		}
		u := store.RunUpdate{Status: status}
		if status.Terminal() {
			u.CompletedAt = &done
		}
		if err := st.UpdateRun(ctx, id, u); err != nil {
			t.Fatal(err)
		}
	}
	c := func(v float64) *float64 { return &v }
	put("r1", "testing", store.RunCompleted, cfg,
		rec{"a", 1, store.StepFailed, nil, nil}, rec{"a", 2, store.StepCompleted, c(0.8), nil},
		rec{"g", 1, store.StepCompleted, c(0.7), nil}, rec{"g/x", 1, store.StepCompleted, c(0.1), nil})
	put("r22", "testing", store.RunEscalated, "0ld0ld0ld0ld",
		rec{"a", 1, store.StepEscalated, c(0.1), &store.TrustReport{Version: store.TrustReportVersion, Mode: store.TrustEnforced, CombinedTrust: 0, Signals: store.TrustSignals{S: 0.9, SAfterV: 0.6, D: &f}, Gate: store.TrustGate{Policy: store.PolicyTrustVector, ConfidenceThreshold: 0.75, OnLowConfidence: "escalate", Decision: "escalated"}}},
		rec{"g", 1, store.StepSkipped, nil, nil})
	put("r333", "production", store.RunCompleted, cfg, rec{"a", 1, store.StepCompleted, c(0.9), nil})
	put("r4444", "testing", store.RunWaiting, cfg, rec{"a", 1, store.StepWaiting, nil, nil})
	if err := st.PutStepFeedback(ctx, "r1", "a", store.Feedback{Outcome: store.OutcomePartial, SubmittedAt: start}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRunFeedback(ctx, "r1", store.Feedback{Outcome: store.OutcomeCorrect, SubmittedAt: start}); err != nil {
		t.Fatal(err)
	}

	p := &pipeline.Pipeline{Name: "p", Stage: pipeline.StageTesting, Steps: []pipeline.Node{
		&pipeline.Step{Name: "a", Executor: "gateway"},
		&pipeline.Parallel{Name: "g", Branches: []*pipeline.Branch{{Name: "x", Executor: "human"}, {Name: "y", Executor: "scripted"}}},
		&pipeline.Step{Name: "approve", Executor: "human"},
	}, Readiness: &pipeline.Readiness{Accuracy: &pipeline.ReadinessAccuracy{MinMarked: 1}}}
	e, err := Gather(ctx, st, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.Runs != 2 || e.Truncated || !e.Feedback || e.Stage != "testing" || e.Config != cfg {
		t.Fatalf("evidence %+v", e)
	}
	wantUnits := []Unit{{"a", KindStep, "gateway", true}, {"g", KindParallel, "", true}, {"approve", KindStep, "human", false}}
	for i, u := range wantUnits {
		if e.Units[i] != u {
			t.Errorf("unit %d: %+v, want %+v", i, e.Units[i], u)
		}
	}
	a := e.Results["a"]
	if len(a) != 2 {
		t.Fatalf("a's results %+v", a)
	}
	byRun := map[string]Result{}
	for _, r := range a {
		byRun[r.RunID] = r
	}
	r1, r2 := byRun["r1"], byRun["r22"]
	if r1.Status != store.StepCompleted || r1.Confidence == nil || *r1.Confidence != 0.8 || r1.Config != cfg ||
		r1.StepFeedback != store.OutcomePartial || r1.RunFeedback != store.OutcomeCorrect {
		t.Errorf("r1: %+v", r1)
	}
	if l, src, ok := r1.Label(); !ok || l != 0.5 || src != store.LabelStepFeedback {
		t.Errorf("r1 label %v %s %v: the step's feedback comes first", l, src, ok)
	}
	// The trust report's S_after_V, not the record's effective
	// confidence (which checks and calibration may have lowered).
	if r2.Status != store.StepEscalated || r2.Confidence == nil || *r2.Confidence != 0.6 || !r2.DeterministicFailed || r2.Config != "0ld0ld0ld0ld" {
		t.Errorf("r22: %+v", r2)
	}
	if l, src, ok := r2.Label(); !ok || l != 0 || src != store.LabelDeterministic {
		t.Errorf("r22 label %v %s %v", l, src, ok)
	}
	if g := e.Results["g"]; len(g) != 1 || *g[0].Confidence != 0.7 {
		t.Errorf("g's results %+v: the join's record, skipped runs left out", g)
	}
	if len(e.Results["approve"]) != 0 {
		t.Errorf("approve has results %+v", e.Results["approve"])
	}

	p.Stage = pipeline.StageProduction
	p.Readiness = nil
	e, err = Gather(ctx, st, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.Runs != 1 || len(e.Results["a"]) != 1 || e.Results["a"][0].StepFeedback != "" {
		t.Errorf("production evidence %+v", e)
	}
}

// TestGatherSkipsReusedSteps: the records a rerun reused (flagged
// store.FlagReused) are the earlier run's results and are not counted
// again; the steps the rerun ran are.
func TestGatherSkipsReusedSteps(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	done := at.Add(time.Minute)
	conf := 0.9
	for _, id := range []string{"orig", "rerun"} {
		if err := st.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, Stage: "testing", StartedAt: at}); err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"a", "b"} {
			rec := store.StepRecord{RunID: id, Name: name, Index: i, Attempt: 1, Status: store.StepCompleted, EffectiveConfidence: &conf, StartedAt: at, FinishedAt: done}
			if id == "rerun" && name == "a" {
				rec.Flags = []string{store.FlagReused}
			}
			if err := st.PutStep(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.UpdateRun(ctx, id, store.RunUpdate{Status: store.RunCompleted, CompletedAt: &done}); err != nil {
			t.Fatal(err)
		}
	}
	p := &pipeline.Pipeline{Name: "p", Stage: pipeline.StageTesting, Steps: []pipeline.Node{
		&pipeline.Step{Name: "a", Executor: "gateway"}, &pipeline.Step{Name: "b", Executor: "gateway"},
	}}
	e, err := Gather(ctx, st, p, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Results["a"]) != 1 || e.Results["a"][0].RunID != "orig" || len(e.Results["b"]) != 2 {
		t.Errorf("a: %+v, b: %+v; want a once (the original run's), b twice", e.Results["a"], e.Results["b"])
	}
}
