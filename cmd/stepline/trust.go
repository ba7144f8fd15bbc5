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
	if s.V == nil && r.Grounding == nil && s.D == nil && len(r.DeterministicChecks) == 0 {
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

// printTrust writes a step's trust line and its checks under the step.
func printTrust(w io.Writer, r *store.TrustReport) {
	line := trustLine(r)
	if line == "" {
		return
	}
	fmt.Fprintf(w, "  %-28s    %s\n", "", line)
	for _, c := range r.DeterministicChecks {
		what := c.Detail
		if c.Error != "" {
			what = c.Error
		}
		fmt.Fprintf(w, "  %-28s      check %-20s %-7s %-8s %s\n", "", c.Name, c.Type, c.Outcome, oneLine(what, 60))
	}
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
