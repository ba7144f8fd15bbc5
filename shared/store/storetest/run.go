package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func testCreateRunRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	full := fullRun("run-full", "disk-full", t0.In(elsewhere))
	full.CompletedAt = tp(t0.Add(time.Minute).In(elsewhere))
	full.ResumedAt = tp(t0.Add(30 * time.Second))
	full.FinalOutput = json.RawMessage(`{"confidence":1,"summary":"done","next_step_context":""}`)
	full.Reason = "waiting for nobody"
	bare := minimalRun("run-min", "disk-full", t0)
	createRuns(t, s, full, bare)

	for _, want := range []store.Run{full, bare} {
		got, err := s.GetRun(ctx, want.ID)
		must(t, err)
		sameRun(t, got, want)
		if want.Usage.CostUSD == nil && got.Usage.CostUSD != nil {
			t.Errorf("run %s: nil cost came back as %v", want.ID, *got.Usage.CostUSD)
		}
		if got.StartedAt.Location() != time.UTC {
			t.Errorf("run %s: StartedAt in %v, want UTC", want.ID, got.StartedAt.Location())
		}
	}
}

func testCreateRunDuplicate(t *testing.T, s store.Store) {
	ctx := context.Background()
	first := fullRun("run-1", "disk-full", t0)
	createRuns(t, s, first)
	second := minimalRun("run-1", "other", t0.Add(time.Hour))
	mustErr(t, s.CreateRun(ctx, second), store.ErrExists)
	mustErr(t, s.CreateRun(ctx, first), store.ErrExists)
	got, err := s.GetRun(ctx, "run-1")
	must(t, err)
	sameRun(t, got, first)
}

func testCreateRunInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name   string
		modify func(*store.Run)
		want   error
	}{
		{"empty ID", func(r *store.Run) { r.ID = "" }, store.ErrInvalid},
		{"empty pipeline", func(r *store.Run) { r.Pipeline = "" }, store.ErrInvalid},
		{"unknown status", func(r *store.Run) { r.Status = "deduplicated" }, store.ErrInvalid},
		{"unknown stage", func(r *store.Run) { r.Stage = "staging" }, store.ErrInvalid},
		{"no start time", func(r *store.Run) { r.StartedAt = time.Time{} }, store.ErrInvalid},
		{"trigger not JSON", func(r *store.Run) { r.Trigger = json.RawMessage(`{"a":`) }, store.ErrInvalid},
		{"trigger too large", func(r *store.Run) {
			r.Trigger = json.RawMessage(`"` + strings.Repeat("x", store.MaxTriggerBytes) + `"`)
		}, store.ErrTooLarge},
		{"negative tokens", func(r *store.Run) { r.Usage.InputTokens = -1 }, store.ErrInvalid},
		{"negative cost", func(r *store.Run) { r.Usage.CostUSD = f64(-0.5) }, store.ErrInvalid},
		{"ID too long", func(r *store.Run) { r.ID = strings.Repeat("r", store.MaxIDBytes+1) }, store.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fullRun("run-bad", "disk-full", t0)
			tt.modify(&r)
			mustErr(t, s.CreateRun(ctx, r), tt.want)
			if r.ID != "" && len(r.ID) <= store.MaxIDBytes {
				_, err := s.GetRun(ctx, r.ID)
				mustErr(t, err, store.ErrNotFound)
			}
		})
	}
}

func testGetRunUnknown(t *testing.T, s store.Store) {
	_, err := s.GetRun(context.Background(), "no-such-run")
	mustErr(t, err, store.ErrNotFound)
}

func testUpdateRunTransitions(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := fullRun("run-1", "disk-full", t0)
	createRuns(t, s, r)
	steps := []struct {
		name string
		u    store.RunUpdate
	}{
		{"wait for a human", store.RunUpdate{Status: store.RunWaiting, Reason: "approval pending"}},
		{"resume", store.RunUpdate{Status: store.RunRunning}},
		{"interrupted", store.RunUpdate{Status: store.RunInterrupted, Reason: "process died"}},
		{"resumed after interruption", store.RunUpdate{Status: store.RunRunning, ResumedAt: tp(t0.Add(time.Minute).In(elsewhere))}},
		{"complete", store.RunUpdate{
			Status:      store.RunEscalated,
			Reason:      "confidence 0.4 below 0.75",
			CompletedAt: tp(t0.Add(2 * time.Minute)),
			FinalOutput: json.RawMessage(`{"confidence":0.4,"summary":"unsure","next_step_context":""}`),
			Usage:       &store.Usage{InputTokens: 900, OutputTokens: 100, CostUSD: f64(0.5)},
		}},
	}
	want := r
	for _, st := range steps {
		must(t, s.UpdateRun(ctx, r.ID, st.u))
		want.Status, want.Reason = st.u.Status, st.u.Reason
		if st.u.CompletedAt != nil {
			want.CompletedAt = st.u.CompletedAt
		}
		if st.u.ResumedAt != nil {
			want.ResumedAt = st.u.ResumedAt
		}
		if st.u.FinalOutput != nil {
			want.FinalOutput = st.u.FinalOutput
		}
		if st.u.Usage != nil {
			want.Usage = *st.u.Usage
		}
		got, err := s.GetRun(ctx, r.ID)
		must(t, err)
		t.Run(st.name, func(t *testing.T) { sameRun(t, got, want) })
	}
}

