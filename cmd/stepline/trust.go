package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// trustLine says how a step's gate decided: the combined trust, the
// policy and the signals beyond the confidence. "" for a report whose
// only signal is the confidence (nothing more to say than the step's own
// line).
func trustLine(r *store.TrustReport) string {
	if r == nil {
		return ""
	}
	s := r.Signals
	if s.V == nil && r.Grounding == nil && s.D == nil && len(r.DeterministicChecks) == 0 && r.Calibration == nil {
		return ""
	}
	parts := []string{"S " + num(s.S)}
	if s.V != nil {
		v := fmt.Sprintf("V %s %s/%s", num(*s.V), s.VMode, s.VCombinationStrategy)
		if s.VVetoFloor != nil {
			v += " floor " + num(*s.VVetoFloor)
		}
		parts = append(parts, v, "S after V "+num(s.SAfterV))
	}
	if g := r.Grounding; g != nil {
		mode := "shadow"
		if g.Enforced {
			mode = "enforced"
		}
		switch {
		case g.Score != nil:
			parts = append(parts, fmt.Sprintf("G %s %s", num(*g.Score), mode))
		case g.Error != "":
			parts = append(parts, fmt.Sprintf("G null (judge failed: %s)", oneLine(g.Error, 60)))
		default:
			parts = append(parts, "G null ("+oneLine(g.Note, 60)+")")
		}
	}
	if c := r.Calibration; c != nil {
		mode := "shadow"
		if c.Enforced {
			mode = "enforced"
		}
		switch {
		case s.C != nil && c.Validated:
			parts = append(parts, fmt.Sprintf("C %s %s (bin %s-%s, %d labelled)", num(*s.C), mode, num(c.Bin[0]), num(c.Bin[1]), c.N))
		case s.C != nil:
			parts = append(parts, fmt.Sprintf("C 0 %s (uncalibrated: %d of %d labelled, escalate)", mode, c.N, c.NMin))
		default:
			parts = append(parts, fmt.Sprintf("C null (uncalibrated: %d of %d labelled)", c.N, c.NMin))
		}
	}
	switch {
	case s.D != nil && *s.D:
		parts = append(parts, "D passed")
	case s.D != nil:
		for _, c := range r.DeterministicChecks {
			if c.Outcome == store.CheckFailed || c.Outcome == store.CheckError {
				parts = append(parts, fmt.Sprintf("D failed (check %q %s)", c.Name, c.Outcome))
				break
			}
		}
	case len(r.DeterministicChecks) > 0:
		last := r.DeterministicChecks[len(r.DeterministicChecks)-1]
		parts = append(parts, fmt.Sprintf("D pending (check %q)", last.Name))
	}
	return fmt.Sprintf("trust %s (%s): %s", num(r.CombinedTrust), r.Gate.Policy, strings.Join(parts, ", "))
}

// trustProgress is the progress line of a step's trust, from its Task's
// answer.
func trustProgress(t *task.TrustSummary) string {
	if t == nil {
		return ""
	}
	var sig []string
	if t.G != nil {
		sig = append(sig, "G "+num(*t.G))
	}
	if t.C != nil {
		sig = append(sig, "C "+num(*t.C))
	}
	if t.D != nil {
		d := "D passed"
		if !*t.D {
			d = "D failed"
		}
		sig = append(sig, d)
	}
	s := fmt.Sprintf("trust %s (%s)", num(t.Combined), t.Policy)
	if len(sig) > 0 {
		s += ": " + strings.Join(sig, ", ")
	}
	return s
}

func num(v float64) string { return fmt.Sprintf("%.2f", v) }

// showTrust writes the whole of a step's trust report under it, for
// show: the signals, the gate's policy, decision and reason, the
// calibration's bucket and bin, and each check.
func showTrust(w io.Writer, r *store.TrustReport) {
	if r == nil {
		return
	}
	pad := fmt.Sprintf("  %-28s    ", "")
	line := trustLine(r)
	if line == "" {
		line = fmt.Sprintf("trust %s (%s): S %s", num(r.CombinedTrust), r.Gate.Policy, num(r.Signals.S))
	}
	fmt.Fprintf(w, "%s%s\n", pad, line)
	gate := fmt.Sprintf("gate %s: threshold %s, on_low_confidence %s", r.Gate.Decision, num(r.Gate.ConfidenceThreshold), r.Gate.OnLowConfidence)
	if r.Gate.Reason != "" {
		gate += ": " + oneLine(r.Gate.Reason, 100)
	}
	fmt.Fprintf(w, "%s%s\n", pad, gate)
	if c := r.Calibration; c != nil {
		mean := "-"
		if c.Mean != nil {
			mean = num(*c.Mean)
		}
		line := fmt.Sprintf("calibration bucket %s (%s): bin %s-%s, %d labelled of %d needed, mean %s", shortKey(c.BucketKey), c.Bucket, num(c.Bin[0]), num(c.Bin[1]), c.N, c.NMin, mean)
		if c.Error != "" {
			line += ", lookup failed: " + oneLine(c.Error, 60)
		}
		fmt.Fprintf(w, "%s%s\n", pad, line)
	}
	for _, c := range r.DeterministicChecks {
		what := c.Detail
		if c.Error != "" {
			what = c.Error
		}
		fmt.Fprintf(w, "%s  check %-20s %-7s %-8s %s\n", pad, c.Name, c.Type, c.Outcome, oneLine(what, 60))
	}
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}
