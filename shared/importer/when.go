package importer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/stepline/stepline/compiler/when"
)

// convertWhen converts a when: condition (or a fan_out's over:, or a
// check's expect:) of the reference to Stepline's checked expression.
// roots are the names the expression may start with; stepKnown says which
// steps.<name> it may read. What cannot be converted is kept as written:
// Stepline's validate then refuses it at the same place.
func convertWhen(src string, roots map[string]bool, sc *scope) (string, []tnote) {
	c := &conv{sc: sc}
	trimmed := strings.TrimSpace(src)
	if strings.HasPrefix(trimmed, "{{") || strings.HasPrefix(trimmed, "{%") {
		c.note(strings.Index(src, trimmed), Person, "when", "a condition wrapped in {{ }} or {% %} is an error in the reference, which therefore always skipped this step; write the bare expression if the step should run", src)
		return src, c.notes
	}
	out := src
	if e, err := parseJinja(src); err == nil {
		var paths []*jpath
		walkJinja(e, func(p *jpath) {
			if p.root == "context" && strings.HasPrefix(src[p.off:], "context.") {
				paths = append(paths, p)
			}
		})
		sort.Slice(paths, func(a, b int) bool { return paths[a].off > paths[b].off })
		for _, p := range paths {
			if _, err := c.contextRoot(p); err != nil {
				var je *jerr
				errors.As(err, &je)
				c.note(p.off, Person, "when", je.msg, src)
				return src, c.notes
			}
			out = out[:p.off] + out[p.off+len("context."):]
			if len(p.segs) > 0 && roots != nil {
				widened := map[string]bool{p.segs[0].name: true}
				for k := range roots {
					widened[k] = true
				}
				roots = widened
			}
		}
	}
	expr, err := when.Parse(out)
	if err != nil {
		var we *when.Error
		off, msg := 0, err.Error()
		if errors.As(err, &we) {
			off, msg = we.Offset, we.Msg
			if out != src {
				off = 0
			}
		}
		c.notes = nil
		c.note(off, Person, "when", msg+" (not converted)", src)
		return src, c.notes
	}
	for _, p := range when.Paths(expr) {
		msg := ""
		switch {
		case roots != nil && !roots[p.Root]:
			msg = fmt.Sprintf("%q is not a name Stepline's conditions read here (the reference reads it as undefined)", p.Root)
		case p.Root == "steps" && len(p.Segments) > 0 && sc.stepKnown != nil && !sc.stepKnown(p.Segments[0]):
			msg = fmt.Sprintf("steps.%s names no step that runs before this one (the reference skips the step)", p.Segments[0])
		case p.Root == "vars" && len(p.Segments) > 0 && !sc.vars[p.Segments[0]]:
			msg = fmt.Sprintf("vars.%s is not among the pipeline's vars", p.Segments[0])
		}
		if msg != "" {
			c.notes = nil
			c.note(p.Offset, Person, "when", msg, src)
			return src, c.notes
		}
	}
	if e, err := parseJinja(out); err == nil && sc.mayBeAbsent != nil {
		if name, off := negatedAbsent(e, false, sc.mayBeAbsent); name != "" {
			c.note(off, Check, "when", fmt.Sprintf("where step %q was skipped, the reference skips this step (reading a missing step is an error there), while Stepline reads the missing value and this negated test is true", name), "")
		}
	}
	if len(c.notes) == 0 {
		c.note(0, Converted, "when", "condition kept: Stepline reads it with the same meaning", "")
	}
	return out, c.notes
}

// walkJinja calls f on every path of e.
func walkJinja(e jexpr, f func(*jpath)) {
	switch e := e.(type) {
	case *jpath:
		f(e)
	case *jfilter:
		walkJinja(e.x, f)
		for _, a := range e.args {
			walkJinja(a, f)
		}
	case *jtest:
		walkJinja(e.x, f)
	case *jbin:
		walkJinja(e.l, f)
		walkJinja(e.r, f)
	case *jnot:
		walkJinja(e.x, f)
	case *jneg:
		walkJinja(e.x, f)
	case *jcond:
		walkJinja(e.then, f)
		walkJinja(e.cond, f)
		if e.els != nil {
			walkJinja(e.els, f)
		}
	case *jlist:
		for _, it := range e.items {
			walkJinja(it, f)
		}
	}
}

// negatedAbsent finds a test that is true for a missing value (!=, not
// in, not, is not defined, is undefined) over steps.<name> where the
// step may be absent: the reference raises there and skips.
func negatedAbsent(e jexpr, neg bool, absent func(string) bool) (string, int) {
	step := func(x jexpr) string {
		if p, ok := x.(*jpath); ok && p.root == "steps" && len(p.segs) > 1 && absent(p.segs[0].name) {
			return p.segs[0].name
		}
		return ""
	}
	switch e := e.(type) {
	case *jnot:
		return negatedAbsent(e.x, !neg, absent)
	case *jbin:
		switch e.op {
		case "and", "or":
			if n, off := negatedAbsent(e.l, neg, absent); n != "" {
				return n, off
			}
			return negatedAbsent(e.r, neg, absent)
		}
		isNeg := (e.op == "!=" || e.op == "not in") != neg
		if isNeg {
			if n := step(e.l); n != "" {
				return n, e.off
			}
			if n := step(e.r); n != "" {
				return n, e.off
			}
		}
	case *jtest:
		if (e.not != neg) == (e.name == "defined") || e.name == "undefined" && !neg {
			if n := step(e.x); n != "" {
				return n, e.off
			}
		}
	case *jpath:
		if neg {
			if n := step(e); n != "" {
				return n, e.off
			}
		}
	}
	return "", 0
}
