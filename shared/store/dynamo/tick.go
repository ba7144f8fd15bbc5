package dynamo

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

const (
	prefixTick = "TICK#"

	aSchedule = "schedule"
	aTick     = "tick"
)

func tickKey(c store.TickClaim) (pk, sk string) {
	return prefixTick + escape(c.Schedule), prefixTick + record.FormatTime(c.Tick)
}

func tickItem(c store.TickClaim) Item {
	pk, sk := tickKey(c)
	m := Item{AttrPK: S(pk), AttrSK: S(sk), AttrTTL: num(c.Tick.Add(store.TickRetention).Unix())}
	m.s(aSchedule, c.Schedule)
	m.t(aTick, &c.Tick)
	m.s(aHolder, c.Holder)
	m.s(aRunID, c.RunID)
	m.t(aClaimedAt, &c.ClaimedAt)
	return m
}

func readTick(m Item) (store.TickClaim, error) {
	r := reader{m: m}
	c := store.TickClaim{Schedule: r.s(aSchedule), Tick: r.time(aTick), Holder: r.s(aHolder), RunID: r.s(aRunID), ClaimedAt: r.time(aClaimedAt)}
	return c, r.err
}

// ClaimTick implements store.TickClaimer with one PutItem conditional on
// the item's absence or on its naming the same holder; a refused claimer
// gets the stored item back with the refusal. The item lives until
// DynamoDB's TTL deletes it, store.TickRetention after the tick.
func (s *Store) ClaimTick(ctx context.Context, c store.TickClaim) (store.TickClaim, bool, error) {
	c, err := store.NormalizeTickClaim(c)
	if err != nil {
		return store.TickClaim{}, false, fmt.Errorf("claim tick: %w", err)
	}
	pk, sk := tickKey(c)
	put := &PutItemInput{
		TableName:                           s.table,
		Item:                                tickItem(c),
		ConditionExpression:                 "attribute_not_exists(#pk)",
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
		ReturnValuesOnConditionCheckFailure: ReturnAllOld,
	}
	_, err = s.db.PutItem(ctx, put)
	if err == nil {
		return c, true, nil
	}
	old, ok := conditionFailed(err)
	if !ok {
		return store.TickClaim{}, false, fmt.Errorf("claim tick %q at %s: %w", c.Schedule, sk, err)
	}
	if old == nil {
		out, err := s.db.GetItem(ctx, &GetItemInput{TableName: s.table, Key: key(pk, sk), ConsistentRead: true})
		if err != nil {
			return store.TickClaim{}, false, fmt.Errorf("claim tick %q at %s: %w", c.Schedule, sk, err)
		}
		if old = out.Item; old == nil {
			return store.TickClaim{}, false, fmt.Errorf("claim tick %q at %s: the claim vanished", c.Schedule, sk)
		}
	}
	stored, err := readTick(old)
	if err != nil {
		return store.TickClaim{}, false, fmt.Errorf("claim tick %q at %s: %w", c.Schedule, sk, err)
	}
	return stored, stored.Holder == c.Holder, nil
}
