package dynamo

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// PutStep implements store.Store: one PutItem, conditional on the key being
// free, holding a record with the same digest, or holding a waiting record
// (which the write replaces). A repeat rewrites identical content; a
// different record at a finished one fails the condition and changes
// nothing.
func (s *Store) PutStep(ctx context.Context, rec store.StepRecord) error {
	rec, err := store.NormalizeStep(rec)
	if err != nil {
		return fmt.Errorf("put step: %w", err)
	}
	digest, err := record.StepDigest(rec)
	if err != nil {
		return fmt.Errorf("put step %q: %w", rec.Name, err)
	}
	_, err = s.db.PutItem(ctx, &PutItemInput{
		TableName:                 s.table,
		Item:                      stepItem(rec, digest),
		ConditionExpression:       "attribute_not_exists(#pk) OR #digest = :digest OR #status = :waiting",
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#digest": aDigest, "#status": aStatus},
		ExpressionAttributeValues: Item{":digest": S(digest), ":waiting": S(string(store.StepWaiting))},
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("put step %q attempt %d of run %q: %w: a different record is stored", rec.Name, rec.Attempt, rec.RunID, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("put step %q attempt %d of run %q: %w", rec.Name, rec.Attempt, rec.RunID, err)
	}
	return nil
}

// ListSteps implements store.Store: one strongly consistent Query of the
// run's step items, sorted into execution order.
func (s *Store) ListSteps(ctx context.Context, runID string) ([]store.StepRecord, error) {
	var recs []store.StepRecord
	err := s.queryPartition(ctx, runID, true, func(m Item) error {
		rec, err := decodeStep(m)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list steps of run %q: %w", runID, err)
	}
	store.SortSteps(recs)
	return recs, nil
}
