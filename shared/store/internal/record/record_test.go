package record

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

func TestTimeText(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 100_000_000, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 1, 0, time.FixedZone("X", 3600)), // 23:00:01 the day before
		time.Date(2025, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	}
	texts := make([]string, len(times))
	for i, tm := range times {
		texts[i] = FormatTime(tm)
		if len(texts[i]) != len(TimeLayout) {
			t.Errorf("%q is not fixed width", texts[i])
		}
		back, err := ParseTime(texts[i])
		if err != nil || !back.Equal(tm) {
			t.Errorf("round trip of %v: %v, %v", tm, back, err)
		}
	}
	byText := append([]string(nil), texts...)
	sort.Strings(byText)
	byTime := append([]time.Time(nil), times...)
	sort.Slice(byTime, func(i, j int) bool { return byTime[i].Before(byTime[j]) })
	for i := range byTime {
		if FormatTime(byTime[i]) != byText[i] {
			t.Errorf("text order differs from time order at %d: %s vs %s", i, FormatTime(byTime[i]), byText[i])
		}
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("parsed a bad timestamp")
	}
}

func TestStepDigest(t *testing.T) {
	base := store.StepRecord{RunID: "r", Name: "s", Attempt: 1, Status: store.StepCompleted,
		Output: json.RawMessage(`{"a": 1}`)}
	d0, err := StepDigest(base)
	if err != nil {
		t.Fatal(err)
	}
	same := base
	same.Output = json.RawMessage("{\n\"a\":1\n}")
	if d, _ := StepDigest(same); d != d0 {
		t.Error("whitespace in Output changed the digest")
	}
	other := base
	other.Attempt = 2
	if d, _ := StepDigest(other); d == d0 {
		t.Error("another attempt has the same digest")
	}
	other = base
	other.Flags = []string{"x"}
	if d, _ := StepDigest(other); d == d0 {
		t.Error("another flag set has the same digest")
	}
}
