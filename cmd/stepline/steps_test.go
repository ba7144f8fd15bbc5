package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// libraryFiles is a project with a step library: triage is used twice by
// one pipeline (once renamed, as in the reference's quick-start) and once
// as a parallel branch by another; notify is used by none.
var libraryFiles = map[string]string{
	"stepline.yaml": "",
	"steps/triage.yaml": `name: first-line-triage
description: |
  First-line triage of an alert.
  Looks at the alert only.
tags: [triage, sre]
executor: scripted
prompt_template: "Triage: {{ summary }}"
timeout_seconds: 60
`,
	"steps/notify.yaml": "name: notify-oncall\nexecutor: webhook\nexecutor_config: {url: 'https://hooks.example.com/oncall'}\n",
	"pipelines/alerts.yaml": `name: alerts
steps:
  - name: triage
    use: first-line-triage
  - use: first-line-triage
`,
	"pipelines/review.yaml": `name: review
steps:
  - parallel:
      name: opinions
      steps:
        - {use: first-line-triage, name: second-opinion}
        - {name: third, executor: scripted}
`,
}

// TestStepsCommand: stepline steps lists the library with where each step
// is used, as text and as JSON; the library's problems go to stderr and
// fail the command.
func TestStepsCommand(t *testing.T) {
	root := writeTree(t, libraryFiles)
	t.Chdir(root)
	code, out, errOut := run(t, "", "steps")
	want := "NAME               EXECUTOR  TAGS         USED BY                                                               DESCRIPTION\n" +
		"first-line-triage  scripted  triage, sre  alerts (triage), alerts (first-line-triage), review (second-opinion)  First-line triage of an alert.\n" +
		"notify-oncall      webhook   -            -                                                                     -\n"
	if code != exitOK || out != want || errOut != "" {
		t.Errorf("steps: exit %d\n%s\nwant\n%s\nstderr %q", code, out, want, errOut)
	}

	code, out, errOut = run(t, "", "steps", "--json")
	if code != exitOK || errOut != "" {
		t.Fatalf("steps --json: exit %d %s", code, errOut)
	}
	var got []stepInfo
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	wantJSON := []stepInfo{
		{Name: "first-line-triage", Description: "First-line triage of an alert.\nLooks at the alert only.\n", Tags: []string{"triage", "sre"}, Executor: "scripted", Path: filepath.Join("steps", "triage.yaml"),
			UsedBy: []stepUse{
				{Pipeline: "alerts", File: filepath.Join("pipelines", "alerts.yaml"), Line: 4, Col: 10, Kind: "step", As: "triage"},
				{Pipeline: "alerts", File: filepath.Join("pipelines", "alerts.yaml"), Line: 5, Col: 10, Kind: "step", As: "first-line-triage"},
				{Pipeline: "review", File: filepath.Join("pipelines", "review.yaml"), Line: 6, Col: 17, Kind: "branch", As: "second-opinion"},
			}},
		{Name: "notify-oncall", Tags: []string{}, Executor: "webhook", Path: filepath.Join("steps", "notify.yaml"), UsedBy: []stepUse{}},
	}
	if !reflect.DeepEqual(got, wantJSON) {
		t.Errorf("steps --json:\n%+v\nwant\n%+v", got, wantJSON)
	}

	// A library file with an error: the list, then the error, exit 1.
	if err := os.WriteFile("steps/notify.yaml", []byte("name: notify-oncall\nexecutor: webhook\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "", "steps")
	if code != exitFailed || !strings.Contains(out, "notify-oncall") ||
		errOut != "steps/notify.yaml:2:11: step \"notify-oncall\": executor webhook needs executor_config.url\n" {
		t.Errorf("a broken library step: exit %d\n%s%s", code, out, errOut)
	}

	// --config, and outside any project.
	t.Chdir(t.TempDir())
	if code, out, _ := run(t, "", "steps", "--config", filepath.Join(root, "stepline.yaml")); code != exitFailed || !strings.Contains(out, "first-line-triage") {
		t.Errorf("steps --config: exit %d %s", code, out)
	}
	if code, _, errOut := run(t, "", "steps"); code != exitFailed || !strings.Contains(errOut, "no stepline.yaml here or above") {
		t.Errorf("outside a project: exit %d %q", code, errOut)
	}
	empty := writeTree(t, map[string]string{"stepline.yaml": ""})
	if code, out, _ := run(t, "", "steps", "--config", filepath.Join(empty, "stepline.yaml")); code != exitOK || out != "no library steps in "+filepath.Join(empty, "steps")+"\n" {
		t.Errorf("an empty library: exit %d %q", code, out)
	}
	if code, _, _ := run(t, "", "steps", "extra"); code != exitUsage {
		t.Errorf("an argument: exit %d", code)
	}
}

// TestValidateStepFile: validate checks a file of the steps directory as
// a library step, on its own; with --config alone, every pipeline and
// library step of the project.
func TestValidateStepFile(t *testing.T) {
	root := writeTree(t, libraryFiles)
	t.Chdir(root)
	if code, out, errOut := run(t, "", "validate", "steps/triage.yaml"); code != exitOK || out != "steps/triage.yaml: library step \"first-line-triage\" is valid\n" || errOut != "" {
		t.Errorf("a valid library step: exit %d %q %q", code, out, errOut)
	}
	if err := os.WriteFile("steps/bad.yaml", []byte("name: bad\nexecutor: scripted\nprompt_template: \"{{ steps.bad.summary }}\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const bad = `steps/bad.yaml:3:22: step "bad": prompt_template refers to the step itself; a step sees only earlier steps (loop_until steps see loop.prior_output)` + "\n"
	if code, out, errOut := run(t, "", "validate", "steps/bad.yaml"); code != exitFailed || out != "" || errOut != bad {
		t.Errorf("a broken library step: exit %d %q %q", code, out, errOut)
	}
	// Its error is every pipeline's, printed once; the other library
	// steps are valid on their own.
	code, out, errOut := run(t, "", "validate", "--config", "stepline.yaml")
	if code != exitFailed || errOut != bad || out != "steps/notify.yaml: library step \"notify-oncall\" is valid\nsteps/triage.yaml: library step \"first-line-triage\" is valid\n" {
		t.Errorf("validate --config: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Remove("steps/bad.yaml"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "", "validate", "--config", "stepline.yaml")
	wantOut := "pipelines/alerts.yaml: pipeline \"alerts\" is valid (2 steps)\n" +
		"pipelines/review.yaml: pipeline \"review\" is valid (1 steps)\n" +
		"steps/notify.yaml: library step \"notify-oncall\" is valid\n" +
		"steps/triage.yaml: library step \"first-line-triage\" is valid\n"
	if code != exitOK || out != wantOut || errOut != "" {
		t.Errorf("validate --config: exit %d\n%s\nwant\n%s%s", code, out, wantOut, errOut)
	}
}

// TestLibraryDiagnosticsAgree: for pipelines that use library steps,
// validate, compile, run, the CDK plan and the intake loader report the
// same errors and warnings, those in a library file included.
func TestLibraryDiagnosticsAgree(t *testing.T) {
	cases := map[string]struct {
		library  string // steps/lib.yaml
		pipeline string // pipelines/p.yaml
		want     string // the first error, "" for none
	}{
		"a library step used as it is": {
			"name: lib\nexecutor: scripted\nprompt_template: \"{{ steps.a.summary }}\"\n",
			"name: p\nsteps:\n  - {name: a, executor: scripted}\n  - use: lib\n", ""},
		"a name the library does not have": {
			"name: lib\nexecutor: scripted\n",
			"name: p\nsteps:\n  - use: lob\n", `pipelines/p.yaml:3:10: step #1: use: unknown library step "lob" (did you mean "lib"?)`},
		"a reference the pipeline cannot satisfy": {
			"name: lib\nexecutor: scripted\nprompt_template: \"{{ steps.a.summary }}\"\n",
			"name: p\nsteps:\n  - use: lib\n", `steps/lib.yaml:3:22: step "lib": prompt_template refers to unknown step "a" (library step "lib", used at pipelines/p.yaml:3:10)`},
		"a library step broken on its own": {
			"name: lib\nexecutor: webhook\n",
			"name: p\nsteps:\n  - {use: lib, name: hook}\n", `steps/lib.yaml:2:11: step "lib": executor webhook needs executor_config.url (library step "lib", used at pipelines/p.yaml:3:11)`},
		"a warning from the library": {
			"name: lib\nexecutor: scripted\nconfidence_threshold: 0.9\non_low_confidence: proceed\n",
			"name: p\nsteps:\n  - use: lib\n", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, map[string]string{"stepline.yaml": "", "steps/lib.yaml": c.library, "pipelines/p.yaml": c.pipeline})
			t.Chdir(root)
			d := collect(t, "pipelines", filepath.Join("pipelines", "p.yaml"))
			d.agree(t)
			if got, _, _ := strings.Cut(d.errors["validate"], "\n"); got != c.want {
				t.Errorf("first error %q, want %q", got, c.want)
			}
			if name == "a warning from the library" && d.warnings["validate"] == "" {
				t.Error("no warning")
			}
		})
	}
}
