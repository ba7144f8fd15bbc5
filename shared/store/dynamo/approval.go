package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// Approval IDs are bearer handles, so errors name the run and step, never
// the ID.

// CreateApproval implements store.Store: one conditional PutItem.
func (s *Store) CreateApproval(ctx context.Context, a store.Approval) error {
	a, err := store.NormalizeApproval(a)
	if err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     approvalItem(a),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
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
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(prefixApproval+escape(id), skApproval),
		ConsistentRead: aws.Bool(true),
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
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(prefixApproval+escape(id), skApproval),
		UpdateExpression:    aws.String("SET #decision = :decision, #by = :by, #at = :at"),
		ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_not_exists(#decision) AND #expires > :now"),
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK, "#decision": aDecision, "#by": aDecidedBy, "#at": aDecidedAt, "#expires": aExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":decision": str(string(d)),
			":by":       str(by),
			":at":       str(record.FormatTime(now)),
			":now":      str(record.FormatTime(now)),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
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
