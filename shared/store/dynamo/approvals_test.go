package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/store/storetest"
)

var _ storetest.ApprovalLister = (*dynamo.Store)(nil)

func TestApprovalListConformance(t *testing.T) {
	c := dynamotest.Client(t)
	storetest.RunApprovalLists(t, func(t *testing.T) storetest.ApprovalLister {
		return dynamo.New(c, dynamotest.NewTable(t))
	})
}

// TestRequestsPerApprovalList pins the access pattern of the approval
// lists: no Scan; a run's approvals are one Query and a GetItem each; the
// pending ones add one status-index Query; creating an approval writes its
// pointer and itself.
func TestRequestsPerApprovalList(t *testing.T) {
	c := dynamotest.Client(t)
	api := &counter{API: c, calls: map[string]int{}}
	s := dynamo.New(api, dynamotest.NewTable(t))
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, store.Run{ID: "r1", Pipeline: "p", Status: store.RunWaiting, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	api.take()
	for _, id := range []string{"a1", "a2"} {
		if err := s.CreateApproval(ctx, store.Approval{ID: id, RunID: "r1", Step: id, TaskToken: "tok-" + id, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if calls, _ := api.take(); calls["PutItem"] != 4 || len(calls) != 1 {
		t.Errorf("two CreateApproval: %v, want 4 PutItem", calls)
	}
	if _, err := s.RunApprovals(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if calls, _ := api.take(); calls["Query"] != 1 || calls["GetItem"] != 2 || len(calls) != 2 {
		t.Errorf("RunApprovals: %v, want 1 Query and 2 GetItem", calls)
	}
	got, err := s.PendingApprovals(ctx, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("PendingApprovals: %d, %v", len(got), err)
	}
	if calls, _ := api.take(); calls["Query"] != 2 || calls["GetItem"] != 2 || len(calls) != 2 {
		t.Errorf("PendingApprovals: %v, want 2 Query and 2 GetItem", calls)
	}
}
