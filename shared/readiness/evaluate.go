package readiness

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// Verdict is a tier's outcome.
type Verdict string

// Verdicts.
const (
	Pass             Verdict = "pass"
	Fail             Verdict = "fail"
	InsufficientData Verdict = "insufficient_data"
	NotConfigured    Verdict = "not_configured"
)

// Tiers, in the order they are reported.
const (
	TierOperational = "operational"
	TierConfidence  = "confidence"
	TierAccuracy    = "accuracy"
	TierCalibration = "calibration"
)

// Tiers returns the tiers in order.
func Tiers() []string {
	return []string{TierOperational, TierConfidence, TierAccuracy, TierCalibration}
}

// Step verdicts (StepReport.Verdict).
const (
	StepReady         = "ready"
	StepNotReady      = "not_ready"
	StepBuilding      = "building"
	StepNoData        = "no_data"
	StepNotConfigured = "not_configured"
)

// Report is the readiness of a pipeline.
type Report struct {
	Pipeline  string       `json:"pipeline"`
	Stage     string       `json:"stage"`
	Config    string       `json:"config,omitempty"`
	Runs      int          `json:"runs"`
	Truncated bool         `json:"truncated,omitempty"`
	Feedback  bool         `json:"feedback"`
	At        time.Time    `json:"at"`
	Tiers     []TierResult `json:"tiers"` // the pipeline's verdict per tier: the worst of its steps'
	Steps     []StepReport `json:"steps"`
}

// StepReport is the readiness of one unit.
type StepReport struct {
	Unit
	Verdict string       `json:"verdict"`
	Results int          `json:"results"` // runs in which the step has a result
	Tiers   []TierResult `json:"tiers"`
}

// TierResult is one tier's verdict, why, and the figures behind it (one
// of the *Figures, nil when the tier is not configured or does not
// apply).
type TierResult struct {
	Tier    string  `json:"tier"`
	Verdict Verdict `json:"verdict"`
	Why     string  `json:"why"`
	Figures any     `json:"figures,omitempty"`
}

// OperationalFigures are the operational tier's figures.
type OperationalFigures struct {
	MinRuns            int            `json:"min_runs"`
	AcceptableStatuses []string       `json:"acceptable_statuses"`
	RunsAcceptable     int            `json:"runs_acceptable"`
	RunsCounted        int            `json:"runs_counted"`
	StatusCounts       map[string]int `json:"status_counts"`
	MaxAgeDays         int            `json:"max_age_days,omitempty"`
	CurrentConfigOnly  bool           `json:"current_config_only"`
}

// ConfidenceFigures are the confidence tier's figures.
type ConfidenceFigures struct {
	MinConfidence     float64  `json:"min_confidence"`
	MinRuns           int      `json:"min_runs,omitempty"`
	N                 int      `json:"n"`
	Mean              *float64 `json:"mean"`
	CurrentConfigOnly bool     `json:"current_config_only"`
}

// AccuracyFigures are the accuracy tier's figures.
type AccuracyFigures struct {
	MinAccuracy       *float64       `json:"min_accuracy,omitempty"`
	MinMarked         int            `json:"min_marked"`
	MinHumanMarked    int            `json:"min_human_marked,omitempty"`
	Marked            int            `json:"marked"`
	HumanMarked       int            `json:"human_marked"`
	Accuracy          *float64       `json:"accuracy"`
	Outcomes          map[string]int `json:"outcomes"`   // correct, partial, incorrect
	Provenance        map[string]int `json:"provenance"` // by label source
	CurrentConfigOnly bool           `json:"current_config_only"`
}

// CalibrationFigures are the calibration tier's figures.
type CalibrationFigures struct {
	NMin          int     `json:"n_min"`
	BinWidth      float64 `json:"bin_width"`
	MaxDivergence float64 `json:"max_divergence"`
	Marked        int     `json:"marked"` // marked results with a confidence, of the current config
	Bins          []Bin   `json:"bins"`   // the bins that hold any
}

