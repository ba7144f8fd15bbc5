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

func TestPairRatio(t *testing.T) {
	ms := func(ds ...int) []sample {
		s := make([]sample, len(ds))
		for i, d := range ds {
			s[i] = sample{total: time.Duration(d) * time.Millisecond}
		}
		return s
	}
	cases := []struct {
		name string
		a, b []sample
		want float64
	}{
		{"one pair", ms(3), ms(2), 1.5},
		{"the middle ratio of three", ms(2, 9, 4), ms(2, 3, 1), 3},
		// Each start is taken against its neighbour: the ratio of the
		// medians (40/20) would be 2.
		{"pair by pair, not the medians' ratio", ms(10, 40, 41), ms(10, 20, 41), 1},
		{"an even count takes the upper middle", ms(1, 2, 3, 4), ms(1, 1, 1, 1), 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := pairRatio(c.a, c.b); got != c.want {
				t.Errorf("pairRatio = %v, want %v", got, c.want)
			}
		})
	}
}
