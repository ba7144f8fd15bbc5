package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestRunJSONAttempts: run --json counts a step's attempts as the calls
// made, also when the step fails after its retries (the failure's own
// record is its outcome, not one more attempt).
func TestRunJSONAttempts(t *testing.T) {
	cases := []struct {
		name      string
		step      string
		responses string
		status    string // the step's
		attempts  int
	}{
		{"first call answers", "{name: a, executor: scripted}", "a: [{confidence: 0.9, summary: ok, next_step_context: ''}]", "completed", 1},
		{"second call answers", "{name: a, executor: scripted, retry: {attempts: 3, backoff: fixed, delay_seconds: 1}}",
			"a: [{error: http 503}, {confidence: 0.9, summary: ok, next_step_context: ''}]", "completed", 2},
		{"one call fails, no retry", "{name: a, executor: scripted}", "a: [{error: http 503}]", "failed", 1},
		{"one call fails, continued", "{name: a, executor: scripted, on_failure: continue}", "a: [{error: http 503}]", "failed", 1},
		{"every retry fails", "{name: a, executor: scripted, on_failure: continue, retry: {attempts: 2, backoff: fixed, delay_seconds: 1}}",
			"a: [{error: http 503}, {error: timeout}]", "failed", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "p.yaml", "name: p\nsteps:\n  - "+c.step+"\n")
			r := writeFile(t, "r.yaml", c.responses+"\n")
			code, out, errOut := run(t, "", "run", "--json", "--dir", filepath.Join(t.TempDir(), "state"), "--responses", r, p)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep runReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if len(rep.Steps) != 1 {
				t.Fatalf("steps %+v, want one", rep.Steps)
			}
			if s := rep.Steps[0]; s.Status != c.status || s.Attempts != c.attempts {
				t.Errorf("step %q %s after %d attempts, want %s after %d", s.Name, s.Status, s.Attempts, c.status, c.attempts)
			}
		})
	}
}
