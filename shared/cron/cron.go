// Package cron reads five-field cron expressions (minute hour day-of-month
// month day-of-week, as standard cron writes them): the compiler checks a
// pipeline's schedule with it, the CDK stack turns it into an
// EventBridge Scheduler expression, and stepline serve fires it (Spec.Next,
// in the schedule's time zone; package schedule).
package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Field is the range of one field of an expression.
type Field struct {
	Name     string
	Min, Max int
	names    []string // symbolic values, indexed from Min
}

// The five fields, in order.
var (
	Minute     = Field{Name: "minute", Min: 0, Max: 59}
	Hour       = Field{Name: "hour", Min: 0, Max: 23}
	DayOfMonth = Field{Name: "day of month", Min: 1, Max: 31}
	Month      = Field{Name: "month", Min: 1, Max: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	DayOfWeek = Field{Name: "day of week", Min: 0, Max: 7,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

var fields = [5]Field{Minute, Hour, DayOfMonth, Month, DayOfWeek}

// Spec is a parsed expression: each field as written and the values it
// selects, indexed from 0 up to the field's Max. In DayOfWeek, Sunday is
// 0 (a 7 written is folded into it) and the set has 7 entries.
type Spec struct {
	Text [5]string
	Sets [5][]bool
}

// Parse reads an expression: each field is *, a value, a range a-b, a list,
// or a step (*/n, a-b/n); months and weekdays may be names.
func Parse(expr string) (Spec, error) {
	var s Spec
	f := strings.Fields(expr)
	if len(f) != 5 {
		return s, fmt.Errorf("has %d fields, want 5: minute hour day-of-month month day-of-week", len(f))
	}
	for i, text := range f {
		set, err := expand(text, fields[i])
		if err != nil {
			return s, fmt.Errorf("%s field %q: %w", fields[i].Name, text, err)
		}
		s.Text[i], s.Sets[i] = text, set
	}
	if s.Sets[4][7] { // Sunday is 0 and 7
		s.Sets[4][0] = true
	}
	s.Sets[4] = s.Sets[4][:7]
	return s, nil
}

// expand returns the values a field selects.
func expand(s string, f Field) ([]bool, error) {
	set := make([]bool, f.Max+1)
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			return nil, errors.New("empty list item")
		}
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("step %q must be a positive number", stepText)
			}
			step = n
		}
		lo, hi := f.Min, f.Max
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return nil, err
			}
			hi = lo
			if isRange {
				if hi, err = value(b, f); err != nil {
					return nil, err
				}
				if lo > hi {
					return nil, fmt.Errorf("range %s is backwards", rng)
				}
			} else if hasStep {
				return nil, errors.New("a step needs * or a range before it")
			}
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	return set, nil
}

func value(s string, f Field) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.Min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.Min || v > f.Max {
		return 0, fmt.Errorf("%d is outside %d-%d", v, f.Min, f.Max)
	}
	return v, nil
}
