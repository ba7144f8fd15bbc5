package cron

import "time"

// searchYears bounds Next's search: an expression that selects no day in
// that long (February 30) never fires.
const searchYears = 5

// Matches reports whether the wall clock of t (in its location) is one the
// expression selects, to the minute. Day of month and day of week combine
// as standard cron combines them: when both are restricted (neither is
// written "*"), either one matching is enough; otherwise both must.
func (s Spec) Matches(t time.Time) bool {
	return s.Sets[0][t.Minute()] && s.Sets[1][t.Hour()] && s.dayMatches(t)
}

func (s Spec) dayMatches(t time.Time) bool {
	if !s.Sets[3][int(t.Month())] {
		return false
	}
	dom, dow := s.Sets[2][t.Day()], s.Sets[4][int(t.Weekday())]
	if s.Text[2] != "*" && s.Text[4] != "*" {
		return dom || dow
	}
	return dom && dow
}

// Next returns the first instant strictly after after, in whole minutes,
// whose wall clock in loc the expression selects; the zero time when
// there is none within five years. Wall times a daylight-saving change
// skips never fire; a wall time that happens twice (when clocks go back)
// fires at its first occurrence only.
func (s Spec) Next(after time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	t := after.In(loc).Truncate(time.Minute).Add(time.Minute)
	end := after.AddDate(searchYears, 0, 0)
	for t.Before(end) {
		switch {
		case !s.dayMatches(t) || !s.Sets[1][t.Hour()]:
			// On to the next wall-clock hour, counted in elapsed minutes:
			// time.Date may pick the second of two equal wall times.
			t = t.Add(time.Duration(60-t.Minute()) * time.Minute)
		case !s.Sets[0][t.Minute()] || repeated(t):
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

// repeated reports whether t's wall clock happened already within the
// last three hours: the second pass over a wall time when clocks go back.
func repeated(t time.Time) bool {
	for back := 30 * time.Minute; back <= 3*time.Hour; back += 30 * time.Minute {
		p := t.Add(-back)
		if p.Hour() == t.Hour() && p.Minute() == t.Minute() && p.Day() == t.Day() {
			return true
		}
	}
	return false
}
