package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestChildStatusReachesParent: a sub-pipeline child that ends escalated,
// aborted, failed or stopped is reported to its parent step as it ended
// (sub_pipeline_status, the synthesized summary), with the child's run ID
// and the child's own reason as next_step_context, as `stepline runs`
// lists the child; never the engine's raw States.TaskFailed description.
func TestChildStatusReachesParent(t *testing.T) {
	cases := []struct {
		name    string
		child   string // the child's step c (after its step first)
		replies string // replies for the child's step c
		status  string
		reason  string // in the child's reason, and so in next_step_context
	}{
		{"escalated", "{name: c, executor: scripted}",
			`c: ['{"confidence": 0.3, "summary": "too unsure", "next_step_context": ""}']`, "escalated", `step "c" escalated: confidence 0.3 is below the threshold 0.75: too unsure`},
		{"aborted", "{name: c, executor: scripted, on_low_confidence: abort}",
			`c: ['{"confidence": 0.3, "summary": "give up", "next_step_context": ""}']`, "aborted", `step "c" aborted: confidence 0.3 is below the threshold 0.75: give up`},
		{"failed", "{name: c, executor: scripted}",
			`c: [{error: "http 500"}]`, "failed", `step "c"`},
		{"stopped", "{name: c, executor: scripted}",
			`c: ['{"confidence": 0.9, "summary": "halt", "next_step_context": "", "proceed": false, "proceed_reason": "nothing left"}']`, "stopped", "nothing left"},
		{"completed", "{name: c, executor: scripted}",
			`c: ['{"confidence": 0.9, "summary": "all done", "next_step_context": "ctx"}']`, "completed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			parent := filepath.Join(dir, "parent.yaml")
			write(t, parent, "name: parent\nsteps:\n  - {name: call, executor: pipeline, executor_config: {pipeline: kid}, on_low_confidence: proceed}\n"+
				"  - {name: after, executor: scripted, prompt_template: '{{ steps.call.summary }}'}\n")
			write(t, filepath.Join(dir, "kid.yaml"), "name: kid\nsteps:\n  - {name: first, executor: scripted}\n  - "+tc.child+"\n")
			responses := filepath.Join(dir, "r.yaml")
			write(t, responses, `first: ['{"confidence": 0.9, "summary": "first", "next_step_context": ""}']`+"\n"+tc.replies+"\n"+
				`after: ['{"confidence": 0.9, "summary": "after", "next_step_context": ""}']`+"\n")
			code, out, errOut := run(t, "", "run", parent, "--json", "--dir", state, "--responses", responses)
			if code != exitOK {
				t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
			}
			type step struct {
				Name   string `json:"name"`
				Output struct {
					Confidence float64 `json:"confidence"`
					Summary    string  `json:"summary"`
					Context    string  `json:"next_step_context"`
					SubRunID   string  `json:"sub_run_id"`
					SubStatus  string  `json:"sub_pipeline_status"`
				} `json:"output"`
			}
			var rep struct {
				RunID string `json:"run_id"`
				Steps []step `json:"steps"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("run --json: %v\n%s", err, out)
			}
			i := slices.IndexFunc(rep.Steps, func(s step) bool { return s.Name == "call" })
			if i < 0 {
				t.Fatalf("run --json: no step \"call\"\n%s", out)
			}
			o := rep.Steps[i].Output
			child := rep.RunID + "/call@0"
			if o.SubStatus != tc.status || o.SubRunID != child {
				t.Errorf("sub_pipeline_status %q, sub_run_id %q; want %q, %q", o.SubStatus, o.SubRunID, tc.status, child)
			}
			if tc.status == "completed" {
				if o.Confidence != 0.9 || o.Summary != "all done" || o.Context != "ctx" {
					t.Errorf("a completed child's answer not the step's output: %+v", o)
				}
				return
			}
			if want := "Sub-pipeline 'kid' " + tc.status; o.Summary != want || o.Confidence != 0 {
				t.Errorf("summary %q, confidence %v; want %q, 0", o.Summary, o.Confidence, want)
			}
			if !strings.Contains(o.Context, tc.reason) || strings.Contains(o.Context, "States.TaskFailed") || strings.Contains(o.Context, "${") {
				t.Errorf("next_step_context %q: want the child's reason (holding %q), no engine error, no placeholder", o.Context, tc.reason)
			}
			// The child's run as `stepline runs` lists it: the same status.
			if code, out, _ := run(t, "", "runs", "--dir", state); code != exitOK ||
				!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(child)+` +kid +`+tc.status+`\b`).MatchString(out) {
				t.Errorf("runs: exit %d, the child not listed %s:\n%s", code, tc.status, out)
			}
		})
	}
}