// Bin is one calibration bin: the results whose confidence is in
// [Lo, Hi) (the last bin includes 1).
type Bin struct {
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	N          int     `json:"n"`
	MeanLabel  float64 `json:"mean_label"`
	Divergence float64 `json:"divergence"` // |mean label - midpoint|
	Validated  bool    `json:"validated"`  // N >= n_min
	Flagged    bool    `json:"flagged"`    // validated and Divergence >= max_divergence
}

// epsilon absorbs binary fractions in comparisons of figures with bars
// (0.85-0.7 is 0.15000000000000002).
const epsilon = 1e-9

// Evaluate judges the criteria r on e at time now (max_age_days counts
// back from it). A nil r leaves every tier not_configured.
func Evaluate(e Evidence, r *pipeline.Readiness, now time.Time) Report {
	rep := Report{Pipeline: e.Pipeline, Stage: e.Stage, Config: e.Config, Runs: e.Runs, Truncated: e.Truncated, Feedback: e.Feedback, At: now}
	if r == nil {
		r = &pipeline.Readiness{}
	}
	for _, u := range e.Units {
		res := e.Results[u.Name]
		sr := StepReport{Unit: u, Results: len(res)}
		sr.Tiers = []TierResult{
			operational(r.Operational, e, res, now),
			judged(u, r.Confidence != nil, TierConfidence, func() TierResult { return confidence(r.Confidence, e, res) }),
			judged(u, r.Accuracy != nil, TierAccuracy, func() TierResult { return accuracy(r.Accuracy, e, res) }),
			judged(u, r.Calibration != nil, TierCalibration, func() TierResult { return calibration(r.Calibration, e, res) }),
		}
		sr.Verdict = stepVerdict(sr)
		rep.Steps = append(rep.Steps, sr)
	}
	configured := map[string]bool{TierOperational: r.Operational != nil, TierConfidence: r.Confidence != nil,
		TierAccuracy: r.Accuracy != nil, TierCalibration: r.Calibration != nil}
	for i, tier := range Tiers() {
		rep.Tiers = append(rep.Tiers, summary(tier, configured[tier], rep.Steps, i))
	}
	return rep
}

// judged applies a confidence, accuracy or calibration tier to a unit
// whose answers carry a confidence of their own.
func judged(u Unit, set bool, tier string, eval func() TierResult) TierResult {
	switch {
	case !set:
		return TierResult{Tier: tier, Verdict: NotConfigured, Why: "not configured"}
	case !u.Judged:
		why := fmt.Sprintf("does not apply: a %s step's answer carries no confidence of its own", u.Executor)
		if u.Kind == KindParallel {
			why = "does not apply: no branch of the group answers with a confidence of its own"
		}
		return TierResult{Tier: tier, Verdict: NotConfigured, Why: why + " (human, webhook, notify and sub-pipeline answers do not)"}
	}
	return eval()
}

// current filters results to those of the current config when only.
func current(e Evidence, res []Result, only bool) []Result {
	if !only {
		return res
	}
	var out []Result
	for _, r := range res {
		if e.Config != "" && r.Config == e.Config {
			out = append(out, r)
		}
	}
	return out
}

// configNote says how current-config filtering shaped a count.
func configNote(e Evidence, only bool, all, kept int) string {
	switch {
	case !only:
		return ""
	case e.Config == "":
		return " (the pipeline's current config is unknown, so no run counts as current)"
	case kept < all:
		return fmt.Sprintf(" (%d of config %s; %d of earlier configs left out)", kept, e.Config, all-kept)
	}
	return fmt.Sprintf(" (all of config %s)", e.Config)
}

