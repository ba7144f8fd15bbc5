package rietest

import (
	"testing"
	"time"
)

func TestInitDuration(t *testing.T) {
	cases := []struct {
		name, out string
		want      time.Duration
	}{
		{"the emulator's report", "02 Dec 2026 18:12:41,073 [INFO] (rapid) INIT RTDONE(status: success)\n02 Dec 2026 18:12:41,073 [INFO] (rapid) INIT REPORT(durationMs: 5.122000)\n", 5122 * time.Microsecond},
		{"whole milliseconds", "INIT REPORT(durationMs: 7)", 7 * time.Millisecond},
		{"no report", "START RequestId: 1\nEND RequestId: 1\n", 0},
		{"not a number", "INIT REPORT(durationMs: .)", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := initDuration(c.out); got != c.want {
				t.Errorf("initDuration = %v, want %v", got, c.want)
			}
		})
	}
}
