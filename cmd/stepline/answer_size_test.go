package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackOversizedAnswer: a reply within the parser's limit whose
// answer is too long to record (a 900 KB next_step_context) is rejected
// and asked again with feedback, instead of failing the step on an
// untyped store error; long text in artifacts is kept.
func TestAttackOversizedAnswer(t *testing.T) {
	huge, _ := json.Marshal(map[string]any{"confidence": 0.9, "summary": "s", "next_step_context": strings.Repeat("y", 900000)})
	withArtifact, _ := json.Marshal(map[string]any{"confidence": 0.8, "summary": "short", "next_step_context": "", "artifacts": map[string]string{"report.md": strings.Repeat("z", 600000)}})
	q := func(b []byte) string { s, _ := json.Marshal(string(b)); return string(s) }
	r := writeFile(t, "r.yaml", "a: ["+q(huge)+", "+q(withArtifact)+"]\n")
	p := writeFile(t, "p.yaml", "name: p\nsteps: [{name: a, executor: scripted}]\n")
	dir := t.TempDir()
	code, out, errOut := run(t, "", "run", "--json", "--dir", dir, "--responses", r, p)
	var rep runReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d: %.2000s %s", code, out, errOut)
	}
	if rep.Status != "completed" || len(rep.Steps) != 1 || !strings.Contains(string(rep.Steps[0].Output), `"summary": "short"`) {
		t.Fatalf("status %s (%s), steps %.2000s", rep.Status, rep.Reason, out)
	}
	code, show, _ := run(t, "", "show", "--json", "--dir", dir, rep.RunID)
	if code != 0 || strings.Contains(show, "wrapError") || strings.Contains(show, strings.Repeat("y", 1000)) {
		t.Errorf("show: exit %d, the rejected answer or a store error is recorded", code)
	}
}
