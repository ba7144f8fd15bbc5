package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// cronField is the range of one field of a five-field cron expression.
type cronField struct {
	name     string
	min, max int
	names    []string // symbolic values, indexed from min
}

var (
	minuteField = cronField{name: "minute", min: 0, max: 59}
	hourField   = cronField{name: "hour", min: 0, max: 23}
	domField    = cronField{name: "day of month", min: 1, max: 31}
	monthField  = cronField{name: "month", min: 1, max: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	dowField = cronField{name: "day of week", min: 0, max: 7,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

// awsWeekdays are EventBridge Scheduler's weekday names, Sunday first.
var awsWeekdays = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// SchedulerExpression turns a five-field cron expression (minute hour
// day-of-month month day-of-week; 0 and 7 are Sunday) into an EventBridge
// Scheduler expression, "cron(minutes hours day-of-month month day-of-week
// year)". The expression is taken as standard cron reads it; one that
// restricts both day-of-month and day-of-week is an error, since standard
// cron runs it on either day and EventBridge cannot say so.
func SchedulerExpression(expr string) (string, error) {
	f := strings.Fields(expr)
	if len(f) != 5 {
		return "", fmt.Errorf("has %d fields, want 5: minute hour day-of-month month day-of-week", len(f))
	}
	fields := []cronField{minuteField, hourField, domField, monthField, dowField}
	sets := make([][]bool, 5)
	for i, s := range f {
		set, err := expand(s, fields[i])
		if err != nil {
			return "", fmt.Errorf("%s field %q: %w", fields[i].name, s, err)
		}
		sets[i] = set
	}
	// Sunday is 0 and 7.
	if sets[4][7] {
		sets[4][0] = true
	}
	sets[4] = sets[4][:7]

	out := make([]string, 6)
	out[0] = list(f[0], sets[0], minuteField.min, strconv.Itoa)
	out[1] = list(f[1], sets[1], hourField.min, strconv.Itoa)
	out[3] = list(f[3], sets[3], monthField.min, strconv.Itoa)
	out[5] = "*"
	dom := list(f[2], sets[2], domField.min, strconv.Itoa)
	dow := list(f[4], sets[4], 0, func(d int) string { return awsWeekdays[d] })
	switch {
	case f[2] != "*" && f[4] != "*":
		return "", errors.New("restricts both day of month and day of week: standard cron runs it when either matches, which EventBridge Scheduler cannot express; use one of them, or two pipelines")
	case f[4] != "*":
		out[2], out[4] = "?", dow
	default:
		out[2], out[4] = dom, "?"
	}
	return "cron(" + strings.Join(out, " ") + ")", nil
}

// expand returns the values a field selects, indexed from 0 up to f.max.
func expand(s string, f cronField) ([]bool, error) {
	set := make([]bool, f.max+1)
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
		lo, hi := f.min, f.max
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(a, f); err != nil {
				return nil, err
			}
			hi = lo
			if isRange {
				if hi, err = cronValue(b, f); err != nil {
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

func cronValue(s string, f cronField) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is outside %d-%d", v, f.min, f.max)
	}
	return v, nil
}

// list writes a field's values as "*" (when written so) or as a
// comma-separated list of values and ranges.
func list(text string, set []bool, min int, name func(int) string) string {
	if text == "*" {
		return "*"
	}
	var parts []string
	for v := min; v < len(set); v++ {
		if !set[v] {
			continue
		}
		end := v
		for end+1 < len(set) && set[end+1] {
			end++
		}
		switch {
		case end == v:
			parts = append(parts, name(v))
		case end == v+1:
			parts = append(parts, name(v), name(end))
		default:
			parts = append(parts, name(v)+"-"+name(end))
		}
		v = end
	}
	return strings.Join(parts, ",")
}
