package cron

import (
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no zone %s: %v", name, err)
	}
	return loc
}

func TestNext(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name, expr, zone, after, want string
	}{
		{"every minute, on a minute", "* * * * *", "UTC", "2026-03-01T12:00:00Z", "2026-03-01T12:01:00Z"},
		{"every minute, a second before", "* * * * *", "UTC", "2026-03-01T11:59:59Z", "2026-03-01T12:00:00Z"},
		{"every minute, a nanosecond after", "* * * * *", "UTC", "2026-03-01T12:00:00.000000001Z", "2026-03-01T12:01:00Z"},
		{"hourly at 15", "15 * * * *", "UTC", "2026-03-01T12:15:00Z", "2026-03-01T13:15:00Z"},
		{"hourly at 15, just before", "15 * * * *", "UTC", "2026-03-01T12:14:59Z", "2026-03-01T12:15:00Z"},
		{"daily 09:30", "30 9 * * *", "UTC", "2026-03-01T09:30:00Z", "2026-03-02T09:30:00Z"},
		{"month end rolls over", "0 0 1 * *", "UTC", "2026-01-31T23:59:00Z", "2026-02-01T00:00:00Z"},
		{"mondays", "0 8 * * mon", "UTC", "2026-03-01T00:00:00Z", "2026-03-02T08:00:00Z"},
		{"sunday as 7", "0 8 * * 7", "UTC", "2026-03-02T00:00:00Z", "2026-03-08T08:00:00Z"},
		{"day of month or day of week", "0 0 13 * fri", "UTC", "2026-03-01T00:00:00Z", "2026-03-06T00:00:00Z"},
		{"leap day", "0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"never", "0 0 30 2 *", "UTC", "2026-03-01T00:00:00Z", ""},
		{"in a zone", "0 9 * * *", "Europe/Berlin", "2026-03-01T00:00:00Z", "2026-03-01T08:00:00Z"},
		{"half-hour zone", "0 9 * * *", "Asia/Kolkata", "2026-03-01T00:00:00Z", "2026-03-01T03:30:00Z"},
		// Berlin skips 02:00-03:00 on 2026-03-29 and repeats 02:00-03:00 on 2026-10-25.
		{"skipped wall time never fires", "30 2 * * *", "Europe/Berlin", "2026-03-28T02:00:00Z", "2026-03-30T00:30:00Z"},
		{"repeated wall time fires once", "30 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"},
		{"after the first of a repeated wall time", "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		{"every minute across the repeat", "* 2 * * *", "Europe/Berlin", "2026-10-25T00:59:00Z", "2026-10-26T01:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(utc(tt.after), mustLoad(t, tt.zone))
			if tt.want == "" {
				if !got.IsZero() {
					t.Fatalf("Next = %s, want none", got)
				}
				return
			}
			if !got.Equal(utc(tt.want)) {
				t.Fatalf("Next(%s) = %s, want %s", tt.after, got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
}
