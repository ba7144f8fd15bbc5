package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// Feedback and calibration items (see the package doc):
//
//	run feedback   PK=RUN#<runId>                SK=FEEDBACK
//	step feedback  PK=RUN#<runId>                SK=FEEDBACK#<step>
//	sample         PK=BUCKET#<bucket key>        SK=<startedAt>#<runId>#<step>
//	bucket         PK=BUCKETS#<pipeline>         SK=<step>#<bucket key>
//
// A sample carries its labels (the step's and the run's feedback
// outcomes with their submission times), so that a bucket's labelled
// history is one Query of its partition. Feedback writes copy the
// outcome onto the samples it labels; every such copy is conditional on
// its submission time not being older than the one stored, so writes
// that cross leave the newest feedback whatever their order.
const (
	prefixBucket  = "BUCKET#"
	prefixBuckets = "BUCKETS#"
	skFeedback    = "FEEDBACK"

	aOutcome       = "outcome"
	aNotes         = "notes"
	aSubmittedAt   = "submittedAt"
	aTrust         = "trust"
	aDetFailed     = "deterministicFailed"
	aStepOutcome   = "stepOutcome"
	aStepFeedAt    = "stepFeedbackAt"
	aRunOutcome    = "runOutcome"
	aRunFeedAt     = "runFeedbackAt"
	aBucketKey     = "bucketKey"
	aBucketStep    = "bucketStep"
	aPromptHash    = "promptHash"
	feedbackPrefix = skFeedback + "#"
)

func feedbackSK(step string) string {
	if step == "" {
		return skFeedback
	}
	return feedbackPrefix + escape(step)
}

func sampleKey(b store.Bucket, s store.Sample) Item {
	return key(prefixBucket+b.Key(), record.FormatTime(s.StartedAt)+"#"+escape(s.RunID)+"#"+escape(s.Step))
}

// PutRunFeedback implements store.FeedbackStore: a GetItem of the run, a
// PutItem of the feedback, then a Query of the run's step records and an
// UpdateItem of each one's sample that exists, copying the outcome.
func (s *Store) PutRunFeedback(ctx context.Context, runID string, f store.Feedback) error {
	f, err := store.NormalizeFeedback(f)
	if err != nil {
		return fmt.Errorf("put feedback on run %q: %w", runID, err)
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("put feedback on run %q: %w", runID, err)
	}
	if err := s.putFeedbackItem(ctx, runID, "", f); err != nil {
		return fmt.Errorf("put feedback on run %q: %w", runID, err)
	}
	recs, err := s.ListSteps(ctx, runID)
	if err != nil {
		return fmt.Errorf("put feedback on run %q: %w", runID, err)
	}
	for _, rec := range recs {
		if !sampled(rec.Status) {
			continue
		}
		smp := store.Sample{RunID: runID, Step: rec.Name, StartedAt: rec.StartedAt}
		err := s.label(ctx, sampleKey(store.BucketOf(run.Pipeline, rec), smp), aRunOutcome, aRunFeedAt, f, true)
		if err != nil {
			return fmt.Errorf("put feedback on run %q: label step %q: %w", runID, rec.Name, err)
		}
	}
	return nil
}

// sampled reports whether a record in status st has (or will have) a
// calibration sample: the step reached its gate.
func sampled(st store.StepStatus) bool {
	switch st {
	case store.StepCompleted, store.StepStopped, store.StepEscalated, store.StepAborted, store.StepWaiting:
		return true
	}
	return false
}

// PutStepFeedback implements store.FeedbackStore: a GetItem of the run, a
// Query of the step's latest record, a PutItem of the feedback and an
// UpdateItem of the step's sample, which it creates when the step has
// not recorded it yet (a step waiting for a human check).
func (s *Store) PutStepFeedback(ctx context.Context, runID, step string, f store.Feedback) error {
	if step == "" {
		return fmt.Errorf("put feedback on a step of run %q: %w: empty step name", runID, store.ErrInvalid)
	}
	fail := func(err error) error { return fmt.Errorf("put feedback on step %q of run %q: %w", step, runID, err) }
	f, err := store.NormalizeFeedback(f)
	if err != nil {
		return fail(err)
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return fail(err)
	}
	var latest *store.StepRecord
	forward := false
	err = s.query(ctx, &QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    "#pk = :pk AND begins_with(#sk, :prefix)",
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: Item{":pk": S(runPK(runID)), ":prefix": S(prefixStep + escape(step) + "#")},
		ConsistentRead:            true,
		ScanIndexForward:          &forward,
		Limit:                     1,
	}, func(page []Item) (bool, error) {
		if len(page) == 0 {
			return true, nil
		}
		rec, err := decodeStep(page[0])
		if err != nil {
			return false, err
		}
		latest = &rec
		return false, nil
	})
	if err != nil {
		return fail(err)
	}
	if latest == nil {
		return fail(fmt.Errorf("%w: the run has no record of the step", store.ErrNotFound))
	}
	if err := s.putFeedbackItem(ctx, runID, step, f); err != nil {
		return fail(err)
	}
	if sampled(latest.Status) {
		smp := store.Sample{RunID: runID, Step: step, StartedAt: latest.StartedAt}
		if err := s.label(ctx, sampleKey(store.BucketOf(run.Pipeline, *latest), smp), aStepOutcome, aStepFeedAt, f, false); err != nil {
			return fail(fmt.Errorf("label the step's sample: %w", err))
		}
	}
	return nil
}

