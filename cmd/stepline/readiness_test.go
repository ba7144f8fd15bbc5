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

// TestReadinessCommand: runs of a pipeline with readiness criteria, the
// verdicts stepline readiness prints as they build up (below, at and
// past min_runs; feedback marking a result), the JSON report, a pipeline
// found by name in its project, an edit that starts a new config, and a
// pipeline without criteria. The exit code is 0 whatever the verdicts.
func TestReadinessCommand(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "stepline.yaml"), "pipelines: pipelines\n")
	pipe := filepath.Join(dir, "pipelines", "triage.yaml")
	const src = "name: triage\nsteps:\n  - name: diagnose\n    executor: scripted\n    prompt_template: Diagnose the alert\n" +
		"readiness:\n  operational: {min_runs: 2, require_current_config: true}\n  confidence: {min_confidence: 0.8, min_runs: 2}\n  accuracy: {min_marked: 1, min_accuracy: 0.9}\n"
	write(pipe, src)
	resp := filepath.Join(dir, "replies.yaml")
	write(resp, "diagnose:\n  - '{\"confidence\": 0.9, \"summary\": \"disk full\", \"next_step_context\": \"\"}'\n")
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := dispatch(context.Background(), args, offlineEnv(t, &out, &errOut)); code != exitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	run := func() string {
		t.Helper()
		m := regexp.MustCompile(`run (run-\S+): completed`).FindStringSubmatch(cli("run", "--dir", state, "--responses", resp, pipe))
		if m == nil {
			t.Fatal("run did not complete")
		}
		return m[1]
	}
	tier := func(out, name string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + name + `\s+(\S+)\s+(.*)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no tier %s in:\n%s", name, out)
		}
		return m[1] + ": " + m[2]
	}

	out := cli("readiness", "--dir", state, pipe)
	if !strings.Contains(out, `readiness of pipeline "triage" (stage testing, config `) || !strings.Contains(out, "0 ended runs read") {
		t.Errorf("header:\n%s", out)
	}
	if got := tier(out, "operational"); got != `insufficient_data: the step lacks data: step "diagnose": 0 of 0 runs ended completed (all of config `+configOf(t, out)+`); 2 needed` {
		t.Errorf("no runs: %s", got)
	}
	first := run()
	out = cli("readiness", "--dir", state, pipe)
	if got := tier(out, "operational"); !strings.HasPrefix(got, `insufficient_data: the step lacks data: step "diagnose": 1 of 1 runs ended completed`) {
		t.Errorf("min_runs-1: %s", got)
	}
	if got := tier(out, "confidence"); got != `insufficient_data: the step lacks data: step "diagnose": 1 answers with a confidence; 2 needed before the mean counts` {
		t.Errorf("confidence at min_runs-1: %s", got)
	}
	if got := tier(out, "accuracy"); !strings.HasPrefix(got, `insufficient_data: the step lacks data: step "diagnose": 0 marked results`) {
		t.Errorf("accuracy unmarked: %s", got)
	}
	run()
	cli("feedback", "--dir", state, first, "diagnose", "--outcome", "partial")
	out = cli("readiness", "--dir", state, pipe)
	for name, want := range map[string]string{
		"operational": "pass: every step it applies to passes (1)",
		"confidence":  "pass: every step it applies to passes (1)",
		"accuracy":    `fail: the step fails: step "diagnose": accuracy 0.5 over 1 marked results`,
		"calibration": "not_configured: not configured",
	} {
		if got := tier(out, name); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %s, want %s…", name, got, want)
		}
	}
	if !regexp.MustCompile(`(?m)^step diagnose \(scripted\): not ready, 2 results$`).MatchString(out) {
		t.Errorf("step line:\n%s", out)
	}

	// By name, in the project above the working directory; as JSON.
	t.Chdir(filepath.Join(dir, "pipelines"))
	var rep struct {
		Pipeline string `json:"pipeline"`
		Runs     int    `json:"runs"`
		Tiers    []struct {
			Tier, Verdict string
		} `json:"tiers"`
		Steps []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
			Tiers   []struct {
				Tier    string          `json:"tier"`
				Figures json.RawMessage `json:"figures"`
			} `json:"tiers"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(cli("readiness", "--dir", state, "--json", "triage")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Pipeline != "triage" || rep.Runs != 2 || rep.Tiers[2].Verdict != "fail" || rep.Steps[0].Verdict != "not_ready" ||
		!strings.Contains(string(rep.Steps[0].Tiers[2].Figures), `"marked": 1,`) {
		t.Errorf("json report %+v", rep)
	}

	// An edited prompt is a new config: require_current_config leaves
	// the earlier runs out; readiness: itself is not part of it.
	write(pipe, strings.Replace(src, "Diagnose the alert", "Diagnose the alert now", 1))
	out = cli("readiness", "--dir", state, pipe)
	if got := tier(out, "operational"); !strings.Contains(got, "0 of 0 runs ended completed (0 of config") || !strings.Contains(got, "2 of earlier configs left out") {
		t.Errorf("after an edit: %s", got)
	}
	write(pipe, strings.Replace(src, "min_runs: 2, require", "min_runs: 1, require", 1))
	if got := tier(cli("readiness", "--dir", state, pipe), "operational"); !strings.HasPrefix(got, "pass") {
		t.Errorf("readiness edited, same config: %s", got)
	}

	write(pipe, strings.Split(src, "readiness:")[0])
	if out := cli("readiness", "--dir", state, pipe); !strings.Contains(out, "the pipeline sets no readiness: criteria") {
		t.Errorf("no criteria:\n%s", out)
	}
	var errOut bytes.Buffer
	if code := dispatch(context.Background(), []string{"readiness", "--dir", state, "nope"}, offlineEnv(t, &bytes.Buffer{}, &errOut)); code != exitFailed ||
		!strings.Contains(errOut.String(), `no pipeline named "nope"`) {
		t.Errorf("unknown pipeline: %d %s", code, errOut.String())
	}
}

func configOf(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`config ([0-9a-f]{12})\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no config in %s", out)
	}
	return m[1]
}

// TestShowMutedNotifications: show names the notifications a testing
// run's ending step fired, muted (logged at warning level, which run
// shows, never sent).
func TestShowMutedNotifications(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	pipe := filepath.Join(dir, "p.yaml")
	resp := filepath.Join(dir, "replies.yaml")
	if err := os.WriteFile(pipe, []byte("name: p\nstage: testing\nnotifications:\n  escalate:\n    - {channel: webhook, template: 'escalated', config: {url: 'https://hooks.example/x'}}\n"+
		"steps:\n  - {name: a, executor: scripted}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resp, []byte("a:\n  - '{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	dispatch(context.Background(), []string{"run", "--dir", state, "--responses", resp, pipe}, offlineEnv(t, &out, &errOut))
	m := regexp.MustCompile(`run (run-\S+): escalated`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("run:\n%s\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "notification muted: stage testing") {
		t.Errorf("run does not show the muted notification:\n%s", errOut.String())
	}
	out.Reset()
	if code := dispatch(context.Background(), []string{"show", "--dir", state, m[1]}, offlineEnv(t, &out, &errOut)); code != exitOK {
		t.Fatalf("show: %d %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "notification escalate (webhook) muted: stage testing") {
		t.Errorf("show:\n%s", out.String())
	}
}
