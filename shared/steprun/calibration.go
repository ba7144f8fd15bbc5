package steprun

import (
	"context"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// CalibrationStore is the part of store.FeedbackStore the handler uses:
// it records every gated step's sample in its bucket and reads a
// calibrated step's bucket. Both stores implement it; a Store that does
// not leaves the history unrecorded, and a calibrated step then finds
// its bin unvalidated.
type CalibrationStore interface {
	RecordSample(ctx context.Context, s store.Sample) error
	BucketSamples(ctx context.Context, b store.Bucket) ([]store.Sample, error)
}

var _ CalibrationStore = (store.Store)(nil)

// calibrate looks a step's effective confidence up in its bucket (the
// configuration rec records) and returns the calibration section of its
// trust report and C: the bin's mean label when the bin is validated; 0
// when it is not and the step escalates uncalibrated answers; else nil.
// A failed read counts as an unvalidated bin (its error is reported).
func (t *taskRun) calibrate(ctx context.Context, cal *pipeline.Calibration, rec store.StepRecord, confidence float64) (*store.CalibrationResult, *float64) {
	b := store.BucketOf(t.req.Pipeline.Name, rec)
	res := &store.CalibrationResult{Enforced: cal.Enforce, Bucket: b, BucketKey: b.Key(), BinWidth: cal.BinWidth, NMin: cal.NMin,
		OnUncalibrated: cal.OnUncalibrated}
	var samples []store.Sample
	cs, ok := t.h.Store.(CalibrationStore)
	if !ok {
		res.Error = "the store keeps no calibration history"
	} else {
		var err error
		samples, err = cs.BucketSamples(ctx, b)
		if err != nil {
			res.Error = err.Error()
			t.h.log.Warn("calibration lookup failed", "run", t.req.Run.ID, "step", rec.Name, "error", err.Error())
		}
	}
	bin := store.BinOf(samples, confidence, cal.BinWidth, cal.NMin)
	res.Bin = [2]float64{bin.Lo, bin.Hi}
	res.N, res.Mean, res.Validated = bin.N, bin.Mean, bin.Validated
	switch {
	case bin.Validated:
		c := *bin.Mean
		return res, &c
	case cal.OnUncalibrated == pipeline.UncalibratedEscalate:
		zero := 0.0
		return res, &zero
	}
	return res, nil
}

// recordSample adds a gated step's execution to its bucket's history:
// its effective confidence and whether a deterministic check failed. It
// is bookkeeping after the step's record: a failure is logged, not the
// step's.
func (t *taskRun) recordSample(ctx context.Context, rec store.StepRecord, sig Signals) {
	cs, ok := t.h.Store.(CalibrationStore)
	if !ok || t.req.Pipeline.Name == "" {
		return
	}
	s := store.Sample{Bucket: store.BucketOf(t.req.Pipeline.Name, rec), RunID: t.req.Run.ID, Step: rec.Name, StartedAt: rec.StartedAt,
		Trust: min(max(sig.SAfterV, 0), 1), DeterministicFailed: sig.D != nil && !*sig.D}
	if err := cs.RecordSample(ctx, s); err != nil {
		t.h.log.Warn("calibration sample not recorded", "run", t.req.Run.ID, "step", rec.Name, "error", err.Error())
	}
}
