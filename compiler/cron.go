package compiler

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/cron"
)

// CheckCron validates a five-field cron expression (minute hour
// day-of-month month day-of-week): each field is *, a value, a range a-b, a
// list, or a step (*/n, a-b/n); months and weekdays may be names. The
// expression must also be one EventBridge Scheduler can run (see
// SchedulerExpression): schedules run on AWS, so validate refuses what a
// deploy would.
func CheckCron(expr string) error {
	_, err := SchedulerExpression(expr)
	return err
}

// awsWeekdays are EventBridge Scheduler's weekday names, Sunday first.
var awsWeekdays = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// SchedulerExpression turns a five-field cron expression (minute hour
// day-of-month month day-of-week; 0 and 7 are Sunday) into an EventBridge
// Scheduler expression, "cron(minutes hours day-of-month month day-of-week
// year)". The expression is taken as standard cron reads it; one that
// restricts both day-of-month and day-of-week is an error, since standard
// cron runs it on either day and EventBridge cannot say so.
func SchedulerExpression(expr string) (string, error) {
	spec, err := cron.Parse(expr)
	if err != nil {
		return "", err
	}
	f, sets := spec.Text, spec.Sets

	out := make([]string, 6)
	out[0] = list(f[0], sets[0], cron.Minute.Min, strconv.Itoa)
	out[1] = list(f[1], sets[1], cron.Hour.Min, strconv.Itoa)
	out[3] = list(f[3], sets[3], cron.Month.Min, strconv.Itoa)
	out[5] = "*"
	dom := list(f[2], sets[2], cron.DayOfMonth.Min, strconv.Itoa)
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

// CheckTimeZone checks a schedule's time zone: an IANA name such as
// Europe/Berlin (or UTC), which both EventBridge Scheduler and the local
// scheduler read.
func CheckTimeZone(name string) error {
	switch {
	case name == "":
		return errors.New("is empty: give an IANA time zone such as Europe/Berlin, or leave timezone out for UTC")
	case name == "Local" || strings.HasPrefix(name, "/") || strings.Contains(name, ".."):
		return errors.New("is not an IANA time zone name such as Europe/Berlin")
	}
	if _, err := time.LoadLocation(name); err != nil {
		return errors.New("is not a known IANA time zone such as Europe/Berlin")
	}
	return nil
}