func operational(c *pipeline.ReadinessOperational, e Evidence, res []Result, now time.Time) TierResult {
	t := TierResult{Tier: TierOperational}
	if c == nil {
		t.Verdict, t.Why = NotConfigured, "not configured"
		return t
	}
	f := &OperationalFigures{MinRuns: c.MinRuns, AcceptableStatuses: c.AcceptableStatuses, MaxAgeDays: c.MaxAgeDays,
		CurrentConfigOnly: c.RequireCurrentConfig, StatusCounts: map[string]int{}}
	t.Figures = f
	recent := res
	if c.MaxAgeDays > 0 {
		cutoff := now.Add(-time.Duration(c.MaxAgeDays) * 24 * time.Hour)
		recent = nil
		for _, r := range res {
			if !r.At.Before(cutoff) {
				recent = append(recent, r)
			}
		}
	}
	counted := current(e, recent, c.RequireCurrentConfig)
	f.RunsCounted = len(counted)
	for _, r := range counted {
		f.StatusCounts[string(r.Status)]++
		if slices.Contains(c.AcceptableStatuses, string(r.Status)) {
			f.RunsAcceptable++
		}
	}
	age := ""
	if c.MaxAgeDays > 0 {
		age = fmt.Sprintf(" in the last %d days", c.MaxAgeDays)
	}
	t.Why = fmt.Sprintf("%d of %d runs%s ended %s%s; %d needed", f.RunsAcceptable, f.RunsCounted, age,
		strings.Join(c.AcceptableStatuses, " or "), configNote(e, c.RequireCurrentConfig, len(recent), len(counted)), c.MinRuns)
	if f.RunsAcceptable >= c.MinRuns {
		t.Verdict = Pass
	} else {
		t.Verdict = InsufficientData
	}
	return t
}

func confidence(c *pipeline.ReadinessConfidence, e Evidence, res []Result) TierResult {
	t := TierResult{Tier: TierConfidence}
	f := &ConfidenceFigures{MinConfidence: c.MinConfidence, MinRuns: c.MinRuns, CurrentConfigOnly: c.RequireCurrentConfig}
	t.Figures = f
	var answered []Result
	for _, r := range res {
		if r.Confidence != nil {
			answered = append(answered, r)
		}
	}
	counted := current(e, answered, c.RequireCurrentConfig)
	f.N = len(counted)
	note := configNote(e, c.RequireCurrentConfig, len(answered), len(counted))
	need := max(c.MinRuns, 1)
	if f.N == 0 || f.N < need {
		t.Verdict = InsufficientData
		t.Why = fmt.Sprintf("%d answers with a confidence%s; %d needed before the mean counts", f.N, note, need)
		if f.N > 0 {
			m := meanConfidence(counted)
			f.Mean = &m
		}
		return t
	}
	m := meanConfidence(counted)
	f.Mean = &m
	if m < c.MinConfidence-epsilon {
		t.Verdict = Fail
		t.Why = fmt.Sprintf("mean confidence %s over %d answers%s is below %s", num(m), f.N, note, num(c.MinConfidence))
	} else {
		t.Verdict = Pass
		t.Why = fmt.Sprintf("mean confidence %s over %d answers%s is at or above %s", num(m), f.N, note, num(c.MinConfidence))
	}
	return t
}

func meanConfidence(rs []Result) float64 {
	var sum float64
	for _, r := range rs {
		sum += *r.Confidence
	}
	return sum / float64(len(rs))
}

