package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// Approval IDs are bearer handles, so errors name the run and step, never
// the ID.

// CreateApproval implements store.Store: the approval's pointer in its
// run's partition (see RunApprovals), then one conditional PutItem.
func (s *Store) CreateApproval(ctx context.Context, a store.Approval) error {
	a, err := store.NormalizeApproval(a)
	if err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	if err := s.putRunApproval(ctx, a); err != nil {
		return fmt.Errorf("create approval for run %q step %q: %w", a.RunID, a.Step, err)
	}
	_, err = s.db.PutItem(ctx, &PutItemInput{
		TableName:                s.table,
		Item:                     approvalItem(a),
		ConditionExpression:      "attribute_not_exists(#pk)",
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("create approval for run %q step %q: %w", a.RunID, a.Step, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create approval for run %q step %q: %w", a.RunID, a.Step, err)
	}
	return nil
}

// GetApproval implements store.Store: one strongly consistent GetItem.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	out, err := s.db.GetItem(ctx, &GetItemInput{
		TableName:      s.table,
		Key:            key(prefixApproval+escape(id), skApproval),
		ConsistentRead: true,
	})
	if err != nil {
		return store.Approval{}, fmt.Errorf("get approval: %w", err)
	}
	if out.Item == nil {
		return store.Approval{}, fmt.Errorf("get approval: %w", store.ErrNotFound)
	}
	a, err := decodeApproval(out.Item)
	if err != nil {
		return store.Approval{}, fmt.Errorf("get approval: %w", err)
	}
	return a, nil
}

// DecideApproval implements store.Store: one UpdateItem, conditional on the
// approval existing, being undecided and not expired at now. A failed
// condition returns the stored item, which tells the three cases apart.
func (s *Store) DecideApproval(ctx context.Context, id string, d store.Decision, by string, now time.Time) (store.Approval, error) {
	if err := store.CheckDecision(id, d, by); err != nil {
		return store.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:           s.table,
		Key:                 key(prefixApproval+escape(id), skApproval),
		UpdateExpression:    "SET #decision = :decision, #by = :by, #at = :at",
		ConditionExpression: "attribute_exists(#pk) AND attribute_not_exists(#decision) AND #expires > :now",
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK, "#decision": aDecision, "#by": aDecidedBy, "#at": aDecidedAt, "#expires": aExpiresAt,
		},
		ExpressionAttributeValues: Item{
			":decision": S(string(d)),
			":by":       S(by),
			":at":       S(record.FormatTime(now)),
			":now":      S(record.FormatTime(now)),
		},
		ReturnValues:                        ReturnAllNew,
		ReturnValuesOnConditionCheckFailure: ReturnAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		if old == nil {
			return store.Approval{}, fmt.Errorf("decide approval: %w", store.ErrNotFound)
		}
		a, err := decodeApproval(old)
		switch {
		case err != nil:
			return store.Approval{}, fmt.Errorf("decide approval: %w", err)
		case a.Decision != store.DecisionPending:
			return a, fmt.Errorf("decide approval: %w: already %s", store.ErrConflict, a.Decision)
		default:
			return a, fmt.Errorf("decide approval: %w: expired at %s", store.ErrExpired, a.ExpiresAt.Format(time.RFC3339))
		}
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	a, err := decodeApproval(out.Attributes)
	if err != nil {
		return store.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	return a, nil
}
