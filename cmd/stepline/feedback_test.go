package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFeedbackAndCalibration: runs of a calibrated pipeline, feedback on
// them through the CLI, the bins it builds, and the gate once a bin is
// validated; show prints the trust reports and the feedback.
func TestFeedbackAndCalibration(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	pipe := filepath.Join(dir, "triage.yaml")
	resp := filepath.Join(dir, "replies.yaml")
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(pipe, "name: triage\nsteps:\n  - name: diagnose\n    executor: scripted\n    prompt_template: Diagnose the alert\n"+
		"    calibration: {enforce: true, n_min: 2, bin_width: 0.5}\n")
	write(resp, "diagnose:\n  - '{\"confidence\": 0.9, \"summary\": \"disk full\", \"next_step_context\": \"\"}'\n")
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), args, offlineEnv(t, &out, &errOut))
		if code != wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", args, code, wantCode, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	runID := func() string {
		t.Helper()
		out := cli(exitOK, "run", "--dir", state, "--responses", resp, pipe)
		m := regexp.MustCompile(`run (run-\S+): completed`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run did not complete:\n%s", out)
		}
		return m[1]
	}
	a, b := runID(), runID()
	// Uncalibrated (no labels): proceed leaves 0.9.
	show := cli(exitOK, "show", "--dir", state, a)
	for _, re := range []string{
		`(?m)^\s+trust 0\.90 \(trust_vector\): S 0\.90, C null \(uncalibrated: 0 of 2 labelled\)$`,
		`(?m)^\s+gate completed: threshold 0\.75, on_low_confidence escalate$`,
		`(?m)^\s+calibration bucket [0-9a-f]{12} \(diagnose scripted.* prompt:[0-9a-f]{12}\): bin 0\.50-1\.00, 0 labelled of 2 needed, mean -$`,
	} {
		if !regexp.MustCompile(re).MatchString(show) {
			t.Errorf("show does not match %s:\n%s", re, show)
		}
	}

	cli(exitOK, "feedback", "--dir", state, a, "--outcome", "incorrect", "--notes", "it was the network\x1b[2J")
	cli(exitOK, "feedback", "--dir", state, b, "diagnose", "--outcome", "partial")
	if got := cli(exitOK, "feedback", "--dir", state, a, "--json"); !strings.Contains(got, `"outcome":"incorrect","notes":"it was the network\u001b[2J"`) {
		t.Errorf("feedback --json: %s", got)
	}
	if got := cli(exitOK, "feedback", "--dir", state, b, "--json"); strings.TrimSpace(got) != `{"feedback":null}` {
		t.Errorf("run feedback where only a step has some: %s", got)
	}
	if got := cli(exitOK, "feedback", "--dir", state, b, "diagnose"); !strings.Contains(got, `step "diagnose" of run `+b+`: partial (`) {
		t.Errorf("feedback of a step: %s", got)
	}
	cli(exitUsage, "feedback", "--dir", state, a, "--outcome", "wrong")
	cli(exitUsage, "feedback", "--dir", state)
	if got := cli(exitFailed, "feedback", "--dir", state, "run-nope", "--outcome", "correct"); !strings.Contains(got, "no such run or step") {
		t.Errorf("feedback on an unknown run: %s", got)
	}
	if got := cli(exitFailed, "feedback", "--dir", state, a, "nope", "--outcome", "correct"); !strings.Contains(got, "no such run or step") {
		t.Errorf("feedback on an unknown step: %s", got)
	}

	cal := cli(exitOK, "calibration", "--dir", state, "triage", "--bin-width", "0.5", "--n-min", "2")
	if !regexp.MustCompile(`(?m)^  0\.50-1\.00\s+2\s+2\s+0\.25  yes$`).MatchString(cal) {
		t.Errorf("calibration:\n%s", cal)
	}
	var js struct {
		Buckets []struct {
			Samples int `json:"samples"`
			Bins    []struct {
				Lo, Hi    float64
				N         int      `json:"n"`
				Mean      *float64 `json:"mean"`
				Validated bool     `json:"validated"`
			} `json:"bins"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(cli(exitOK, "calibration", "--dir", state, "triage", "diagnose", "--json", "--bin-width", "0.5", "--n-min", "3")), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Buckets) != 1 || js.Buckets[0].Samples != 2 || len(js.Buckets[0].Bins) != 1 || js.Buckets[0].Bins[0].N != 2 || js.Buckets[0].Bins[0].Validated || *js.Buckets[0].Bins[0].Mean != 0.25 {
		t.Errorf("calibration --json: %+v", js)
	}
	// The pipeline's file: its step's own bin_width (0.5) and n_min (2).
	if got := cli(exitOK, "calibration", "--dir", state, pipe); !regexp.MustCompile(`bins of 0\.5, n_min 2\)\n.*\n  0\.50-1\.00\s+2\s+2\s+0\.25  yes\n`).MatchString(got) {
		t.Errorf("calibration of the file:\n%s", got)
	}
	if got := cli(exitOK, "calibration", "--dir", state, pipe, "--n-min", "5"); !strings.Contains(got, "no (2/5)") {
		t.Errorf("calibration of the file with --n-min:\n%s", got)
	}
	if got := cli(exitOK, "calibration", "--dir", state, "triage", "other"); !strings.Contains(got, `step "other" of pipeline triage: no recorded executions`) {
		t.Errorf("calibration of a step without history: %s", got)
	}
	cli(exitUsage, "calibration", "--dir", state, "triage", "--bin-width", "0.3")

	// Two labels (0 and 0.5) validate the bin: its mean 0.25 replaces 0.9.
	out := cli(exitOK, "run", "--dir", state, "--responses", resp, pipe)
	m := regexp.MustCompile(`run (run-\S+): escalated`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("third run did not escalate:\n%s", out)
	}
	show = cli(exitOK, "show", "--dir", state, m[1])
	if !regexp.MustCompile(`(?m)^\s+trust 0\.25 \(trust_vector\): S 0\.90, C 0\.25 enforced \(bin 0\.50-1\.00, 2 labelled\)$`).MatchString(show) ||
		!strings.Contains(show, "calibrated: bin 0.5..1 has mean label 0.25 over 2 labelled executions") {
		t.Errorf("show of the calibrated run:\n%s", show)
	}
	show = cli(exitOK, "show", "--dir", state, a)
	if !regexp.MustCompile(`(?m)^feedback: incorrect \(.*\): it was the network\[2J$`).MatchString(show) || strings.Contains(show, "\x1b") {
		t.Errorf("show lacks the run's feedback:\n%s", show)
	}
	show = cli(exitOK, "show", "--dir", state, b)
	if !regexp.MustCompile(`(?m)^\s+feedback partial \(`).MatchString(show) {
		t.Errorf("show lacks the step's feedback:\n%s", show)
	}
}
