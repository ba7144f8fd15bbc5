package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func testApprovalRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	id, err := store.NewApprovalID()
	must(t, err)
	a := approval(id, t0.In(elsewhere), time.Hour)
	must(t, s.CreateApproval(ctx, a))
	got, err := s.GetApproval(ctx, id)
	must(t, err)
	sameApproval(t, got, a)
	if !got.Pending(t0) || got.Pending(t0.Add(time.Hour)) {
		t.Errorf("Pending: at creation %v, at expiry %v; want true, false", got.Pending(t0), got.Pending(t0.Add(time.Hour)))
	}
	_, err = s.GetApproval(ctx, "no-such-approval")
	mustErr(t, err, store.ErrNotFound)
}

func testApprovalCreateErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := approval("appr-1", t0, time.Hour)
	must(t, s.CreateApproval(ctx, a))
	other := approval("appr-1", t0.Add(time.Minute), 2*time.Hour)
	other.TaskToken = "another-token"
	mustErr(t, s.CreateApproval(ctx, other), store.ErrExists)
	got, err := s.GetApproval(ctx, "appr-1")
	must(t, err)
	sameApproval(t, got, a)

	tests := []struct {
		name   string
		modify func(*store.Approval)
	}{
		{"empty ID", func(a *store.Approval) { a.ID = "" }},
		{"no run", func(a *store.Approval) { a.RunID = "" }},
		{"no step", func(a *store.Approval) { a.Step = "" }},
		{"no task token", func(a *store.Approval) { a.TaskToken = "" }},
		{"expires before created", func(a *store.Approval) { a.ExpiresAt = a.CreatedAt.Add(-time.Second) }},
		{"no expiry", func(a *store.Approval) { a.ExpiresAt = time.Time{} }},
		{"already decided", func(a *store.Approval) { a.Decision = store.DecisionApproved }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := approval("appr-bad", t0, time.Hour)
			tt.modify(&a)
			mustErr(t, s.CreateApproval(ctx, a), store.ErrInvalid)
		})
	}
	_, err = s.GetApproval(ctx, "appr-bad")
	mustErr(t, err, store.ErrNotFound)
}

func testDecideSingleUse(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := approval("appr-1", t0, time.Hour)
	must(t, s.CreateApproval(ctx, a))
	now := t0.Add(10 * time.Minute).In(elsewhere)
	got, err := s.DecideApproval(ctx, "appr-1", store.DecisionApproved, "lead@example.com", now)
	must(t, err)
	want := a
	want.Decision, want.DecidedBy, want.DecidedAt = store.DecisionApproved, "lead@example.com", tp(now)
	sameApproval(t, got, want)
	stored, err := s.GetApproval(ctx, "appr-1")
	must(t, err)
	sameApproval(t, stored, want)

	for _, d := range []store.Decision{store.DecisionApproved, store.DecisionRejected} {
		got, err := s.DecideApproval(ctx, "appr-1", d, "reviewer@example.com", now.Add(time.Minute))
		mustErr(t, err, store.ErrConflict)
		sameApproval(t, got, want) // the stored decision comes back
	}
	stored, err = s.GetApproval(ctx, "appr-1")
	must(t, err)
	sameApproval(t, stored, want)
}

func testDecideExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name string
		at   time.Duration // after creation; the approval lives one hour
		want error
	}{
		{"just before expiry", time.Hour - time.Nanosecond, nil},
		{"at expiry", time.Hour, store.ErrExpired},
		{"after expiry", 2 * time.Hour, store.ErrExpired},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("appr-%d", i)
			must(t, s.CreateApproval(ctx, approval(id, t0, time.Hour)))
			got, err := s.DecideApproval(ctx, id, store.DecisionRejected, "carol", t0.Add(tt.at))
			if tt.want == nil {
				must(t, err)
				if got.Decision != store.DecisionRejected {
					t.Errorf("decision = %q, want rejected", got.Decision)
				}
				return
			}
			mustErr(t, err, tt.want)
			if got.ID != id || got.Decision != store.DecisionPending {
				t.Errorf("expired approval came back as %+v", got)
			}
			stored, err := s.GetApproval(ctx, id)
			must(t, err)
			if stored.Decision != store.DecisionPending || stored.DecidedAt != nil {
				t.Errorf("expired approval was decided: %+v", stored)
			}
		})
	}
}

func testDecideErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.CreateApproval(ctx, approval("appr-1", t0, time.Hour)))
	_, err := s.DecideApproval(ctx, "no-such-approval", store.DecisionApproved, "x", t0)
	mustErr(t, err, store.ErrNotFound)
	for _, d := range []store.Decision{store.DecisionPending, "maybe"} {
		_, err = s.DecideApproval(ctx, "appr-1", d, "x", t0)
		mustErr(t, err, store.ErrInvalid)
	}
	_, err = s.DecideApproval(ctx, "", store.DecisionApproved, "x", t0)
	mustErr(t, err, store.ErrInvalid)
	got, err := s.GetApproval(ctx, "appr-1")
	must(t, err)
	if got.Decision != store.DecisionPending {
		t.Errorf("refused decisions were stored: %+v", got)
	}
}

func testDecideConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.CreateApproval(ctx, approval("appr-1", t0, time.Hour)))
	const n = 20
	type result struct {
		by  string
		a   store.Approval
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := store.DecisionApproved
			if i%2 == 1 {
				d = store.DecisionRejected
			}
			by := fmt.Sprintf("user-%d", i)
			a, err := s.DecideApproval(ctx, "appr-1", d, by, t0.Add(time.Minute))
			results <- result{by, a, err}
		})
	}
	wg.Wait()
	close(results)
	var winner string
	for r := range results {
		switch {
		case r.err == nil:
			if winner != "" {
				t.Errorf("both %s and %s decided", winner, r.by)
			}
			winner = r.by
		case !errors.Is(r.err, store.ErrConflict):
			t.Errorf("%s: error %v, want ErrConflict", r.by, r.err)
		}
	}
	if winner == "" {
		t.Fatal("no decider won")
	}
	got, err := s.GetApproval(ctx, "appr-1")
	must(t, err)
	if got.DecidedBy != winner {
		t.Errorf("stored decider %q, winner %q", got.DecidedBy, winner)
	}
}
