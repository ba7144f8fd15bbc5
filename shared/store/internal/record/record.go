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

// FormatTime writes t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a TimeLayout timestamp.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
	}
	return t, nil
}
