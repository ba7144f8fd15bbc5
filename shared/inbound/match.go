package inbound

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
)

// Match reports whether every condition of a trigger.match holds for c
// (an empty list holds for everything).
//
// A condition's field is the context's source, severity, summary or
// pipeline, else the label of that name; a label the event does not carry
// fails every operator, ne and not_in included. Operators:
//
//   - eq (a bare scalar), ne: equality. A string compares as written; a
//     number equals a value that parses to the same number ("5.0" eq 5); a
//     boolean equals "true"/"false" in any case; null equals nothing.
//   - in, not_in: equality with any element of the list.
//   - regex: an RE2 search anywhere in the value (anchor with ^ and $); an
//     invalid pattern holds for nothing.
//   - gt, gte, lt, lte: numeric; a value or bound that is not a number holds
//     for nothing.
//
// Match compiles regexes on each call; a Router compiles them once.
func Match(ms []pipeline.Match, c Context) bool {
	for _, m := range ms {
		cm, err := compileMatch(m)
		if err != nil || !cm.holds(c) {
			return false
		}
	}
	return true
}

// matcher is a compiled condition.
type matcher struct {
	field string
	op    string
	value any
	re    *regexp.Regexp
}

func compileMatch(m pipeline.Match) (matcher, error) {
	cm := matcher{field: m.Field, op: m.Op, value: m.Value}
	if cm.op == "" {
		cm.op = "eq"
	}
	switch cm.op {
	case "eq", "ne", "in", "not_in", "gt", "gte", "lt", "lte":
	case "regex":
		s, ok := m.Value.(string)
		if !ok {
			return matcher{}, fmt.Errorf("trigger.match.%s: regex must be a string", m.Field)
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return matcher{}, fmt.Errorf("trigger.match.%s: invalid regex %q: %w", m.Field, s, err)
		}
		cm.re = re
	default:
		return matcher{}, fmt.Errorf("trigger.match.%s: unknown operator %q (use one of %s)", m.Field, m.Op, strings.Join(pipeline.MatchOps(), ", "))
	}
	return cm, nil
}

func (m matcher) holds(c Context) bool {
	actual, ok := c.field(m.field)
	if !ok {
		return false
	}
	switch m.op {
	case "eq":
		return equal(actual, m.value)
	case "ne":
		return !equal(actual, m.value)
	case "in":
		return slices.ContainsFunc(list(m.value), func(v any) bool { return equal(actual, v) })
	case "not_in":
		return !slices.ContainsFunc(list(m.value), func(v any) bool { return equal(actual, v) })
	case "regex":
		return m.re != nil && m.re.MatchString(actual)
	case "gt", "gte", "lt", "lte":
		a, ok := parseNumber(actual)
		if !ok {
			return false
		}
		b, ok := number(m.value)
		if !ok {
			return false
		}
		switch m.op {
		case "gt":
			return a > b
		case "gte":
			return a >= b
		case "lt":
			return a < b
		}
		return a <= b
	}
	return false
}

// list is the operand of in/not_in; a scalar counts as a list of one.
func list(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	case nil:
		return nil
	}
	return []any{v}
}

func equal(actual string, want any) bool {
	switch w := want.(type) {
	case nil:
		return false
	case string:
		return actual == w
	case bool:
		return strings.EqualFold(actual, strconv.FormatBool(w))
	}
	if w, ok := number(want); ok {
		a, ok := parseNumber(actual)
		return ok && a == w
	}
	return false
}

// number reads a numeric operand: a YAML or JSON number, or a string that
// parses as one.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, !math.IsNaN(v)
	case float32:
		return float64(v), !math.IsNaN(float64(v))
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		return parseNumber(v.String())
	case string:
		return parseNumber(v)
	}
	return 0, false
}

func parseNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
