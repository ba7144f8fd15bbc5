package compiler

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// libraryProject writes files (stepline.yaml empty unless given) to a
// temporary directory, makes it the working directory, so that positions
// are relative, and loads the project.
func libraryProject(t *testing.T, files map[string]string) *project.Project {
	t.Helper()
	root := t.TempDir()
	if _, ok := files["stepline.yaml"]; !ok {
		files["stepline.yaml"] = ""
	}
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	p, err := project.Load("stepline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// triageStep is the library step of the reference's quick-start, with
// nested mappings and a list in its executor_config.
const triageStep = `name: first-line-triage
description: |
  First-line triage of an alert.
tags: [triage, sre]
executor: gateway
executor_config:
  model: small
  base_url: https://llm.example.com/v1
  options:
    temperature: 0.2
    stop: [END]
  headers: {X-Team: sre, X-Tier: one}
prompt_template: "Triage: {{ summary }}"
confidence_threshold: 0.6
timeout_seconds: 120
retry: {attempts: 3, backoff: fixed, delay_seconds: 2}
`

// checkStep is a library step a parallel branch or a fan_out can take.
const checkStep = `name: check
description: Check one service.
executor: scripted
prompt_template: "Check {{ item }}"
timeout_seconds: 30
`

// TestLibraryResolution: the library step is the base, local keys
// replace its keys, executor_config merges at every depth, and a local
// name renames the step; in steps, parallel branches and fan_outs.
func TestLibraryResolution(t *testing.T) {
	triage := func(edit func(s *pipeline.Step)) *pipeline.Step {
		s := &pipeline.Step{
			Name: "first-line-triage", Executor: "gateway", PromptTemplate: "Triage: {{ summary }}", TimeoutSeconds: 120,
			ExecutorConfig: map[string]any{
				"model": "small", "base_url": "https://llm.example.com/v1",
				"options": map[string]any{"temperature": 0.2, "stop": []any{"END"}},
				"headers": map[string]any{"X-Team": "sre", "X-Tier": "one"},
			},
			Gate:      pipeline.Gate{ConfidenceThreshold: 0.6, OnLowConfidence: pipeline.DefaultOnLowConfidence, OnAbort: pipeline.DefaultOnAbort},
			OnFailure: pipeline.OnFailure{Policy: pipeline.FailureAbort},
			Retry:     &pipeline.Retry{Attempts: 3, Backoff: pipeline.BackoffFixed, DelaySeconds: 2},
		}
		if edit != nil {
			edit(s)
		}
		return s
	}
	cases := []struct {
		name  string
		steps string
		want  *pipeline.Step // the first step, when it is a sequential step
		check func(t *testing.T, p *pipeline.Pipeline)
		uses  []Use
	}{
		{name: "the library step as it is",
			steps: "  - use: first-line-triage\n",
			want:  triage(nil),
			uses:  []Use{{Step: "first-line-triage", Pos: pipeline.Pos{File: "pipelines/p.yaml", Line: 3, Col: 10}, Kind: "step", As: "first-line-triage"}}},
		{name: "a local name renames it (the reference's quick-start)",
			steps: "  - name: triage\n    use: first-line-triage\n",
			want:  triage(func(s *pipeline.Step) { s.Name = "triage" }),
			uses:  []Use{{Step: "first-line-triage", Pos: pipeline.Pos{File: "pipelines/p.yaml", Line: 4, Col: 10}, Kind: "step", As: "triage"}}},
		{name: "local keys replace the library's",
			steps: "  - use: first-line-triage\n    confidence_threshold: 0.8\n    prompt_template: Look again.\n    when: pipeline_name == \"p\"\n",
			want: triage(func(s *pipeline.Step) {
				s.ConfidenceThreshold, s.PromptTemplate, s.When = 0.8, "Look again.", `pipeline_name == "p"`
			})},
		{name: "executor_config merges at every depth",
			steps: "  - use: first-line-triage\n    executor_config:\n      model: big\n      options: {temperature: 0.7}\n      headers: {X-Tier: two, X-Run: r}\n",
			want: triage(func(s *pipeline.Step) {
				s.ExecutorConfig = map[string]any{
					"model": "big", "base_url": "https://llm.example.com/v1",
					"options": map[string]any{"temperature": 0.7, "stop": []any{"END"}},
					"headers": map[string]any{"X-Team": "sre", "X-Tier": "two", "X-Run": "r"},
				}
			})},
		{name: "a list or a null in executor_config replaces",
			steps: "  - use: first-line-triage\n    executor_config:\n      options: {stop: [DONE, STOP]}\n      headers: null\n",
			want: triage(func(s *pipeline.Step) {
				s.ExecutorConfig["options"] = map[string]any{"temperature": 0.2, "stop": []any{"DONE", "STOP"}}
				s.ExecutorConfig["headers"] = nil
			})},
		{name: "any other mapping replaces whole",
			steps: "  - use: first-line-triage\n    retry: {attempts: 5}\n",
			want: triage(func(s *pipeline.Step) {
				s.Retry = &pipeline.Retry{Attempts: 5, Backoff: pipeline.DefaultRetryBackoff, DelaySeconds: pipeline.DefaultRetryDelaySeconds}
			})},
		{name: "a parallel branch",
			steps: "  - parallel:\n      name: g\n      join: weighted_average\n      steps:\n        - {use: check, name: logs, weight: 2}\n        - {use: check, name: metrics}\n",
			check: func(t *testing.T, p *pipeline.Pipeline) {
				g := p.Steps[0].(*pipeline.Parallel)
				got := []pipeline.Branch{*g.Branches[0], *g.Branches[1]}
				for i := range got {
					got[i].Pos, got[i].Fields = pipeline.Pos{}, nil
				}
				want := []pipeline.Branch{
					{Name: "logs", Executor: "scripted", PromptTemplate: "Check {{ item }}", TimeoutSeconds: 30, Weight: 2},
					{Name: "metrics", Executor: "scripted", PromptTemplate: "Check {{ item }}", TimeoutSeconds: 30, Weight: 1},
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("branches %+v, want %+v", got, want)
				}
			},
			uses: []Use{
				{Step: "check", Pos: pipeline.Pos{File: "pipelines/p.yaml", Line: 7, Col: 17}, Kind: "branch", As: "logs"},
				{Step: "check", Pos: pipeline.Pos{File: "pipelines/p.yaml", Line: 8, Col: 17}, Kind: "branch", As: "metrics"},
			}},
		{name: "a fan_out",
			steps: "  - {name: a, executor: scripted}\n  - fan_out: {name: each, over: steps.a.services, use: check, timeout_seconds: 10}\n",
			check: func(t *testing.T, p *pipeline.Pipeline) {
				g := p.Steps[1].(*pipeline.FanOut)
				if g.Name != "each" || g.Executor != "scripted" || g.PromptTemplate != "Check {{ item }}" || g.TimeoutSeconds != 10 || g.Over != "steps.a.services" {
					t.Errorf("fan_out %+v", g)
				}
			},
			uses: []Use{{Step: "check", Pos: pipeline.Pos{File: "pipelines/p.yaml", Line: 4, Col: 56}, Kind: "fan_out", As: "each"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: p\nsteps:\n" + c.steps
			p := libraryProject(t, map[string]string{
				"stepline.yaml":          "",
				"steps/triage.yaml":      triageStep,
				"steps/check.yaml":       checkStep,
				"pipelines/p.yaml":       src,
				"steps/_draft.yaml":      "not: [a step",  // skipped: starts with _
				"steps/notes.txt":        "not a step",    // skipped: not YAML
				"steps/.hidden.yaml":     "neither: [one", // skipped: hidden
				"steps/nested/more.yaml": "name: nested",  // skipped: a directory
			})
			f, sm, ds := BuildIn("pipelines/p.yaml", []byte(src), Env{Project: p})
			if sm == nil || len(ds) != 0 {
				t.Fatalf("does not compile cleanly:\n%s", ds)
			}
			if c.want != nil {
				if got, want := resolvedFields(f.Pipeline.Steps[0].(*pipeline.Step)), resolvedFields(c.want); !reflect.DeepEqual(got, want) {
					t.Errorf("step\n %+v\nwant\n %+v", got, want)
				}
			}
			if c.check != nil {
				c.check(t, f.Pipeline)
			}
			if c.uses != nil && !reflect.DeepEqual(f.Uses(), c.uses) {
				t.Errorf("uses %+v, want %+v", f.Uses(), c.uses)
			}
		})
	}
}

// resolvedFields are the fields of a step that resolution decides, without
// positions.
func resolvedFields(s *pipeline.Step) []any {
	var retry any
	if s.Retry != nil {
		retry = [3]any{s.Retry.Attempts, s.Retry.Backoff, s.Retry.DelaySeconds}
	}
	return []any{s.Name, s.Executor, s.ExecutorConfig, s.PromptTemplate, s.Gate, s.TimeoutSeconds, s.When, s.OnFailure.Policy, retry}
}

// TestLibraryErrors: every problem of a use: or a library step, with its
// position; an error in a library file names the use: it is an error of.
func TestLibraryErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string // besides steps/triage.yaml and steps/check.yaml
		steps string            // of pipelines/p.yaml
		want  []string
	}{
		{name: "a name close to a library step's",
			steps: "  - use: frist-line-triage\n",
			want:  []string{`pipelines/p.yaml:3:10: step #1: use: unknown library step "frist-line-triage" (did you mean "first-line-triage"?)`}},
		{name: "a name close to none",
			steps: "  - {name: a, use: deploy}\n",
			want:  []string{`pipelines/p.yaml:3:20: step "a": use: unknown library step "deploy" (library steps: check, first-line-triage)`}},
		{name: "an unknown name in a branch and in a fan_out",
			steps: "  - parallel:\n      name: g\n      steps: [{use: chek}]\n  - fan_out: {name: f, over: '[1]', use: checks}\n",
			want: []string{
				`pipelines/p.yaml:5:21: branch #1 of parallel "g": use: unknown library step "chek" (did you mean "check"?)`,
				`pipelines/p.yaml:6:42: fan_out "f": use: unknown library step "checks" (did you mean "check"?)`,
			}},
		{name: "use: not a name",
			steps: "  - use: [first-line-triage]\n",
			want:  []string{`pipelines/p.yaml:3:10: step #1: use must be a string, not list`}},
		{name: "use: on a parallel group",
			steps: "  - parallel: {name: g, use: check, steps: [{name: b, executor: scripted}]}\n",
			want:  []string{`pipelines/p.yaml:3:25: parallel "g": unknown field "use": use: names a library step in a steps entry, a parallel branch or a fan_out`}},
		{name: "an override out of range, at the override",
			steps: "  - use: first-line-triage\n    confidence_threshold: 2\n",
			want:  []string{`pipelines/p.yaml:4:27: step "first-line-triage": confidence_threshold: 2 is out of range: 0..1`}},
		{name: "a library step's field a branch does not take, in the library file",
			steps: "  - parallel:\n      name: g\n      steps: [{use: first-line-triage}, {name: b, executor: scripted}]\n",
			want: []string{
				`steps/triage.yaml:14:1: branch "first-line-triage" of parallel "g": unknown field "confidence_threshold" (library step "first-line-triage", used at pipelines/p.yaml:5:21)`,
				`steps/triage.yaml:16:1: branch "first-line-triage" of parallel "g": unknown field "retry" (library step "first-line-triage", used at pipelines/p.yaml:5:21)`,
			}},
		{name: "a reference only the pipeline decides, at the library's line, naming the use it fails in",
			files: map[string]string{"steps/summary.yaml": "name: summary\nexecutor: scripted\nprompt_template: |\n  Summarise.\n  Before: {{ steps.intake.summary }}\n"},
			steps: "  - {use: summary, name: early}\n  - {name: intake, executor: scripted}\n  - {use: summary, name: late}\n",
			want:  []string{`steps/summary.yaml:5:14: step "early": prompt_template refers to step "intake", which runs later (library step "summary", used at pipelines/p.yaml:3:11)`}},
		{name: "a library step with an error on its own, used: at the library's line, with the use",
			files: map[string]string{"steps/bad.yaml": "name: bad\nexecutor: scripted\ntimeout_seconds: 0\n"},
			steps: "  - {use: bad, name: b}\n",
			want:  []string{`steps/bad.yaml:3:18: step "bad": timeout_seconds: 0 is out of range: 1..99999999 (library step "bad", used at pipelines/p.yaml:3:11)`}},
		{name: "a library step with an error on its own, unused: every pipeline's error",
			files: map[string]string{"steps/bad.yaml": "name: bad\nexecutor: scripted\ntimeout_seconds: 0\n"},
			steps: "  - {name: a, executor: scripted}\n",
			want:  []string{`steps/bad.yaml:3:18: step "bad": timeout_seconds: 0 is out of range: 1..99999999`}},
		{name: "a warning of a library step: once, in the pipeline that uses it",
			files: map[string]string{"steps/lax.yaml": "name: lax\nexecutor: scripted\nconfidence_threshold: 0.9\non_low_confidence: proceed\n"},
			steps: "  - use: lax\n",
			want:  []string{`steps/lax.yaml:3:23: warning: step "lax": confidence_threshold has no effect with on_low_confidence: proceed (library step "lax", used at pipelines/p.yaml:3:10)`}},
		{name: "two files of one name",
			files: map[string]string{"steps/zz.yaml": "name: check\nexecutor: scripted\n"},
			steps: "  - {name: a, executor: scripted}\n",
			want:  []string{`steps/zz.yaml:1:7: library step "check" is defined twice: first in steps/check.yaml:1:7`}},
		{name: "what a library file cannot hold",
			files: map[string]string{"steps/odd.yaml": "name: odd\ndescription: [a]\ntags: [x, {y: 1}]\nexecutor: scripted\nuse: check\nparallel: {}\n"},
			steps: "  - {name: a, executor: scripted}\n",
			want: []string{
				`steps/odd.yaml:2:14: library step: description must be a string, not list`,
				`steps/odd.yaml:3:11: library step: each tag must be a string, not mapping`,
				`steps/odd.yaml:5:1: library step: a library step cannot use another: write its fields here`,
				`steps/odd.yaml:6:1: library step: a library step is one step, not a parallel group: write the group in the pipeline, where its branches (or the fan_out) may use library steps`,
			}},
		{name: "a library file that is no step",
			files: map[string]string{"steps/a.yaml": "- a list\n", "steps/b.yaml": "", "steps/c.yaml": "description: no name\nexecutor: scripted\n", "steps/d.yaml": "name: [x\n",
				"steps/e.yaml": "name: e\nexecutor: scripted\n---\nname: f\nexecutor: scripted\n"},
			steps: "  - {name: a, executor: scripted}\n",
			want: []string{
				`steps/a.yaml:1:1: a library step file must be a mapping: a step with a name and an executor, and a description and tags, not a list`,
				`steps/b.yaml:1:1: file is empty: a library step needs at least a name and an executor`,
				`steps/c.yaml:1:1: library step: missing required field "name"`,
				`steps/d.yaml:1:8: invalid YAML: did not find expected ',' or ']'`,
				`steps/e.yaml:3:1: a second YAML document starts here: a file holds one document; put the other in a file of its own`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"steps/triage.yaml": triageStep, "steps/check.yaml": checkStep}
			for k, v := range c.files {
				files[k] = v
			}
			src := "name: p\nsteps:\n" + c.steps
			files["pipelines/p.yaml"] = src
			p := libraryProject(t, files)
			_, ds := loadIn("pipelines/p.yaml", []byte(src), Env{Project: p})
			if got := strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestUseWithoutLibrary: outside a project, or in one without step
// files, use: names nothing.
func TestUseWithoutLibrary(t *testing.T) {
	src := []byte("name: p\nsteps:\n  - use: check\n")
	_, ds := Load("p.yaml", src)
	if want := `p.yaml:3:10: step #1: use: unknown library step "check": no stepline.yaml above p.yaml, so the pipeline has no step library (a library step is a file in steps/ beside stepline.yaml; or give --config)` + "\n"; ds.String() != want {
		t.Errorf("outside a project:\n%s\nwant:\n%s", ds, want)
	}
	p := libraryProject(t, map[string]string{"pipelines/p.yaml": string(src)})
	_, ds = loadIn("pipelines/p.yaml", src, Env{Project: p})
	if want := `pipelines/p.yaml:3:10: step #1: use: unknown library step "check": the step library steps has no steps` + "\n"; ds.String() != want {
		t.Errorf("without step files:\n%s\nwant:\n%s", ds, want)
	}
}

// TestUseNodeBudget: the library steps one pipeline uses add at most
// maxUseNodes nodes, each use counted: below, at and above the bound.
func TestUseNodeBudget(t *testing.T) {
	if maxUseNodes != 1_000_000 {
		t.Fatalf("maxUseNodes is %d, want yamldoc's budget", maxUseNodes)
	}
	src := []byte("name: p\nsteps:\n  - {use: check, name: a}\n  - {use: check, name: b}\n")
	p := libraryProject(t, map[string]string{"steps/check.yaml": checkStep})
	per := LoadLibrary(Env{Project: p}).steps["check"].nodes
	if per < 9 {
		t.Fatalf("check holds %d nodes", per)
	}
	for _, c := range []struct {
		name  string
		limit int
		want  string
	}{
		{"below", 2*per + 1, ""},
		{"at", 2 * per, ""},
		{"above", 2*per - 1, `pipelines/p.yaml:4:11: step "b": use: the library steps this pipeline uses hold more than ` + strconv.Itoa(2*per-1) + ` YAML nodes together (aliases expanded), more than a pipeline file may hold`},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(old int) { maxUseNodes = old }(maxUseNodes)
			maxUseNodes = c.limit
			_, ds := loadIn("pipelines/p.yaml", src, Env{Project: p})
			if got := strings.TrimSuffix(ds.String(), "\n"); got != c.want {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// TestLibraryEditChangesDefinition: the state machine holds the resolved
// step, so editing the library step changes the definition of every
// pipeline that uses it (and a deploy picks it up).
func TestLibraryEditChangesDefinition(t *testing.T) {
	src := []byte("name: p\nsteps:\n  - {use: check, name: one}\n")
	libraryProject(t, map[string]string{"steps/check.yaml": checkStep, "pipelines/p.yaml": string(src)})
	compile := func() string {
		t.Helper()
		p, err := project.Load("stepline.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, sm, ds := BuildIn("pipelines/p.yaml", src, Env{Project: p})
		if sm == nil {
			t.Fatalf("does not compile:\n%s", ds)
		}
		def, err := Marshal(sm)
		if err != nil {
			t.Fatal(err)
		}
		return string(def)
	}
	before := compile()
	edited := strings.Replace(checkStep, "Check {{ item }}", "Inspect {{ item }} closely", 1)
	if err := os.WriteFile("steps/check.yaml", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	after := compile()
	if !strings.Contains(before, "Check {{ item }}") || strings.Contains(before, "Inspect") {
		t.Errorf("before the edit the definition does not hold the library's prompt:\n%s", before)
	}
	if !strings.Contains(after, "Inspect {{ item }} closely") || strings.Contains(after, "Check {{ item }}") {
		t.Errorf("after the edit the definition does not hold the edited prompt:\n%s", after)
	}
}

// TestStepFileOnItsOwn: a library step is checked as the only step of a
// pipeline that defines every step, var and name it refers to, so what
// only a pipeline decides is left to the pipelines that use it.
func TestStepFileOnItsOwn(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{name: "references to steps, vars and trigger names",
			src: "name: s\nexecutor: scripted\nwhen: steps.scan.proceed and vars.region == \"eu\" and service == \"api\"\nprompt_template: \"{{ steps['fan/0'].summary }} {{ steps.first_line.summary }}\"\n"},
		{name: "a reference to itself",
			src:  "name: selfcheck\nexecutor: scripted\nprompt_template: \"{{ steps.selfcheck.summary }}\"\n",
			want: []string{`s.yaml:3:22: step "selfcheck": prompt_template refers to the step itself; a step sees only earlier steps (loop_until steps see loop.prior_output)`}},
		{name: "a when: that does not parse",
			src:  "name: s\nexecutor: scripted\nwhen: steps.a.b ==\n",
			want: []string{`s.yaml:3:19: step "s": when: unexpected end of condition, expected a value`}},
		{name: "what an executor needs",
			src:  "name: hook\nexecutor: webhook\nprompt_template: x\n",
			want: []string{`s.yaml:2:11: step "hook": executor webhook needs executor_config.url`}},
		{name: "a field of no step",
			src:  "name: s\nexecutor: scripted\npromt_template: x\n",
			want: []string{`s.yaml:3:1: step "s": unknown field "promt_template" (did you mean "prompt_template"?)`}},
		{name: "no executor",
			src:  "name: s\n",
			want: []string{`s.yaml:1:1: step "s": missing required field "executor"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls, ds := LoadStepFile("s.yaml", []byte(c.src), Env{})
			var got []string
			if len(ds) > 0 {
				got = strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if ls.broken != (len(c.want) > 0) {
				t.Errorf("broken = %v", ls.broken)
			}
		})
	}
}

// TestRepositoryLibrary: the repository's step library has no problem on
// its own, and an example pipeline uses each of its steps, overriding the
// library where it says so.
func TestRepositoryLibrary(t *testing.T) {
	p := repositoryProject(t)
	lib := LoadLibrary(Env{Project: p})
	if len(lib.Steps()) == 0 || len(lib.Diagnostics()) != 0 {
		t.Fatalf("library %d steps:\n%s", len(lib.Steps()), lib.Diagnostics())
	}
	used := map[string]bool{}
	files, _ := filepath.Glob("../pipelines/*.yaml")
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := loadIn(path, src, Env{Project: p})
		for _, u := range f.Uses() {
			used[u.Step] = true
		}
		if filepath.Base(path) != "sre-investigation.yaml" {
			continue
		}
		s := f.Pipeline.Steps[0].(*pipeline.Step)
		if s.Name != "investigate" || s.ConfidenceThreshold != 0.7 || s.TimeoutSeconds != 1800 || s.ExecutorConfig["agent"] != "sre-investigator" {
			t.Errorf("sre-investigation's investigate step: %+v", s)
		}
	}
	for _, s := range lib.Steps() {
		if !used[s.Name] {
			t.Errorf("no example pipeline uses library step %q", s.Name)
		}
	}
}
