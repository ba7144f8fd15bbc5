package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepsInExecutionOrder: run --json and show list the steps in the
// order they ran, not by name, run after run (three quick scripted steps
// start within a millisecond or two of each other; they were listed by
// name within one about one run in four).
func TestStepsInExecutionOrder(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "order.yaml")
	write(t, p, "name: order\nsteps:\n  - {name: zz, executor: scripted}\n  - {name: mm, executor: scripted}\n  - {name: aa, executor: scripted}\n")
	responses := filepath.Join(dir, "r.yaml")
	reply := `['{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}', '{"confidence": 0.9, "summary": "s", "next_step_context": ""}']`
	write(t, responses, "zz: "+reply+"\nmm: "+reply+"\naa: "+reply+"\n")
	names := func(out string) string {
		var rep struct {
			Steps []struct {
				Name string `json:"name"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var n []string
		for _, s := range rep.Steps {
			n = append(n, s.Name)
		}
		return strings.Join(n, ",")
	}
	for i := range 8 {
		code, out, errOut := run(t, "", "run", p, "--json", "--dir", state, "--responses", responses)
		if code != exitOK {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		if got := names(out); got != "zz,mm,aa" {
			t.Errorf("run %d: run --json lists %s, want zz,mm,aa", i, got)
		}
		var id struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal([]byte(out), &id)
		code, out, errOut = run(t, "", "show", id.RunID, "--json", "--dir", state)
		if code != exitOK {
			t.Fatalf("show: exit %d\n%s", code, errOut)
		}
		if got := names(out); got != "zz,mm,aa" {
			t.Errorf("run %d: show --json lists %s, want zz,mm,aa", i, got)
		}
	}
}
