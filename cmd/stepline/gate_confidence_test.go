package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// TestLaterStepsSeeGateConfidence: steps.x.confidence, in a later step's
// when: and templates and in x's recorded output, is the combined trust
// x's gate decided on (a failed deterministic check makes it 0), not the
// confidence after the verifier (README "What later steps see").
func TestLaterStepsSeeGateConfidence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check string  // the scripted reply of a's shell check
		want  float64 // a's confidence as later steps see it
		ranB  bool    // when: steps.a.confidence < 0.5
	}{
		{"check fails", `{error: "exit 1"}`, 0, true},
		{"check passes", `"ok"`, 0.95, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			p := filepath.Join(dir, "dc.yaml")
			write(t, p, `name: dc
steps:
  - name: a
    executor: scripted
    prompt_template: hi
    on_low_confidence: proceed
    deterministic_checks:
      - {type: shell, name: ok, run: "true"}
  - {name: b, executor: scripted, prompt_template: "conf={{ steps.a.confidence }}", when: steps.a.confidence < 0.5}
  - {name: c, executor: scripted, prompt_template: "conf={{ steps.a.confidence }}"}
`)
			responses := filepath.Join(dir, "r.yaml")
			write(t, responses, `a: ['{"confidence": 0.95, "summary": "a", "next_step_context": ""}']
"a:check:ok": [`+tc.check+`]
b: ['{"confidence": 0.9, "summary": "b", "next_step_context": ""}']
c: ['{"confidence": 0.9, "summary": "c", "next_step_context": ""}']
`)
			code, out, errOut := run(t, "", "run", p, "--json", "--dir", state, "--responses", responses)
			if code != exitOK {
				t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
			}
			var rep struct {
				RunID string `json:"run_id"`
				Steps []struct {
					Name   string `json:"name"`
					Output struct {
						Confidence float64 `json:"confidence"`
					} `json:"output"`
					Trust struct {
						Combined float64 `json:"combined_trust"`
						Signals  struct {
							SAfterV float64 `json:"S_after_V"`
						} `json:"signals"`
					} `json:"trust_report"`
				} `json:"steps"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("run --json: %v\n%s", err, out)
			}
			var names []string
			for _, s := range rep.Steps {
				names = append(names, s.Name)
				if s.Name == "a" && (s.Output.Confidence != tc.want || s.Trust.Combined != tc.want || s.Trust.Signals.SAfterV != 0.95) {
					t.Errorf("a: output confidence %v, combined trust %v, S after V %v; want %v, %v, 0.95",
						s.Output.Confidence, s.Trust.Combined, s.Trust.Signals.SAfterV, tc.want, tc.want)
				}
			}
			if slices.Contains(names, "b") != tc.ranB {
				t.Errorf("steps %v: b ran %v, want %v (when: steps.a.confidence < 0.5)", names, !tc.ranB, tc.ranB)
			}
			// What c's template rendered: its recorded prompt.
			code, out, errOut = run(t, "", "show", rep.RunID, "--json", "--dir", state)
			if code != exitOK {
				t.Fatalf("show: exit %d\n%s", code, errOut)
			}
			var shown struct {
				Steps []struct {
					Name   string `json:"name"`
					Prompt string `json:"prompt"`
				} `json:"steps"`
			}
			if err := json.Unmarshal([]byte(out), &shown); err != nil {
				t.Fatal(err)
			}
			want := "conf=" + map[bool]string{true: "0", false: "0.95"}[tc.want == 0]
			for _, s := range shown.Steps {
				if (s.Name == "b" || s.Name == "c") && s.Prompt != want {
					t.Errorf("%s rendered %q, want %q", s.Name, s.Prompt, want)
				}
			}
		})
	}
}
