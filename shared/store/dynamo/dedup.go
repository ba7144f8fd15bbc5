package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// claimRounds bounds the claim loop. Every failed round means another
// claimer changed the item, and a changed item holds for a while, so two
// rounds settle all but pathological races.
const claimRounds = 8

var errContention = errors.New("the dedup claim kept changing under contention")

// ClaimDedup implements store.Store. The claim item names the run holding
// the key and when it claimed it. A claimer first writes the item if absent
// (one PutItem). If it exists, the claimer judges it by the holder's run
// status (one GetItem) and store.ClaimHolds; a lapsed claim is taken over by
// a PutItem conditional on the item still naming the same holder and claim
// time — compare-and-swap, so of concurrent claimers exactly one wins and the
// others, reading again, see the winner.
func (s *Store) ClaimDedup(ctx context.Context, pipeline, fingerprint, runID string, window time.Duration, now time.Time) (string, bool, error) {
	if err := store.CheckClaim(pipeline, fingerprint, runID, window, now); err != nil {
		return "", false, fmt.Errorf("claim dedup: %w", err)
	}
	pk := prefixDedup + escape(pipeline) + "#" + escape(fingerprint)
	claim := Item{
		AttrPK:  S(pk),
		AttrSK:  S(skDedup),
		AttrTTL: num(now.Add(window + DedupRetention).Unix()),
	}
	claim.s(aPipeline, pipeline)
	claim.s(aFingerprint, fingerprint)
	claim.s(aRunID, runID)
	claim.t(aClaimedAt, &now)

	put := &PutItemInput{
		TableName:                           s.table,
		Item:                                claim,
		ConditionExpression:                 "attribute_not_exists(#pk)",
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
		ReturnValuesOnConditionCheckFailure: ReturnAllOld,
	}
	for range claimRounds {
		_, err := s.db.PutItem(ctx, put)
		if err == nil {
			return "", true, nil
		}
		old, ok := conditionFailed(err)
		if !ok {
			return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, err)
		}
		if old == nil {
			// The claimer was refused but got no item back; read it.
			if old, err = s.getClaim(ctx, pk); err != nil {
				return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, err)
			}
			if old == nil {
				continue // deleted meanwhile: try the plain write again
			}
		}
		r := reader{m: old}
		holder, at := r.s(aRunID), r.s(aClaimedAt)
		claimedAt := r.time(aClaimedAt)
		if r.err != nil {
			return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, r.err)
		}
		if holder == runID {
			return "", true, nil
		}
		status, exists, err := s.runStatus(ctx, holder)
		if err != nil {
			return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, err)
		}
		if store.ClaimHolds(claimedAt, exists, status, window, now) {
			return holder, false, nil
		}
		// Take the lapsed claim over, if it is still the one judged.
		_, err = s.db.PutItem(ctx, &PutItemInput{
			TableName:                s.table,
			Item:                     claim,
			ConditionExpression:      "#run = :holder AND #at = :at",
			ExpressionAttributeNames: map[string]string{"#run": aRunID, "#at": aClaimedAt},
			ExpressionAttributeValues: Item{
				":holder": S(holder),
				":at":     S(at),
			},
		})
		if err == nil {
			return "", true, nil
		}
		if _, ok := conditionFailed(err); !ok {
			return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, err)
		}
		// Someone else took it over first: judge the new holder.
	}
	return "", false, fmt.Errorf("claim dedup for run %q: %w", runID, errContention)
}

func (s *Store) getClaim(ctx context.Context, pk string) (Item, error) {
	out, err := s.db.GetItem(ctx, &GetItemInput{
		TableName:      s.table,
		Key:            key(pk, skDedup),
		ConsistentRead: true,
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// ReleaseDedup implements store.Store: the claim is emptied (no holder,
// claimed at the epoch) so that the next claimer takes it at once; a
// conditional write, so a claim another run took meanwhile is left alone.
func (s *Store) ReleaseDedup(ctx context.Context, pipeline, fingerprint, runID string) error {
	if pipeline == "" || fingerprint == "" || runID == "" {
		return fmt.Errorf("release dedup: %w: empty pipeline, fingerprint or run id", store.ErrInvalid)
	}
	pk := prefixDedup + escape(pipeline) + "#" + escape(fingerprint)
	_, err := s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                s.table,
		Key:                      key(pk, skDedup),
		UpdateExpression:         "SET #run = :none, #at = :epoch",
		ConditionExpression:      "#run = :holder",
		ExpressionAttributeNames: map[string]string{"#run": aRunID, "#at": aClaimedAt},
		ExpressionAttributeValues: Item{
			":none":   S("-"),
			":epoch":  S(record.FormatTime(time.Unix(0, 0).UTC())),
			":holder": S(runID),
		},
	})
	if _, ok := conditionFailed(err); ok {
		return nil // not (or no longer) this run's claim
	}
	if err != nil {
		return fmt.Errorf("release dedup for run %q: %w", runID, err)
	}
	return nil
}
