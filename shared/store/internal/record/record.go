// Package record holds the encodings both store backends share: the
// fixed-width timestamp text and the digest that tells a repeated step record
// from a different one.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/store"
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

// StepDigest returns a digest of a normalized step record's content. Two
// writes of the same record give the same digest; any difference in a field
// gives another. JSON fields are compared as compact JSON.
func StepDigest(rec store.StepRecord) (string, error) {
	b, err := json.Marshal(rec) // Marshal compacts json.RawMessage fields
	if err != nil {
		return "", fmt.Errorf("digest step %q: %w", rec.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