func accuracy(c *pipeline.ReadinessAccuracy, e Evidence, res []Result) TierResult {
	t := TierResult{Tier: TierAccuracy}
	f := &AccuracyFigures{MinAccuracy: c.MinAccuracy, MinMarked: c.MinMarked, MinHumanMarked: c.MinHumanMarked,
		CurrentConfigOnly: c.RequireCurrentConfig,
		Outcomes:          map[string]int{string(store.OutcomeCorrect): 0, string(store.OutcomePartial): 0, string(store.OutcomeIncorrect): 0},
		Provenance:        map[string]int{}}
	t.Figures = f
	var marked []Result
	for _, r := range res {
		if _, _, ok := r.Label(); ok {
			marked = append(marked, r)
		}
	}
	counted := current(e, marked, c.RequireCurrentConfig)
	var sum float64
	for _, r := range counted {
		l, src, _ := r.Label()
		sum += l
		f.Provenance[src]++
		switch l {
		case 1:
			f.Outcomes[string(store.OutcomeCorrect)]++
		case 0.5:
			f.Outcomes[string(store.OutcomePartial)]++
		default:
			f.Outcomes[string(store.OutcomeIncorrect)]++
		}
	}
	f.Marked, f.HumanMarked = len(counted), f.Provenance[store.LabelStepFeedback]
	note := configNote(e, c.RequireCurrentConfig, len(marked), len(counted))
	if f.Marked > 0 {
		a := sum / float64(f.Marked)
		f.Accuracy = &a
	}
	switch {
	case f.Marked < c.MinMarked:
		t.Verdict = InsufficientData
		t.Why = fmt.Sprintf("%d marked results%s; %d needed", f.Marked, note, c.MinMarked)
		if !e.Feedback {
			t.Why += "; this store keeps no feedback, so only failed deterministic checks mark results"
		} else if f.Marked == 0 {
			t.Why += " (mark results with stepline feedback RUN [STEP] --outcome correct|partial|incorrect)"
		}
	case f.HumanMarked < c.MinHumanMarked:
		t.Verdict = InsufficientData
		t.Why = fmt.Sprintf("%d of %d marked results%s were marked on the step by a person; %d needed", f.HumanMarked, f.Marked, note, c.MinHumanMarked)
	case c.MinAccuracy != nil && *f.Accuracy < *c.MinAccuracy-epsilon:
		t.Verdict = Fail
		t.Why = fmt.Sprintf("accuracy %s over %d marked results%s is below %s", num(*f.Accuracy), f.Marked, note, num(*c.MinAccuracy))
	case c.MinAccuracy != nil:
		t.Verdict = Pass
		t.Why = fmt.Sprintf("accuracy %s over %d marked results%s is at or above %s", num(*f.Accuracy), f.Marked, note, num(*c.MinAccuracy))
	default:
		t.Verdict = Pass
		t.Why = fmt.Sprintf("%d marked results%s (accuracy %s; no min_accuracy set)", f.Marked, note, num(*f.Accuracy))
	}
	return t
}

