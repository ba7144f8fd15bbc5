package compiler

import (
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

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day of week", min: 0, max: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// CheckCron validates a five-field cron expression (minute hour
// day-of-month month day-of-week): each field is *, a value, a range a-b, a
// list, or a step (*/n, a-b/n); months and weekdays may be names.
func CheckCron(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return fmt.Errorf("has %d fields, want 5: minute hour day-of-month month day-of-week", len(fields))
	}
	for i, f := range fields {
		if err := checkCronField(f, cronFields[i]); err != nil {
			return fmt.Errorf("%s field %q: %v", cronFields[i].name, f, err)
		}
	}
	return nil
}

func checkCronField(s string, f cronField) error {
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			return fmt.Errorf("empty list item")
		}
		rng, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n < 1 {
				return fmt.Errorf("step %q must be a positive number", step)
			}
		}
		if rng == "*" {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := cronValue(lo, f)
		if err != nil {
			return err
		}
		if isRange {
			b, err := cronValue(hi, f)
			if err != nil {
				return err
			}
			if a > b {
				return fmt.Errorf("range %s is backwards", rng)
			}
		} else if hasStep {
			return fmt.Errorf("a step needs * or a range before it")
		}
	}
	return nil
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