func testUpdateRunTerminal(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := minimalRun("run-1", "disk-full", t0)
	createRuns(t, s, r)
	end := store.RunUpdate{Status: store.RunCompleted, Reason: "all steps ran", CompletedAt: tp(t0.Add(time.Minute)),
		FinalOutput: json.RawMessage(`{"confidence":1,"summary":"ok","next_step_context":""}`)}
	must(t, s.UpdateRun(ctx, r.ID, end))
	want := r
	want.Status, want.Reason, want.CompletedAt, want.FinalOutput = end.Status, end.Reason, end.CompletedAt, end.FinalOutput

	tests := []struct {
		name string
		u    store.RunUpdate
		want error
	}{
		{"same write again", end, nil},
		{"same status, other fields", store.RunUpdate{Status: store.RunCompleted, Reason: "retried", CompletedAt: tp(t0.Add(time.Hour))}, nil},
		{"other terminal status", store.RunUpdate{Status: store.RunFailed, Reason: "late failure"}, store.ErrConflict},
		{"back to running", store.RunUpdate{Status: store.RunRunning}, store.ErrConflict},
		{"interrupted", store.RunUpdate{Status: store.RunInterrupted}, store.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.UpdateRun(ctx, r.ID, tt.u)
			if tt.want == nil {
				must(t, err)
			} else {
				mustErr(t, err, tt.want)
			}
			got, err := s.GetRun(ctx, r.ID)
			must(t, err)
			sameRun(t, got, want)
		})
	}
}

func testUpdateRunErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	createRuns(t, s, minimalRun("run-1", "disk-full", t0))
	mustErr(t, s.UpdateRun(ctx, "no-such-run", store.RunUpdate{Status: store.RunCompleted}), store.ErrNotFound)
	mustErr(t, s.UpdateRun(ctx, "run-1", store.RunUpdate{Status: "done"}), store.ErrInvalid)
	mustErr(t, s.UpdateRun(ctx, "run-1", store.RunUpdate{Status: store.RunCompleted, FinalOutput: json.RawMessage("{")}), store.ErrInvalid)
	mustErr(t, s.UpdateRun(ctx, "run-1", store.RunUpdate{Status: store.RunCompleted,
		FinalOutput: json.RawMessage(`"` + strings.Repeat("x", store.MaxFinalOutputBytes) + `"`)}), store.ErrTooLarge)
	got, err := s.GetRun(ctx, "run-1")
	must(t, err)
	if got.Status != store.RunRunning {
		t.Errorf("status after refused updates = %s, want running", got.Status)
	}
}

