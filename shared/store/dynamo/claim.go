package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// ClaimRetention is how long a run claim item outlives its expiry before
// DynamoDB's TTL deletes it.
const ClaimRetention = 24 * time.Hour

const (
	prefixDriver = "DRIVER#"
	skDriver     = "DRIVER"

	aHolder = "holder"
	aPID    = "pid"
	aHost   = "host"
)

func claimItem(c store.RunClaim) Item {
	m := Item{
		AttrPK:  S(prefixDriver + escape(c.RunID)),
		AttrSK:  S(skDriver),
		AttrTTL: num(c.ExpiresAt.Add(ClaimRetention).Unix()),
	}
	m.s(aRunID, c.RunID)
	m.s(aHolder, c.Holder)
	m.n(aPID, int64(c.PID))
	m.s(aHost, c.Host)
	m.t(aExpiresAt, &c.ExpiresAt)
	return m
}

func readClaim(m Item) (store.RunClaim, error) {
	r := reader{m: m}
	c := store.RunClaim{RunID: r.s(aRunID), Holder: r.s(aHolder), PID: int(r.n(aPID)), Host: r.s(aHost), ExpiresAt: r.time(aExpiresAt)}
	return c, r.err
}

// ClaimRun implements store.Store with one PutItem whose condition is
// ClaimTaken's rule: no item, or the item names this holder, or its
// expiresAt is at or before now, or it names the holder taken over. A
// refused claimer gets the stored item back with the refusal.
func (s *Store) ClaimRun(ctx context.Context, c store.RunClaim, takeover string, now time.Time) (store.RunClaim, bool, error) {
	if err := store.CheckRunClaim(c, now); err != nil {
		return store.RunClaim{}, false, fmt.Errorf("claim run: %w", err)
	}
	c.ExpiresAt = c.ExpiresAt.UTC()
	cond := "attribute_not_exists(#pk) OR #holder = :me OR #exp <= :now"
	values := Item{":me": S(c.Holder), ":now": S(record.FormatTime(now))}
	if takeover != "" {
		cond += " OR #holder = :takeover"
		values[":takeover"] = S(takeover)
	}
	put := &PutItemInput{
		TableName:                           s.table,
		Item:                                claimItem(c),
		ConditionExpression:                 cond,
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#holder": aHolder, "#exp": aExpiresAt},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: ReturnAllOld,
	}
	for range claimRounds {
		_, err := s.db.PutItem(ctx, put)
		if err == nil {
			return c, true, nil
		}
		old, ok := conditionFailed(err)
		if !ok {
			return store.RunClaim{}, false, fmt.Errorf("claim run %q: %w", c.RunID, err)
		}
		if old == nil {
			out, err := s.db.GetItem(ctx, &GetItemInput{TableName: s.table, Key: key(prefixDriver+escape(c.RunID), skDriver), ConsistentRead: true})
			if err != nil {
				return store.RunClaim{}, false, fmt.Errorf("claim run %q: %w", c.RunID, err)
			}
			if old = out.Item; old == nil {
				continue // released and expired meanwhile: try again
			}
		}
		stored, err := readClaim(old)
		if err != nil {
			return store.RunClaim{}, false, fmt.Errorf("claim run %q: %w", c.RunID, err)
		}
		return stored, false, nil
	}
	return store.RunClaim{}, false, fmt.Errorf("claim run %q: the claim kept changing under contention", c.RunID)
}

// ReleaseRun implements store.Store: the claim is made to lapse (holder
// "-", expired at the epoch) by an UpdateItem conditional on the holder,
// so a claim another holder took meanwhile is left alone.
func (s *Store) ReleaseRun(ctx context.Context, runID, holder string) error {
	if runID == "" || holder == "" {
		return fmt.Errorf("release run: %w: empty run ID or holder", store.ErrInvalid)
	}
	_, err := s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                s.table,
		Key:                      key(prefixDriver+escape(runID), skDriver),
		UpdateExpression:         "SET #holder = :none, #exp = :epoch",
		ConditionExpression:      "#holder = :holder",
		ExpressionAttributeNames: map[string]string{"#holder": aHolder, "#exp": aExpiresAt},
		ExpressionAttributeValues: Item{
			":none":   S("-"),
			":epoch":  S(record.FormatTime(time.Unix(0, 0).UTC())),
			":holder": S(holder),
		},
	})
	if _, ok := conditionFailed(err); ok {
		return nil // not (or no longer) this holder's claim
	}
	if err != nil {
		return fmt.Errorf("release run %q: %w", runID, err)
	}
	return nil
}
