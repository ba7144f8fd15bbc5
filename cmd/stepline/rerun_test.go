package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// TestRerunCommand runs a pipeline with a group and a fan-out, then reruns
// it from its last step: the earlier steps' records are copied, flagged
// reused, and only the last step runs (a new run answers from the start
// of the replies file), reading the reused outputs.
func TestRerunCommand(t *testing.T) {
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	path := filepath.Join(pipelines, "p.yaml")
	mustWrite(t, path, `name: again
steps:
  - {name: first, executor: scripted}
  - parallel:
      name: group
      steps: [{name: left, executor: scripted}, {name: right, executor: scripted}]
  - fan_out: {name: each, over: steps.first.items, executor: scripted}
  - {name: last, executor: scripted, prompt_template: "{{ steps.left.summary }}/{{ steps['each/1'].summary }}"}
`)
	responses := filepath.Join(dir, "r.yaml")
	mustWrite(t, responses, `first: ['{"confidence": 0.9, "summary": "s", "next_step_context": "", "items": [1, 2]}']
left: ['{"confidence": 0.8, "summary": "l", "next_step_context": ""}']
right: ['{"confidence": 0.78, "summary": "r", "next_step_context": ""}']
each/0: ['{"confidence": 0.95, "summary": "zero", "next_step_context": ""}']
each/1: ['{"confidence": 0.85, "summary": "one", "next_step_context": ""}']
last: ['{"confidence": 0.9, "summary": "once", "next_step_context": ""}', '{"confidence": 0.9, "summary": "twice", "next_step_context": ""}']
`)
	state := filepath.Join(dir, "state")
	code, out, errOut := run(t, "", "run", "--json", "--dir", state, "--responses", responses, path)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	var first runReport
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "", "rerun", "--json", "--dir", state, "--pipelines", pipelines, "--responses", responses, "--from", "last", first.RunID)
	if code != 0 {
		t.Fatalf("rerun: exit %d: %s %s", code, out, errOut)
	}
	var again runReport
	if err := json.Unmarshal([]byte(out), &again); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if again.Status != "completed" || again.RunID == first.RunID {
		t.Fatalf("rerun report %+v", again)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "stepline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	steps, err := st.ListSteps(context.Background(), again.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var reused []string
	for _, s := range steps {
		if slices.Contains(s.Flags, store.FlagReused) {
			reused = append(reused, s.Name)
		} else if s.Name != "last" || s.Prompt != "l/one" || !strings.Contains(string(s.Output), "once") {
			t.Errorf("step %s ran: prompt %q, output %s", s.Name, s.Prompt, s.Output)
		}
	}
	slices.Sort(reused)
	if strings.Join(reused, ",") != "each,each/0,each/1,first,group,group/left,group/right" {
		t.Errorf("reused %v", reused)
	}

	for _, tt := range []struct{ args, want string }{
		{"--from nope " + first.RunID, `has no step "nope"`},
		{"--from group " + first.RunID, `"group" is a group`},
		{"--from last run-ghost", "not found"},
	} {
		args := append([]string{"rerun", "--dir", state, "--pipelines", pipelines}, strings.Fields(tt.args)...)
		code, _, errOut := run(t, "", args...)
		if code != exitFailed || !strings.Contains(errOut, tt.want) {
			t.Errorf("rerun %s: exit %d: %s, want %q", tt.args, code, errOut, tt.want)
		}
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRerunDecidesFromResponses: a rerun's human step is decided from the
// responses file as stepline run decides it; without a decision there the
// rerun is left waiting and says how to approve it.
func TestRerunDecidesFromResponses(t *testing.T) {
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	path := filepath.Join(pipelines, "p.yaml")
	mustWrite(t, path, "name: gated\nsteps:\n  - {name: first, executor: scripted}\n  - {name: ok, executor: human}\n  - {name: last, executor: scripted}\n")
	replies := `first: ['{"confidence": 0.9, "summary": "f", "next_step_context": ""}']
last: ['{"confidence": 0.9, "summary": "l", "next_step_context": ""}']
`
	undecided := filepath.Join(dir, "undecided.yaml")
	mustWrite(t, undecided, replies)
	decided := filepath.Join(dir, "decided.yaml")
	mustWrite(t, decided, replies+"ok: [{decision: approve, by: scripted}]\n")
	state := filepath.Join(dir, "state")
	code, out, errOut := run(t, "", "run", "--json", "--dir", state, "--responses", decided, path)
	var first runReport
	if code != 0 || json.Unmarshal([]byte(out), &first) != nil || first.Status != "completed" {
		t.Fatalf("run: exit %d: %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		responses, status string
	}{{decided, "completed"}, {undecided, "waiting"}} {
		code, out, errOut := run(t, "", "rerun", "--json", "--dir", state, "--pipelines", pipelines, "--responses", c.responses, "--from", "ok", first.RunID)
		var again runReport
		if code != 0 || json.Unmarshal([]byte(out), &again) != nil || again.Status != c.status {
			t.Errorf("rerun with %s: exit %d, %+v, want %s: %s %s", filepath.Base(c.responses), code, again, c.status, out, errOut)
		}
	}
}