func (s *Store) putFeedbackItem(ctx context.Context, runID, step string, f store.Feedback) error {
	m := key(runPK(runID), feedbackSK(step))
	m.s(aRunID, runID)
	m.s(aStep, step)
	m.s(aOutcome, string(f.Outcome))
	m.s(aNotes, f.Notes)
	m.t(aSubmittedAt, &f.SubmittedAt)
	_, err := s.db.PutItem(ctx, &PutItemInput{TableName: s.table, Item: m})
	return err
}

// label copies f's outcome onto a sample under the attributes outcome
// and at, unless the sample holds newer feedback; existing limits it to
// a sample that exists. A refused condition is not an error.
func (s *Store) label(ctx context.Context, k Item, outcome, at string, f store.Feedback, existing bool) error {
	cond := "(attribute_not_exists(#at) OR #at <= :at)"
	names := map[string]string{"#o": outcome, "#at": at}
	if existing {
		cond = "attribute_exists(#pk) AND " + cond
		names["#pk"] = AttrPK
	}
	_, err := s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                 s.table,
		Key:                       k,
		UpdateExpression:          "SET #o = :o, #at = :at",
		ConditionExpression:       cond,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: Item{":o": S(string(f.Outcome)), ":at": S(record.FormatTime(f.SubmittedAt))},
	})
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	return err
}

// GetRunFeedback implements store.FeedbackStore: a GetItem of the run
// and one of its feedback.
func (s *Store) GetRunFeedback(ctx context.Context, runID string) (*store.Feedback, error) {
	f, err := s.getFeedback(ctx, runID, "")
	if err != nil {
		return nil, fmt.Errorf("get feedback on run %q: %w", runID, err)
	}
	return f, nil
}

// GetStepFeedback implements store.FeedbackStore.
func (s *Store) GetStepFeedback(ctx context.Context, runID, step string) (*store.Feedback, error) {
	if step == "" {
		return nil, fmt.Errorf("get feedback on a step of run %q: %w: empty step name", runID, store.ErrInvalid)
	}
	f, err := s.getFeedback(ctx, runID, step)
	if err != nil {
		return nil, fmt.Errorf("get feedback on step %q of run %q: %w", step, runID, err)
	}
	return f, nil
}

func (s *Store) getFeedback(ctx context.Context, runID, step string) (*store.Feedback, error) {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return nil, err
	}
	out, err := s.db.GetItem(ctx, &GetItemInput{TableName: s.table, Key: key(runPK(runID), feedbackSK(step)), ConsistentRead: true})
	if err != nil {
		return nil, err
	}
	if out.Item == nil {
		return nil, nil
	}
	r := reader{m: out.Item}
	f := store.Feedback{Outcome: store.Outcome(r.s(aOutcome)), Notes: r.s(aNotes), SubmittedAt: r.time(aSubmittedAt)}
	if r.err != nil {
		return nil, fmt.Errorf("decode feedback: %w", r.err)
	}
	return &f, nil
}

