package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// ApprovalLister is a store that lists approvals by run and the pending
// ones across runs (the SQLite and DynamoDB stores; the web UI reads
// them).
type ApprovalLister interface {
	store.Store
	// RunApprovals returns a run's approvals, oldest first.
	RunApprovals(ctx context.Context, runID string) ([]store.Approval, error)
	// PendingApprovals returns the undecided approvals of waiting runs,
	// the earliest to expire first, at most limit (limit <= 0: the
	// store's default).
	PendingApprovals(ctx context.Context, limit int) ([]store.Approval, error)
}

// RunApprovalLists runs the conformance tests of ApprovalLister. newStore
// must return a fresh, empty store for every call.
func RunApprovalLists(t *testing.T, newStore func(t *testing.T) ApprovalLister) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, ApprovalLister)
	}{
		{"RunApprovals/oldest first, decisions included", testRunApprovals},
		{"PendingApprovals/waiting runs, earliest expiry, limit", testPendingApprovals},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// approvalRuns creates runs in the given statuses.
func approvalRuns(t *testing.T, s store.Store, runs map[string]store.RunStatus) {
	t.Helper()
	ctx := context.Background()
	for id, status := range runs {
		if err := s.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, StartedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if status != store.RunRunning {
			if err := s.UpdateRun(ctx, id, store.RunUpdate{Status: status}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func createApprovals(t *testing.T, s store.Store, as ...store.Approval) {
	t.Helper()
	for _, a := range as {
		if err := s.CreateApproval(context.Background(), a); err != nil {
			t.Fatalf("create approval %s: %v", a.ID, err)
		}
	}
}

func approvalIDs(as []store.Approval) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func testRunApprovals(t *testing.T, s ApprovalLister) {
	ctx := context.Background()
	approvalRuns(t, s, map[string]store.RunStatus{"run#1": store.RunWaiting, "run-2": store.RunWaiting})
	createApprovals(t, s,
		store.Approval{ID: "a-second", RunID: "run#1", Step: "check", Pipeline: "p", TaskToken: "tok-2", CreatedAt: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)},
		store.Approval{ID: "a-first", RunID: "run#1", Step: "sign-off", Pipeline: "p", Message: "Restart?", TaskToken: "tok-1", CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)},
		store.Approval{ID: "a-other", RunID: "run-2", Step: "sign-off", Pipeline: "p", TaskToken: "tok-3", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	)
	if _, err := s.DecideApproval(ctx, "a-first", store.DecisionApproved, "alice", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunApprovals(ctx, "run#1")
	if err != nil {
		t.Fatal(err)
	}
	if ids := approvalIDs(got); !slices.Equal(ids, []string{"a-first", "a-second"}) {
		t.Fatalf("RunApprovals = %v, want [a-first a-second]", ids)
	}
	first := got[0]
	if first.Step != "sign-off" || first.Message != "Restart?" || first.TaskToken != "tok-1" || !first.ExpiresAt.Equal(t0.Add(2*time.Hour)) ||
		first.Decision != store.DecisionApproved || first.DecidedBy != "alice" || first.DecidedAt == nil {
		t.Errorf("first approval %+v", first)
	}
	if got[1].Decision != store.DecisionPending {
		t.Errorf("second approval decided: %+v", got[1])
	}
	if none, err := s.RunApprovals(ctx, "no-such-run"); err != nil || len(none) != 0 {
		t.Errorf("unknown run: %v, %v; want none", approvalIDs(none), err)
	}
}

func testPendingApprovals(t *testing.T, s ApprovalLister) {
	ctx := context.Background()
	approvalRuns(t, s, map[string]store.RunStatus{
		"waiting-1": store.RunWaiting, "waiting-2": store.RunWaiting, "done": store.RunCompleted, "running": store.RunRunning,
	})
	createApprovals(t, s,
		store.Approval{ID: "a-late", RunID: "waiting-1", Step: "s", TaskToken: "tok-late", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		store.Approval{ID: "a-early", RunID: "waiting-2", Step: "s", TaskToken: "tok-early", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		store.Approval{ID: "a-middle", RunID: "waiting-1", Step: "u", TaskToken: "tok-middle", CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute)},
		store.Approval{ID: "a-decided", RunID: "waiting-1", Step: "t", TaskToken: "tok-decided", CreatedAt: t0, ExpiresAt: t0.Add(time.Second)},
		store.Approval{ID: "a-ended", RunID: "done", Step: "s", TaskToken: "tok-ended", CreatedAt: t0, ExpiresAt: t0.Add(time.Second)},
		store.Approval{ID: "a-running", RunID: "running", Step: "s", TaskToken: "tok-running", CreatedAt: t0, ExpiresAt: t0.Add(time.Second)},
	)
	if _, err := s.DecideApproval(ctx, "a-decided", store.DecisionRejected, "bob", t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit int
		want  []string
	}{
		{0, []string{"a-early", "a-middle", "a-late"}},
		{1, []string{"a-early"}},
		{2, []string{"a-early", "a-middle"}},
		{10, []string{"a-early", "a-middle", "a-late"}},
	} {
		got, err := s.PendingApprovals(ctx, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if ids := approvalIDs(got); !slices.Equal(ids, c.want) {
			t.Errorf("limit %d: %v, want %v", c.limit, ids, c.want)
		}
		for _, a := range got {
			if a.TaskToken == "" || a.RunID == "" {
				t.Errorf("limit %d: %s lacks its run or token: %+v", c.limit, a.ID, a)
			}
		}
	}
}