func calibration(c *pipeline.ReadinessCalibration, e Evidence, res []Result) TierResult {
	t := TierResult{Tier: TierCalibration}
	f := &CalibrationFigures{NMin: c.NMin, BinWidth: c.BinWidth, MaxDivergence: c.MaxDivergence}
	t.Figures = f
	var marked []Result
	for _, r := range res {
		if _, _, ok := r.Label(); ok && r.Confidence != nil {
			marked = append(marked, r)
		}
	}
	// Calibration holds for one configuration: always the current one.
	counted := current(e, marked, true)
	f.Marked = len(counted)
	note := configNote(e, true, len(marked), len(counted))
	// The bins are calibration's own (store.Bins), over the results as
	// samples: every one counted is labelled.
	samples := make([]store.Sample, len(counted))
	for i, r := range counted {
		samples[i] = store.Sample{Trust: *r.Confidence, DeterministicFailed: r.DeterministicFailed,
			StepFeedback: r.StepFeedback, RunFeedback: r.RunFeedback}
	}
	fullest, validated, flagged := 0, 0, 0
	var worst *Bin
	for _, sb := range store.Bins(samples, c.BinWidth, c.NMin) {
		b := Bin{Lo: sb.Lo, Hi: sb.Hi, N: sb.N, MeanLabel: *sb.Mean, Validated: sb.Validated}
		b.Divergence = math.Abs(b.MeanLabel - (b.Lo+b.Hi)/2)
		b.Flagged = b.Validated && b.Divergence >= c.MaxDivergence-epsilon
		fullest = max(fullest, b.N)
		if b.Validated {
			validated++
		}
		if b.Flagged {
			flagged++
		}
		f.Bins = append(f.Bins, b)
		if b.Flagged && (worst == nil || b.Divergence > worst.Divergence) {
			bb := b
			worst = &bb
		}
	}
	switch {
	case worst != nil:
		t.Verdict = Fail
		t.Why = fmt.Sprintf("answers with confidence %s..%s are right %s of the time over %d marked results: %s off, %s allowed%s",
			num(worst.Lo), num(worst.Hi), num(worst.MeanLabel), worst.N, num(worst.Divergence), num(c.MaxDivergence), note)
		if flagged > 1 {
			t.Why += fmt.Sprintf("; %d bins diverge", flagged)
		}
	case validated > 0:
		t.Verdict = Pass
		t.Why = fmt.Sprintf("%d bins hold %d or more marked results%s, none off by %s or more", validated, c.NMin, note, num(c.MaxDivergence))
	default:
		t.Verdict = InsufficientData
		t.Why = fmt.Sprintf("the fullest bin holds %d marked results%s; %d needed in one bin", fullest, note, c.NMin)
		if !e.Feedback {
			t.Why += "; this store keeps no feedback, so only failed deterministic checks mark results"
		}
	}
	return t
}

// stepVerdict is a step's overall verdict from its tiers.
func stepVerdict(sr StepReport) string {
	has := func(v Verdict) bool {
		return slices.ContainsFunc(sr.Tiers, func(t TierResult) bool { return t.Verdict == v })
	}
	switch {
	case has(Fail):
		return StepNotReady
	case has(InsufficientData) && sr.Results == 0:
		return StepNoData
	case has(InsufficientData):
		return StepBuilding
	case has(Pass):
		return StepReady
	}
	return StepNotConfigured
}

// summary is the pipeline's verdict for tier i: the worst of the steps'
// (fail, insufficient_data, pass) among the steps it applies to.
func summary(tier string, configured bool, steps []StepReport, i int) TierResult {
	t := TierResult{Tier: tier}
	if !configured {
		t.Verdict, t.Why = NotConfigured, "not configured"
		return t
	}
	var failing, short, passing []string
	var firstFail, firstShort string
	for _, s := range steps {
		r := s.Tiers[i]
		switch r.Verdict {
		case Fail:
			failing = append(failing, s.Name)
			if firstFail == "" {
				firstFail = fmt.Sprintf("step %q: %s", s.Name, r.Why)
			}
		case InsufficientData:
			short = append(short, s.Name)
			if firstShort == "" {
				firstShort = fmt.Sprintf("step %q: %s", s.Name, r.Why)
			}
		case Pass:
			passing = append(passing, s.Name)
		}
	}
	applies := len(failing) + len(short) + len(passing)
	switch {
	case applies == 0:
		t.Verdict = InsufficientData
		t.Why = "no step records a confidence of its own (human, webhook, notify and sub-pipeline answers do not)"
	case len(failing) > 0:
		t.Verdict = Fail
		t.Why = plural(len(failing), applies, "fails") + ": " + firstFail
	case len(short) > 0:
		t.Verdict = InsufficientData
		t.Why = plural(len(short), applies, "lacks data") + ": " + firstShort
	default:
		t.Verdict = Pass
		t.Why = fmt.Sprintf("every step it applies to passes (%d)", applies)
	}
	return t
}

func plural(n, of int, what string) string {
	if of == 1 {
		return "the step " + what
	}
	return fmt.Sprintf("%d of %d steps %s", n, of, strings.ReplaceAll(strings.ReplaceAll(what, "fails", "fail"), "lacks", "lack"))
}

// num writes a figure with at most 3 decimals.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}