func ids(runs []store.Run) string {
	var b []string
	for _, r := range runs {
		b = append(b, r.ID)
	}
	return strings.Join(b, ",")
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	// a1..a4 on pipeline a, b1..b3 on b; a3 and b2 start at the same instant,
	// as do a2 and a2x (ties break by ID, descending).
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	runs := []store.Run{
		fullRun("a1", "a", at(1)), fullRun("a2", "a", at(2)), fullRun("a2x", "a", at(2)),
		fullRun("a3", "a", at(5)), fullRun("a4", "a", at(7)),
		fullRun("b1", "b", at(3)), fullRun("b2", "b", at(5)), fullRun("b3", "b", at(6)),
	}
	// Teams cut across pipelines and statuses: sre (fullRun's) on a1, a2x,
	// a3, b1; payments on a2, a4, b2; none on b3.
	for i := range runs {
		switch runs[i].ID {
		case "a2", "a4", "b2":
			runs[i].Team = "payments"
		case "b3":
			runs[i].Team = ""
		}
	}
	createRuns(t, s, runs...)
	must(t, s.UpdateRun(ctx, "a2", store.RunUpdate{Status: store.RunCompleted, CompletedAt: tp(at(4))}))
	must(t, s.UpdateRun(ctx, "b1", store.RunUpdate{Status: store.RunCompleted, CompletedAt: tp(at(4))}))
	must(t, s.UpdateRun(ctx, "a4", store.RunUpdate{Status: store.RunFailed, Reason: "boom", CompletedAt: tp(at(8))}))
	must(t, s.UpdateRun(ctx, "b3", store.RunUpdate{Status: store.RunWaiting}))

	tests := []struct {
		name string
		f    store.RunFilter
		want string
	}{
		{"all", store.RunFilter{}, "a4,b3,b2,a3,b1,a2x,a2,a1"},
		{"pipeline a", store.RunFilter{Pipeline: "a"}, "a4,a3,a2x,a2,a1"},
		{"pipeline b", store.RunFilter{Pipeline: "b"}, "b3,b2,b1"},
		{"running", store.RunFilter{Status: store.RunRunning}, "b2,a3,a2x,a1"},
		{"completed", store.RunFilter{Status: store.RunCompleted}, "b1,a2"},
		{"waiting", store.RunFilter{Status: store.RunWaiting}, "b3"},
		{"pipeline a completed", store.RunFilter{Pipeline: "a", Status: store.RunCompleted}, "a2"},
		{"pipeline a running", store.RunFilter{Pipeline: "a", Status: store.RunRunning}, "a3,a2x,a1"},
		{"pipeline b failed", store.RunFilter{Pipeline: "b", Status: store.RunFailed}, ""},
		{"unknown pipeline", store.RunFilter{Pipeline: "zzz"}, ""},
		{"limit 3", store.RunFilter{Limit: 3}, "a4,b3,b2"},
		{"pipeline a limit 2", store.RunFilter{Pipeline: "a", Limit: 2}, "a4,a3"},
		{"running limit 2", store.RunFilter{Status: store.RunRunning, Limit: 2}, "b2,a3"},
		{"pipeline a running limit 1", store.RunFilter{Pipeline: "a", Status: store.RunRunning, Limit: 1}, "a3"},
		{"pipeline a completed limit 1", store.RunFilter{Pipeline: "a", Status: store.RunCompleted, Limit: 1}, "a2"},
		{"team sre", store.RunFilter{Team: "sre"}, "a3,b1,a2x,a1"},
		{"team payments", store.RunFilter{Team: "payments"}, "a4,b2,a2"},
		{"team differs only in case", store.RunFilter{Team: "SRE"}, ""},
		{"unknown team", store.RunFilter{Team: "nobody"}, ""},
		{"team sre limit 2", store.RunFilter{Team: "sre", Limit: 2}, "a3,b1"},
		{"team sre pipeline a", store.RunFilter{Team: "sre", Pipeline: "a"}, "a3,a2x,a1"},
		{"team payments pipeline b", store.RunFilter{Team: "payments", Pipeline: "b"}, "b2"},
		{"team sre running", store.RunFilter{Team: "sre", Status: store.RunRunning}, "a3,a2x,a1"},
		{"team payments completed", store.RunFilter{Team: "payments", Status: store.RunCompleted}, "a2"},
		{"team payments pipeline b running", store.RunFilter{Team: "payments", Pipeline: "b", Status: store.RunRunning}, "b2"},
		{"team sre pipeline b running", store.RunFilter{Team: "sre", Pipeline: "b", Status: store.RunRunning}, ""},
		{"team payments pipeline a failed", store.RunFilter{Team: "payments", Pipeline: "a", Status: store.RunFailed}, "a4"},
		{"team sre pipeline a failed", store.RunFilter{Team: "sre", Pipeline: "a", Status: store.RunFailed}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListRuns(ctx, tt.f)
			must(t, err)
			if ids(got) != tt.want {
				t.Errorf("ListRuns(%+v) = [%s], want [%s]", tt.f, ids(got), tt.want)
			}
		})
	}

	t.Run("summaries", func(t *testing.T) {
		got, err := s.ListRuns(ctx, store.RunFilter{Pipeline: "a", Status: store.RunFailed})
		must(t, err)
		if len(got) != 1 {
			t.Fatalf("got %d runs, want 1", len(got))
		}
		full, err := s.GetRun(ctx, "a4")
		must(t, err)
		sameRun(t, got[0], full.Summary())
	})
}

func testListRunsLimit(t *testing.T, s store.Store) {
	ctx := context.Background()
	n := store.DefaultRunLimit + 5
	for i := range n {
		createRuns(t, s, minimalRun(fmt.Sprintf("run-%03d", i), "p", t0.Add(time.Duration(i)*time.Second)))
	}
	got, err := s.ListRuns(ctx, store.RunFilter{Pipeline: "p"})
	must(t, err)
	if len(got) != store.DefaultRunLimit {
		t.Fatalf("default limit: got %d runs, want %d", len(got), store.DefaultRunLimit)
	}
	if got[0].ID != fmt.Sprintf("run-%03d", n-1) {
		t.Errorf("newest first: got %s first", got[0].ID)
	}
	got, err = s.ListRuns(ctx, store.RunFilter{Limit: store.MaxRunLimit + 1})
	must(t, err)
	if len(got) != n {
		t.Errorf("limit above the maximum: got %d runs, want all %d", len(got), n)
	}
}

func testListRunsInvalid(t *testing.T, s store.Store) {
	_, err := s.ListRuns(context.Background(), store.RunFilter{Status: "deduplicated"})
	mustErr(t, err, store.ErrInvalid)
}
