package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// CreateRun implements store.Store: one conditional PutItem.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	r, err := store.NormalizeRun(r)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                runItem(r),
		ConditionExpression: aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK,
		},
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("create run %q: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create run %q: %w", r.ID, err)
	}
	return nil
}

// GetRun implements store.Store: one strongly consistent GetItem.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(runPK(id), skRun),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, err)
	}
	if out.Item == nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	r, err := decodeRun(out.Item)
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, err)
	}
	return r, nil
}

// GetRunWithSteps implements store.Store: one strongly consistent Query of
// the run's partition, which holds the run item and its step items.
func (s *Store) GetRunWithSteps(ctx context.Context, id string) (store.Run, []store.StepRecord, error) {
	var run *store.Run
	var steps []store.StepRecord
	err := s.queryPartition(ctx, id, false, func(m map[string]types.AttributeValue) error {
		sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
		switch {
		case sk == nil:
			return fmt.Errorf("item without %s", AttrSK)
		case sk.Value == skRun:
			r, err := decodeRun(m)
			if err != nil {
				return err
			}
			run = &r
		case strings.HasPrefix(sk.Value, prefixStep):
			rec, err := decodeStep(m)
			if err != nil {
				return err
			}
			steps = append(steps, rec)
		}
		return nil
	})
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, err)
	}
	if run == nil {
		return store.Run{}, nil, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	store.SortSteps(steps)
	return *run, steps, nil
}

// queryPartition reads every item of a run's partition (only its steps when
// stepsOnly), strongly consistent, page by page.
func (s *Store) queryPartition(ctx context.Context, runID string, stepsOnly bool, fn func(map[string]types.AttributeValue) error) error {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(runPK(runID)),
		},
		ConsistentRead: aws.Bool(true),
	}
	if stepsOnly {
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :step)")
		in.ExpressionAttributeNames["#sk"] = AttrSK
		in.ExpressionAttributeValues[":step"] = str(prefixStep)
	}
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, m := range out.Items {
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// terminalCondition is the condition of a run update: the run exists and
// has not ended.
func terminalCondition(names map[string]string, values map[string]types.AttributeValue) string {
	names["#pk"] = AttrPK
	names["#status"] = aStatus
	var ph []string
	for _, st := range store.RunStatuses() {
		if st.Terminal() {
			p := ":t_" + string(st)
			values[p] = str(string(st))
			ph = append(ph, p)
		}
	}
	return "attribute_exists(#pk) AND NOT (#status IN (" + strings.Join(ph, ", ") + "))"
}

// UpdateRun implements store.Store: one UpdateItem, conditional on the run
// not having ended. When the condition fails, a projected GetItem tells a
// missing run from an ended one (an ended run never changes again, so the
// read cannot race).
func (s *Store) UpdateRun(ctx context.Context, id string, u store.RunUpdate) error {
	u, err := store.NormalizeRunUpdate(u)
	if err != nil {
		return fmt.Errorf("update run %q: %w", id, err)
	}
	names := map[string]string{"#reason": aReason, "#gsi2pk": AttrGSI2PK}
	values := map[string]types.AttributeValue{
		":status": str(string(u.Status)),
		":gsi2pk": str(prefixStatus + string(u.Status)),
	}
	cond := terminalCondition(names, values)
	set := []string{"#status = :status", "#gsi2pk = :gsi2pk"}
	var remove []string
	if u.Reason != "" {
		set = append(set, "#reason = :reason")
		values[":reason"] = str(u.Reason)
	} else {
		remove = append(remove, "#reason")
	}
	if u.CompletedAt != nil {
		set = append(set, "#completed = :completed")
		names["#completed"] = aCompletedAt
		values[":completed"] = str(record.FormatTime(*u.CompletedAt))
	}
	if u.ResumedAt != nil {
		set = append(set, "#resumed = :resumed")
		names["#resumed"] = aResumedAt
		values[":resumed"] = str(record.FormatTime(*u.ResumedAt))
	}
	if len(u.FinalOutput) > 0 {
		set = append(set, "#final = :final")
		names["#final"] = aFinalOutput
		values[":final"] = str(string(u.FinalOutput))
	}
	if u.Usage != nil {
		set = append(set, "#in = :in", "#out = :out")
		names["#in"], names["#out"], names["#cost"] = aInputTokens, aOutputTokens, aCostUSD
		values[":in"], values[":out"] = num(u.Usage.InputTokens), num(u.Usage.OutputTokens)
		if u.Usage.CostUSD != nil {
			set = append(set, "#cost = :cost")
			values[":cost"] = flt(*u.Usage.CostUSD)
		} else {
			remove = append(remove, "#cost")
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(id), skRun),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if _, ok := conditionFailed(err); ok {
		cur, found, err := s.runStatus(ctx, id)
		switch {
		case err != nil:
			return fmt.Errorf("update run %q: %w", id, err)
		case !found:
			return fmt.Errorf("update run %q: %w", id, store.ErrNotFound)
		case cur == u.Status:
			return nil // the same ending again: the first one stands
		default:
			return fmt.Errorf("update run %q: %w: run is %s, cannot become %s", id, store.ErrConflict, cur, u.Status)
		}
	}
	if err != nil {
		return fmt.Errorf("update run %q: %w", id, err)
	}
	return nil
}

// runStatus reads only a run's status, strongly consistent.
func (s *Store) runStatus(ctx context.Context, id string) (store.RunStatus, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(runPK(id), skRun),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#status"),
		ExpressionAttributeNames: map[string]string{"#status": aStatus},
	})
	if err != nil {
		return "", false, err
	}
	if out.Item == nil {
		return "", false, nil
	}
	r := reader{m: out.Item}
	st := store.RunStatus(r.s(aStatus))
	return st, true, r.err
}

