package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run calls the CLI in-process and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(context.Background(), args, env{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut,
		getenv: func(string) string { return "" },
	})
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateCommand(t *testing.T) {
	good := writeFile(t, "good.yaml", "name: g\nsteps: [{name: a, executor: scripted}]\n")
	bad := writeFile(t, "bad.yaml", "name: b\nsteps:\n  - name: a\n    executor: gatway\n")
	warn := writeFile(t, "warn.yaml", "name: w\nvars: {labels: x}\nsteps: [{name: a, executor: scripted}]\n")
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		stderrNone bool
	}{
		{"valid", []string{"validate", good}, 0, `pipeline "g" is valid (1 steps)`, "", true},
		{"invalid", []string{"validate", good, bad}, 1, `"g" is valid`, bad + `:4:15: step "a": executor "gatway" is not one of`, false},
		{"warning does not fail", []string{"validate", warn}, 0, `"w" is valid`, warn + `:2:8: warning: vars: "labels" hides`, false},
		{"quiet hides warnings", []string{"validate", "-q", warn}, 0, `"w" is valid`, "", true},
		{"missing file", []string{"validate", "/no/such.yaml"}, 1, "", "/no/such.yaml: read pipeline:", false},
		{"no files", []string{"validate"}, 2, "", "usage: stepline validate", false},
		{"bad flag", []string{"validate", "--nope", good}, 2, "", "unknown flag: --nope", false},
		{"quiet after the file", []string{"validate", warn, "--quiet"}, 0, `"w" is valid`, "", true},
		{"old long spelling of -q", []string{"validate", "--q", warn}, 0, `"w" is valid`, "", true},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if !strings.Contains(out, c.stdout) {
				t.Errorf("stdout %q does not contain %q", out, c.stdout)
			}
			if c.stderrNone && errOut != "" {
				t.Errorf("stderr = %q, want none", errOut)
			}
			if !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, c.stderr)
			}
		})
	}
}

func TestExamplesValidateThroughCLI(t *testing.T) {
	files, _ := filepath.Glob("../../pipelines/*.yaml")
	code, out, errOut := run(t, "", append([]string{"validate"}, files...)...)
	if code != 0 || errOut != "" || strings.Count(out, "is valid") != len(files) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestSchemaCommand(t *testing.T) {
	code, out, _ := run(t, "", "schema")
	if code != 0 || !strings.Contains(out, `"title": "Stepline pipeline"`) {
		t.Fatalf("exit %d, output %.100q", code, out)
	}
	if code, _, _ := run(t, "", "schema", "extra"); code != 2 {
		t.Errorf("schema with an argument: exit %d, want 2", code)
	}
}

func TestRunJSONReport(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, "p.yaml", `name: report
steps:
  - {name: first, executor: scripted}
  - {name: skipped, executor: scripted, when: 'steps.first.action == "never"'}
  - parallel:
      name: group
      steps: [{name: left, executor: scripted}, {name: right, executor: scripted}]
  - fan_out: {name: each, over: steps.first.items, executor: scripted}
`)
	responses := writeFile(t, "r.yaml", `first: ['{"confidence": 0.9, "summary": "s", "next_step_context": "", "items": [1, 2]}']
left: ['{"confidence": 0.8, "summary": "l", "next_step_context": ""}']
right: ['{"confidence": 0.78, "summary": "r", "next_step_context": ""}']
each/0: ['{"confidence": 0.95, "summary": "0", "next_step_context": ""}']
each/1: ['{"confidence": 0.85, "summary": "1", "next_step_context": ""}']
`)
	code, out, errOut := run(t, "", "run", "--json", "--dir", dir, "--responses", responses, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var names []string
	conf := map[string]float64{}
	for _, s := range rep.Steps {
		names = append(names, s.Name)
		if s.Confidence != nil {
			conf[s.Name] = *s.Confidence
		}
	}
	if rep.Status != "completed" || rep.Pipeline != "report" || !strings.HasPrefix(rep.RunID, "run-") {
		t.Errorf("report %+v", rep)
	}
	want := map[string]float64{"first": 0.9, "left": 0.8, "right": 0.78, "group": 0.78, "each/0": 0.95, "each/1": 0.85, "each": 0.85}
	for n, c := range want {
		if conf[n] != c {
			t.Errorf("step %q confidence %v, want %v (steps %v)", n, conf[n], c, names)
		}
	}
	for _, n := range names {
		if n == "skipped" {
			t.Error("a skipped step appears in the report")
		}
	}
}

// A pipeline that does not compile is not run, and run names every error
// as validate does.
func TestRunInvalidPipeline(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "name: b\nsteps:\n  - name: a\n    executor: gatway\n    promt_template: x\n")
	code, _, errOut := run(t, "", "run", "--dir", t.TempDir(), bad)
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	for _, want := range []string{bad + `:4:15: step "a": executor "gatway"`, bad + `:5:5: step "a": unknown field "promt_template" (did you mean "prompt_template"?)`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if strings.Contains(errOut, "more error") {
		t.Errorf("stderr %q summarises instead of listing", errOut)
	}
}
