package record

import (
	"testing"
	"time"
)

// TestFormatTimeAsFormat pins FormatTime to time.Format with TimeLayout:
// each side of the years written by hand (0 to 9999), other zones, and
// every field at its widest and narrowest.
func TestFormatTimeAsFormat(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC), // below
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),               // at
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), // at
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),             // above
		time.Date(2026, 12, 3, 14, 40, 21, 123456789, time.UTC),
		time.Date(2026, 12, 3, 14, 40, 21, 120000000, east),
		time.Date(2027, 1, 1, 3, 0, 0, 5, east), // the day before in UTC
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.Local),
		{},
		time.Now(),
	} {
		if got, want := FormatTime(tm), tm.UTC().Format(TimeLayout); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

// FuzzFormatTime checks FormatTime against time.Format for any instant.
func FuzzFormatTime(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1796307621), int64(123456789))
	f.Add(int64(-62167219200), int64(0))  // year 0
	f.Add(int64(253402300799), int64(-1)) // the last nanosecond of 9999
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec)
		if got, want := FormatTime(tm), tm.UTC().Format(TimeLayout); got != want {
			t.Fatalf("FormatTime(%d, %d) = %q, want %q", sec, nsec, got, want)
		}
	})
}

func BenchmarkFormatTime(b *testing.B) {
	tm := time.Date(2026, 12, 3, 14, 40, 21, 123456789, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		_ = FormatTime(tm)
	}
}

// TestAppendRFC3339NanoAsFormat pins the digest's timestamps to
// AppendFormat with time.RFC3339Nano: nanoseconds of none, one and nine
// digits, trailing zeros dropped, and each end of the years written.
func TestAppendRFC3339NanoAsFormat(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 3, 9, 0, 0, 1, time.UTC),
		time.Date(2026, 12, 3, 9, 0, 0, 10, time.UTC),
		time.Date(2026, 12, 3, 9, 0, 0, 120_000_000, time.UTC),
		time.Date(2026, 12, 3, 9, 0, 0, 100_000_000, time.UTC),
		time.Date(2026, 12, 3, 9, 0, 0, 999_999_999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 123_456_780, time.UTC),
	} {
		if got, want := string(appendRFC3339Nano([]byte("x"), tm)), "x"+tm.Format(time.RFC3339Nano); got != want {
			t.Errorf("%v: %q, want %q", tm, got, want)
		}
	}
}

// FuzzAppendRFC3339Nano checks appendRFC3339Nano against AppendFormat
// for any instant of the years it writes.
func FuzzAppendRFC3339Nano(f *testing.F) {
	f.Add(int64(1796307621), int64(123456789))
	f.Add(int64(-62167219200), int64(0))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec).UTC()
		if y := tm.Year(); y < 0 || y > 9999 {
			return
		}
		if got, want := string(appendRFC3339Nano(nil, tm)), tm.Format(time.RFC3339Nano); got != want {
			t.Fatalf("%d, %d: %q, want %q", sec, nsec, got, want)
		}
	})
}
