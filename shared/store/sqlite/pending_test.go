package sqlite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// TestPendingApprovals: the undecided approvals of waiting runs, earliest
// expiry first, within the limit; and an approval found by its token.
func TestPendingApprovals(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	runs := map[string]store.RunStatus{"waiting-1": store.RunWaiting, "waiting-2": store.RunWaiting, "done": store.RunCompleted}
	for id, status := range runs {
		if err := s.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunRunning, StartedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateRun(ctx, id, store.RunUpdate{Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	approvals := []store.Approval{
		{ID: "a-late", RunID: "waiting-1", Step: "s", TaskToken: "tok-late", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: "a-early", RunID: "waiting-2", Step: "s", TaskToken: "tok-early", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{ID: "a-decided", RunID: "waiting-1", Step: "t", TaskToken: "tok-decided", CreatedAt: t0, ExpiresAt: t0.Add(time.Second)},
		{ID: "a-ended", RunID: "done", Step: "s", TaskToken: "tok-ended", CreatedAt: t0, ExpiresAt: t0.Add(time.Second)},
	}
	for _, a := range approvals {
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DecideApproval(ctx, "a-decided", store.DecisionApproved, "x", t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit int
		want  []string
	}{{0, []string{"a-early", "a-late"}}, {1, []string{"a-early"}}, {2, []string{"a-early", "a-late"}}, {3, []string{"a-early", "a-late"}}} {
		got, err := s.PendingApprovals(ctx, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range got {
			ids = append(ids, a.ID)
		}
		if len(ids) != len(c.want) || (len(ids) > 0 && ids[0] != c.want[0]) || (len(ids) > 1 && ids[1] != c.want[1]) {
			t.Errorf("limit %d: %v, want %v", c.limit, ids, c.want)
		}
	}
	a, err := s.ApprovalByTaskToken(ctx, "tok-late")
	if err != nil || a.ID != "a-late" || a.RunID != "waiting-1" {
		t.Errorf("by token: %+v, %v", a, err)
	}
	if _, err := s.ApprovalByTaskToken(ctx, "no-such-token"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v, want ErrNotFound", err)
	}
}
