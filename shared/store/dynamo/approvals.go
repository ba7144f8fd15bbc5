package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// prefixRunApproval begins the sort key of a run's approval pointers:
// PK=RUN#<runId> SK=APPROVAL#<createdAt>#<id>, holding the approval's id.
// An approval itself lives in its own partition (APPROVAL#<id>), where a
// decision reads it by ID alone; the pointer lets a run's approvals be
// found with one Query of the run's partition, without an index.
const prefixRunApproval = "APPROVAL#"

// MaxWaitingRuns bounds the waiting runs PendingApprovals reads.
const MaxWaitingRuns = store.MaxRunLimit

// DefaultPendingLimit is PendingApprovals' limit when none is given.
const DefaultPendingLimit = 1000

func runApprovalItem(a store.Approval) Item {
	m := Item{
		AttrPK:  S(runPK(a.RunID)),
		AttrSK:  S(prefixRunApproval + record.FormatTime(a.CreatedAt) + "#" + escape(a.ID)),
		AttrTTL: num(a.ExpiresAt.Add(ApprovalRetention).Unix()),
	}
	m.s(aID, a.ID)
	return m
}

// putRunApproval writes a's pointer in its run's partition. It is
// unconditional: the same pointer again changes nothing, and it is
// written before the approval so that a stored approval always has one.
func (s *Store) putRunApproval(ctx context.Context, a store.Approval) error {
	_, err := s.db.PutItem(ctx, &PutItemInput{TableName: s.table, Item: runApprovalItem(a)})
	return err
}

// RunApprovals returns a run's approvals, oldest first: one Query of the
// run's partition for its approval pointers, then a strongly consistent
// GetItem of each. A pointer whose approval is gone (its TTL passed, or
// its creation failed after the pointer was written) is skipped.
func (s *Store) RunApprovals(ctx context.Context, runID string) ([]store.Approval, error) {
	in := &QueryInput{
		TableName:                s.table,
		KeyConditionExpression:   "#pk = :pk AND begins_with(#sk, :a)",
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: Item{
			":pk": S(runPK(runID)),
			":a":  S(prefixRunApproval),
		},
		ConsistentRead: true,
	}
	var ids []string
	err := s.query(ctx, in, func(page []Item) (bool, error) {
		for _, m := range page {
			r := reader{m: m}
			id := r.s(aID)
			if r.err != nil || id == "" {
				return false, fmt.Errorf("approval pointer without %s", aID)
			}
			ids = append(ids, id)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list approvals of run %q: %w", runID, err)
	}
	out := make([]store.Approval, 0, len(ids))
	for _, id := range ids {
		a, err := s.GetApproval(ctx, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("list approvals of run %q: %w", runID, err)
		}
		if a.RunID != runID {
			continue
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b store.Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// PendingApprovals returns the undecided approvals of runs that wait, the
// earliest to expire first, at most limit (limit <= 0:
// DefaultPendingLimit). It reads the waiting runs from the status index
// (at most MaxWaitingRuns, the most recent), then each one's approvals
// (RunApprovals): no index of its own. A run that waits on many humans at
// once costs a GetItem per approval.
func (s *Store) PendingApprovals(ctx context.Context, limit int) ([]store.Approval, error) {
	if limit <= 0 {
		limit = DefaultPendingLimit
	}
	runs, err := s.ListRuns(ctx, store.RunFilter{Status: store.RunWaiting, Limit: MaxWaitingRuns})
	if err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	var out []store.Approval
	for _, r := range runs {
		as, err := s.RunApprovals(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("list pending approvals: %w", err)
		}
		for _, a := range as {
			if a.Decision == store.DecisionPending {
				out = append(out, a)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b store.Approval) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
