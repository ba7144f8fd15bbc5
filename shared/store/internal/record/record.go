// Package record holds the encodings both store backends share: the
// fixed-width timestamp text and the digest that tells a repeated step record
// from a different one.
package record

import (
	"fmt"
	"time"
)

// TimeLayout is how stores write timestamps: UTC, nanoseconds, fixed width,
// so that text order is time order (DynamoDB sort keys and condition
// expressions, SQLite ORDER BY).
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// FormatTime writes t in TimeLayout. A year from 0 to 9999 is written by
// hand (the stores write two or three timestamps a step; time.Format
// reads its layout at every call); any other goes through time.Format.
func FormatTime(t time.Time) string {
	t = t.UTC()
	if year := t.Year(); year < 0 || year > 9999 {
		return t.Format(TimeLayout)
	}
	var b [len(TimeLayout)]byte
	putDateTime(b[:], t)
	b[19] = '.'
	digits(b[20:29], t.Nanosecond())
	b[29] = 'Z'
	return string(b[:])
}

// digits writes n, which is not negative, in decimal into all of dst,
// zero-padded on the left.
// putDateTime writes t's date and time of day to b[0:19] as
// "2006-01-02T15:04:05" (t in UTC, its year from 0 to 9999).
func putDateTime(b []byte, t time.Time) {
	year, month, day := t.Date()
	hour, min, sec := t.Clock()
	digits(b[0:4], year)
	b[4] = '-'
	digits(b[5:7], int(month))
	b[7] = '-'
	digits(b[8:10], day)
	b[10] = 'T'
	digits(b[11:13], hour)
	b[13] = ':'
	digits(b[14:16], min)
	b[16] = ':'
	digits(b[17:19], sec)
}

func digits(dst []byte, n int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
}

// ParseTime reads a TimeLayout timestamp.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
	}
	return t, nil
}