// RecordSample implements store.FeedbackStore: an UpdateItem that sets
// the sample's own attributes (feedback copied onto it stays), a PutItem
// of its bucket under the pipeline, and a GetItem of the run's feedback,
// copied onto the sample when there is some (feedback given on the run
// before this step finished).
func (s *Store) RecordSample(ctx context.Context, smp store.Sample) error {
	smp, err := store.NormalizeSample(smp)
	if err != nil {
		return fmt.Errorf("record sample: %w", err)
	}
	fail := func(err error) error {
		return fmt.Errorf("record sample of step %q of run %q: %w", smp.Step, smp.RunID, err)
	}
	b := smp.Bucket
	det := int64(0)
	if smp.DeterministicFailed {
		det = 1
	}
	k := sampleKey(b, smp)
	_, err = s.db.UpdateItem(ctx, &UpdateItemInput{
		TableName:                 s.table,
		Key:                       k,
		UpdateExpression:          "SET #run = :run, #step = :step, #trust = :trust, #det = :det",
		ExpressionAttributeNames:  map[string]string{"#run": aRunID, "#step": aStep, "#trust": aTrust, "#det": aDetFailed},
		ExpressionAttributeValues: Item{":run": S(smp.RunID), ":step": S(smp.Step), ":trust": flt(smp.Trust), ":det": num(det)},
	})
	if err != nil {
		return fail(err)
	}
	reg := key(prefixBuckets+escape(b.Pipeline), escape(b.Step)+"#"+b.Key())
	reg.s(aBucketKey, b.Key())
	reg.s(aPipeline, b.Pipeline)
	reg.s(aBucketStep, b.Step)
	reg.s(aExecutor, b.Executor)
	reg.s(aModel, b.Model)
	reg.s(aProvider, b.Provider)
	reg.s(aPromptHash, b.PromptHash)
	reg.s(aAgentVersion, b.AgentVersion)
	if _, err := s.db.PutItem(ctx, &PutItemInput{TableName: s.table, Item: reg}); err != nil {
		return fail(err)
	}
	out, err := s.db.GetItem(ctx, &GetItemInput{TableName: s.table, Key: key(runPK(smp.RunID), skFeedback), ConsistentRead: true})
	if err != nil {
		return fail(err)
	}
	if out.Item != nil {
		r := reader{m: out.Item}
		f := store.Feedback{Outcome: store.Outcome(r.s(aOutcome)), SubmittedAt: r.time(aSubmittedAt)}
		if r.err == nil && f.Outcome.Valid() {
			if err := s.label(ctx, k, aRunOutcome, aRunFeedAt, f, true); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

// BucketSamples implements store.FeedbackStore: one Query of the
// bucket's partition, newest first, up to MaxBucketSamples (pages
// included). Items a feedback write created for a sample not recorded
// yet carry no trust and are left out.
func (s *Store) BucketSamples(ctx context.Context, b store.Bucket) ([]store.Sample, error) {
	forward := false
	var out []store.Sample
	err := s.query(ctx, &QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    "#pk = :pk",
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: Item{":pk": S(prefixBucket + b.Key())},
		ScanIndexForward:          &forward,
	}, func(page []Item) (bool, error) {
		for _, m := range page {
			if _, ok := m[aTrust]; !ok {
				continue
			}
			r := reader{m: m}
			sk := r.s(AttrSK)
			smp := store.Sample{Bucket: b, RunID: r.s(aRunID), Step: r.s(aStep), DeterministicFailed: r.n(aDetFailed) != 0,
				StepFeedback: store.Outcome(r.s(aStepOutcome)), RunFeedback: store.Outcome(r.s(aRunOutcome))}
			if t := r.f(aTrust); t != nil {
				smp.Trust = *t
			}
			at, _, _ := strings.Cut(sk, "#")
			t, err := record.ParseTime(at)
			if err != nil {
				return false, fmt.Errorf("sample key %q: %w", sk, err)
			}
			smp.StartedAt = t
			if r.err != nil {
				return false, fmt.Errorf("decode sample: %w", r.err)
			}
			out = append(out, smp)
			if len(out) == store.MaxBucketSamples {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", b, err)
	}
	slices.Reverse(out)
	return out, nil
}

// ListBuckets implements store.FeedbackStore: one Query of the
// pipeline's bucket items.
func (s *Store) ListBuckets(ctx context.Context, pipeline, step string) ([]store.Bucket, error) {
	in := &QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    "#pk = :pk",
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: Item{":pk": S(prefixBuckets + escape(pipeline))},
	}
	if step != "" {
		in.KeyConditionExpression += " AND begins_with(#sk, :step)"
		in.ExpressionAttributeNames["#sk"] = AttrSK
		in.ExpressionAttributeValues[":step"] = S(escape(step) + "#")
	}
	var out []store.Bucket
	err := s.query(ctx, in, func(page []Item) (bool, error) {
		for _, m := range page {
			r := reader{m: m}
			b := store.Bucket{Pipeline: r.s(aPipeline), Step: r.s(aBucketStep), Executor: r.s(aExecutor), Model: r.s(aModel),
				Provider: r.s(aProvider), PromptHash: r.s(aPromptHash), AgentVersion: r.s(aAgentVersion)}
			if r.err != nil {
				return false, fmt.Errorf("decode bucket: %w", r.err)
			}
			out = append(out, b)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list buckets of pipeline %q: %w", pipeline, err)
	}
	slices.SortFunc(out, func(a, b store.Bucket) int {
		if c := strings.Compare(a.Step, b.Step); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
	return out, nil
}
