package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// CreateRun implements store.Store: one conditional PutItem.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	r, err := store.NormalizeRun(r)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	_, err = s.db.PutItem(ctx, &PutItemInput{
		TableName:           s.table,
		Item:                runItem(r),
		ConditionExpression: "attribute_not_exists(#pk)",
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
	out, err := s.db.GetItem(ctx, &GetItemInput{
		TableName:      s.table,
		Key:            key(runPK(id), skRun),
		ConsistentRead: true,
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
	err := s.queryPartition(ctx, id, false, func(m Item) error {
		sk, ok := m[AttrSK].Str()
		switch {
		case !ok:
			return fmt.Errorf("item without %s", AttrSK)
		case sk == skRun:
			r, err := decodeRun(m)
			if err != nil {
				return err
			}
			run = &r
		case strings.HasPrefix(sk, prefixStep):
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
func (s *Store) queryPartition(ctx context.Context, runID string, stepsOnly bool, fn func(Item) error) error {
	in := &QueryInput{
		TableName:                s.table,
		KeyConditionExpression:   "#pk = :pk",
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: Item{
			":pk": S(runPK(runID)),
		},
		ConsistentRead: true,
	}
	if stepsOnly {
		in.KeyConditionExpression = "#pk = :pk AND begins_with(#sk, :step)"
		in.ExpressionAttributeNames["#sk"] = AttrSK
		in.ExpressionAttributeValues[":step"] = S(prefixStep)
	}
	return s.query(ctx, in, func(page []Item) (bool, error) {
		for _, m := range page {
			if err := fn(m); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// query reads in's pages in order, handing each to fn until fn returns
// false or the last page has been read.
func (s *Store) query(ctx context.Context, in *QueryInput, fn func([]Item) (bool, error)) error {
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return err
		}
		more, err := fn(out.Items)
		if err != nil || !more || len(out.LastEvaluatedKey) == 0 {
			return err
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// terminalCondition is the condition of a run update: the run exists and
// has not ended.
func terminalCondition(names map[string]string, values Item) string {
	names["#pk"] = AttrPK
	names["#status"] = aStatus
	var ph []string
	for _, st := range store.RunStatuses() {
		if st.Terminal() {
			p := ":t_" + string(st)
			values[p] = S(string(st))
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
	values := Item{
		":status": S(string(u.Status)),
		":gsi2pk": S(prefixStatus + string(u.Status)),
	}
	cond := terminalCondition(names, values)
	set := []string{"#status = :status", "#gsi2pk = :gsi2pk"}
	var remove []string
	if u.Reason != "" {
		set = append(set, "#reason = :reason")
		values[":reason"] = S(u.Reason)
	} else {
		remove = append(remove, "#reason")
	}
	if u.CompletedAt != nil {
		set = append(set, "#completed = :completed")
		names["#completed"] = aCompletedAt
		values[":completed"] = S(record.FormatTime(*u.CompletedAt))
	}
	if u.ResumedAt != nil {
		set = append(set, "#resumed = :resumed")
		names["#resumed"] = aResumedAt
		values[":resumed"] = S(record.FormatTime(*u.ResumedAt))
	}
	if len(u.FinalOutput) > 0 {
		set = append(set, "#final = :final")
		names["#final"] = aFinalOutput
		values[":final"] = S(string(u.FinalOutput))
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
	_, err = s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(runPK(id), skRun),
		UpdateExpression:          expr,
		ConditionExpression:       cond,
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
	out, err := s.db.GetItem(ctx, &GetItemInput{
		TableName:                s.table,
		Key:                      key(runPK(id), skRun),
		ConsistentRead:           true,
		ProjectionExpression:     "#status",
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
	values := Item{
		":key":  S(k),
		":keys": SS(k),
		":in":   num(u.InputTokens),
		":out":  num(u.OutputTokens),
	}
	expr := "ADD #in :in, #out :out, #keys :keys"
	if u.CostUSD != nil {
		expr += ", #cost :cost"
		names["#cost"] = aCostUSD
		values[":cost"] = flt(*u.CostUSD)
	}
	_, err := s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(runPK(runID), skRun),
		UpdateExpression:          expr,
		ConditionExpression:       "attribute_exists(#pk) AND NOT contains(#keys, :key)",
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
// filter otherwise. Without filters it merges the status partitions. A team
// has no index: it is a filter on whichever partitions are read, so a team
// with few runs among many costs reading the others; a stage is a filter
// the same way. An offset is read and dropped: a page at Offset costs
// reading Offset+Limit index items (store.MaxRunOffset bounds it).
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	f, err := store.NormalizeRunFilter(f)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	// filters adds the team and stage filters, when there are, to more.
	filters := func(more ...equals) []equals {
		if f.Team != "" {
			more = append(more, equals{aTeam, f.Team})
		}
		if f.Stage != "" {
			more = append(more, equals{aStage, f.Stage})
		}
		return more
	}
	want := f.Offset + f.Limit
	var runs []listed
	switch {
	case f.Pipeline != "" && f.Status != "" && !f.Status.Terminal():
		runs, err = s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(f.Status), filters(equals{aPipeline, f.Pipeline}), want)
	case f.Pipeline != "" && f.Status != "":
		runs, err = s.queryIndex(ctx, IndexByPipeline, AttrGSI1PK, AttrGSI1SK, prefixPipeline+escape(f.Pipeline), filters(equals{aStatus, string(f.Status)}), want)
	case f.Pipeline != "":
		runs, err = s.queryIndex(ctx, IndexByPipeline, AttrGSI1PK, AttrGSI1SK, prefixPipeline+escape(f.Pipeline), filters(), want)
	case f.Status != "":
		runs, err = s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(f.Status), filters(), want)
	default:
		for _, st := range store.RunStatuses() {
			part, err := s.queryIndex(ctx, IndexByStatus, AttrGSI2PK, AttrGSI2SK, prefixStatus+string(st), filters(), want)
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
	runs = runs[min(f.Offset, len(runs)):]
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

// equals keeps the items whose string attribute attr equals value.
type equals struct{ attr, value string }

// queryIndex reads up to limit runs from one index partition, newest first,
// keeping only the items that pass every filter.
func (s *Store) queryIndex(ctx context.Context, index, pkAttr, skAttr, pk string, filters []equals, limit int) ([]listed, error) {
	backwards := false
	in := &QueryInput{
		TableName:                 s.table,
		IndexName:                 index,
		KeyConditionExpression:    "#pk = :pk",
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: Item{":pk": S(pk)},
		ScanIndexForward:          &backwards,
		Limit:                     int32(limit),
	}
	if len(filters) > 0 {
		conds := make([]string, len(filters))
		for i, f := range filters {
			name, value := fmt.Sprintf("#f%d", i), fmt.Sprintf(":f%d", i)
			conds[i] = name + " = " + value
			in.ExpressionAttributeNames[name] = f.attr
			in.ExpressionAttributeValues[value] = S(f.value)
		}
		in.FilterExpression = strings.Join(conds, " AND ")
		// Limit counts items read before the filter: read wider pages.
		in.Limit = int32(min(max(2*limit, 100), 1000))
	}
	var runs []listed
	err := s.query(ctx, in, func(page []Item) (bool, error) {
		for _, m := range page {
			r, err := decodeRun(m)
			if err != nil {
				return false, err
			}
			sk, ok := m[skAttr].Str()
			if !ok {
				return false, fmt.Errorf("index item without %s", skAttr)
			}
			runs = append(runs, listed{sk: sk, run: r.Summary()})
		}
		return len(runs) < limit, nil
	})
	return runs, err
}
