package compiler

import (
	"fmt"
	"math"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
)

// checkReadiness checks the readiness block beyond its schema: a
// calibration bin_width must divide 1 into equal bins, and calibration
// cannot do without the current configuration. Then it warns about tiers
// that cannot be met, or can be met too easily (the reference's loader
// warns the same way; readiness is advisory, so none of these is an
// error):
//
//   - a confidence, accuracy or calibration tier on a pipeline none of
//     whose steps records a confidence of its own (only human, webhook,
//     notify and sub-pipeline steps): the tier stays insufficient_data;
//   - a confidence tier without min_runs: one run decides it;
//   - accuracy.min_human_marked above min_marked: min_marked never
//     decides, min_human_marked does;
//   - a calibration bin_width above 0.2: bins that coarse hide
//     divergence;
//   - a calibration max_divergence below half the bin_width: a bin's own
//     width can exceed it, so even a well calibrated step is flagged.
func (c *checker) checkReadiness() {
	r := c.f.Pipeline.Readiness
	if r == nil {
		return
	}
	if cal := r.Calibration; cal != nil {
		if !dividesOne(cal.BinWidth) {
			c.ds.errorf(fieldPos(cal.Fields, "bin_width", cal.Pos), "readiness.calibration.bin_width: %s does not divide 1 into equal bins (use 0.05, 0.1, 0.2, 0.25, 0.5 or 1)", fmtNum(cal.BinWidth))
		}
		if !cal.RequireCurrentConfig {
			c.ds.errorf(fieldPos(cal.Fields, "require_current_config", cal.Pos), "readiness.calibration.require_current_config cannot be false: a calibration holds for one configuration only (the accuracy tier judges results across configurations)")
		}
	}
	judged := false
	for _, n := range c.f.Pipeline.Steps {
		judged = judged || pipeline.Judged(n)
	}
	if !judged {
		for _, t := range []struct {
			name string
			pos  pipeline.Pos
			set  bool
		}{
			{"confidence", fieldPos(r.Fields, "confidence", r.Pos), r.Confidence != nil},
			{"accuracy", fieldPos(r.Fields, "accuracy", r.Pos), r.Accuracy != nil},
			{"calibration", fieldPos(r.Fields, "calibration", r.Pos), r.Calibration != nil},
		} {
			if t.set {
				c.ds.warnf(t.pos, "readiness.%s: no step of this pipeline records a confidence of its own (human, webhook, notify and sub-pipeline steps do not), so the tier can never be met", t.name)
			}
		}
	}
	if cf := r.Confidence; cf != nil && !cf.Fields.Has("min_runs") {
		c.ds.warnf(cf.Pos, "readiness.confidence has no min_runs: a single run's confidence decides the tier")
	}
	if a := r.Accuracy; a != nil && a.MinHumanMarked > a.MinMarked {
		c.ds.warnf(fieldPos(a.Fields, "min_human_marked", a.Pos), "readiness.accuracy.min_human_marked %d is above min_marked %d: at least %d marked results are needed, so min_marked never decides", a.MinHumanMarked, a.MinMarked, a.MinHumanMarked)
	}
	if cal := r.Calibration; cal != nil && dividesOne(cal.BinWidth) {
		if cal.BinWidth > 0.2 {
			c.ds.warnf(fieldPos(cal.Fields, "bin_width", cal.Pos), "readiness.calibration.bin_width %s is wider than 0.2: bins that coarse can hide a divergence", fmtNum(cal.BinWidth))
		}
		if cal.MaxDivergence < cal.BinWidth/2 {
			c.ds.warnf(fieldPos(cal.Fields, "max_divergence", cal.Pos), "readiness.calibration.max_divergence %s is below half the bin_width %s: a bin's own width can exceed it, so even a well calibrated step would fail", fmtNum(cal.MaxDivergence), fmtNum(cal.BinWidth))
		}
	}
}

// dividesOne reports whether 1/w bins of width w make exactly 1.
func dividesOne(w float64) bool {
	if !(w > 0 && w <= 1) {
		return false
	}
	n := math.Round(1 / w)
	return n >= 1 && math.Abs(n*w-1) < 1e-9
}

func fmtNum(f float64) string {
	s := fmt.Sprintf("%g", f)
	return strings.TrimSuffix(s, ".0")
}
