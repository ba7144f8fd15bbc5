package main

import (
	"strings"
	"testing"
	"time"
)

func TestAgentBudget(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     time.Duration
		err      string
	}{
		{"unset keeps the default", "", 0, ""},
		{"below the range", "0s", 0, "outside (0, 15m0s]"},
		{"negative", "-1s", 0, "outside"},
		{"at the bottom", "1ns", time.Nanosecond, ""},
		{"the default written out", "800s", 800 * time.Second, ""},
		{"at the top", "15m", 15 * time.Minute, ""},
		{"above the range", "15m0.000000001s", 0, "outside"},
		{"not a duration", "800", 0, "want a duration such as 800s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := agentBudget(c.in)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("agentBudget(%q): %v", c.in, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("agentBudget(%q) error %v, want %q", c.in, err, c.err)
			case got != c.want:
				t.Errorf("agentBudget(%q) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func TestEnvBool(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool
		err      bool
	}{
		{"unset", "", false, false},
		{"true", "true", true, false},
		{"one", "1", true, false},
		{"false", "false", false, false},
		{"not a boolean", "yes", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := envBool(c.in)
			if got != c.want || (err != nil) != c.err {
				t.Errorf("envBool(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
			}
			if err != nil && !strings.Contains(err.Error(), `"yes"`) {
				t.Errorf("the error does not quote the value: %v", err)
			}
		})
	}
}