// AddUsage implements store.Store: one UpdateItem that adds the counters and
// the contribution key to the run's key set, conditional on the key not
// being in the set yet.
func (s *Store) AddUsage(ctx context.Context, runID, k string, u store.Usage) error {
	if err := store.CheckUsage(k, u); err != nil {
		return fmt.Errorf("add usage to run %q: %w", runID, err)
	}
	names := map[string]string{"#pk": AttrPK, "#keys": aUsageKeys, "#in": aInputTokens, "#out": aOutputTokens}
	values := map[string]types.AttributeValue{
		":key":  str(k),
		":keys": &types.AttributeValueMemberSS{Value: []string{k}},
		":in":   num(u.InputTokens),
		":out":  num(u.OutputTokens),
	}
	expr := "ADD #in :in, #out :out, #keys :keys"
	if u.CostUSD != nil {
		expr += ", #cost :cost"
		names["#cost"] = aCostUSD
		values[":cost"] = flt(*u.CostUSD)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(runPK(runID), skRun),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND NOT contains(#keys, :key)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if _, ok := conditionFailed(err); ok {
		_, found, err := s.runStatus(ctx, runID)
		switch {
		case err != nil:
			return fmt.Errorf("add usage to run %q: %w", runID, err)
		case !found:
			return fmt.Errorf("add usage to run %q: %w", runID, store.ErrNotFound)
		default:
			return nil // this contribution was counted already
		}
	}
	if err != nil {
		return fmt.Errorf("add usage to run %q: %w", runID, err)
	}
	return nil
}

// ListRuns implements store.Store. A pipeline's runs come from
// IndexByPipeline, a status's from IndexByStatus, both newest first. With
// both filters it reads the smaller side: the status index for the active
// and interrupted statuses (few runs), the pipeline index with a status
// filter otherwise. Without filters it merges the status partitions.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	f, err := store.NormalizeRunFilter(f)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var runs []listed
	switch {
	case f.Pipeline != "" && f.Status != "" && !f.Status.Terminal():
		runs, err = s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(f.Status), aPipeline, f.Pipeline, f.Limit)
	case f.Pipeline != "" && f.Status != "":
		runs, err = s.queryIndex(ctx, IndexByPipeline, AttrGSI1PK, AttrGSI1SK, prefixPipeline+escape(f.Pipeline), aStatus, string(f.Status), f.Limit)
	case f.Pipeline != "":
		runs, err = s.queryIndex(ctx, IndexByPipeline, AttrGSI1PK, AttrGSI1SK, prefixPipeline+escape(f.Pipeline), "", "", f.Limit)
	case f.Status != "":
		runs, err = s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(f.Status), "", "", f.Limit)
	default:
		for _, st := range store.RunStatuses() {
			part, err := s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(st), "", "", f.Limit)
			if err != nil {
				return nil, fmt.Errorf("list runs: %w", err)
			}
			runs = append(runs, part...)
		}
		// A run that changed status between two queries shows up twice.
		slices.SortFunc(runs, func(a, b listed) int { return strings.Compare(b.sk, a.sk) })
		runs = slices.CompactFunc(runs, func(a, b listed) bool { return a.run.ID == b.run.ID })
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if len(runs) > f.Limit {
		runs = runs[:f.Limit]
	}
	out := make([]store.Run, len(runs))
	for i, l := range runs {
		out[i] = l.run
	}
	return out, nil
}

type listed struct {
	sk  string
	run store.Run
}

// queryIndex reads up to limit runs from one index partition, newest first,
// keeping only items whose filterAttr equals filterValue when filterAttr is
// set.
func (s *Store) queryIndex(ctx context.Context, index, pkAttr, skAttr, pk, filterAttr, filterValue string, limit int) ([]listed, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	if filterAttr != "" {
		in.FilterExpression = aws.String("#f = :f")
		in.ExpressionAttributeNames["#f"] = filterAttr
		in.ExpressionAttributeValues[":f"] = str(filterValue)
		// Limit counts items read before the filter: read wider pages.
		in.Limit = aws.Int32(int32(min(max(2*limit, 100), 1000)))
	}
	var runs []listed
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() && len(runs) < limit {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range out.Items {
			r, err := decodeRun(m)
			if err != nil {
				return nil, err
			}
			sk, _ := m[skAttr].(*types.AttributeValueMemberS)
			if sk == nil {
				return nil, fmt.Errorf("index item without %s", skAttr)
			}
			runs = append(runs, listed{sk: sk.Value, run: r.Summary()})
		}
	}
	return runs, nil
}
