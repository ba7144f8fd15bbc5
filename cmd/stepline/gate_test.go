package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// gateCases are pipelines that stepline validate passed while compile, run
// or the CDK app (cdk synth, cdk deploy) refused them. Each now fails
// validate with the message every other path gives, at the same place.
var gateCases = []struct {
	name string
	src  string
	want string // the first error, after "<file>:"
}{
	{"a prompt over the Task payload limit",
		"name: p\nsteps:\n  - name: s\n    executor: scripted\n    prompt_template: " + quote(strings.Repeat("x", 7<<20)) + "\n",
		`3:11: step "s": its configuration and templates take 7340`},
	{"a definition over 1 MiB", manySteps(1500, 700),
		`1:1: pipeline "p" compiles to `},
	{"a state name over 80 characters (cdk deploy)",
		"name: p\nsteps:\n  - parallel:\n      name: " + strings.Repeat("g", 40) + "\n      steps:\n        - {name: " + strings.Repeat("b", 40) + ", executor: scripted}\n        - {name: c, executor: scripted}\n",
		`6:18: branch "` + strings.Repeat("b", 40) + `" of parallel "` + strings.Repeat("g", 40) + `": state name "` + strings.Repeat("g", 40) + "/" + strings.Repeat("b", 40) + `" has 81 characters, over Step Functions' limit of 80`},
	{"an executor config only the executor checks refuse (cdk synth)",
		"name: p\nsteps:\n  - {name: s, executor: gateway, executor_config: {model: m, base_url: 'http://h', temperature: 7}}\n",
		`3:51: step "s": executor_config.temperature: must be between 0 and 2, got 7`},
	{"a templated bedrock model (cdk synth)",
		"name: p\nvars: {model: m}\nsteps:\n  - {name: s, executor: bedrock, executor_config: {model: \"{{ vars.model }}\"}}\n",
		`4:51: step "s": executor_config.model "{{ vars.model }}" is a template`},
	{"a schedule EventBridge Scheduler cannot run (cdk synth)",
		"name: p\nschedule: {cron: \"0 9 1 * mon\"}\nsteps:\n  - {name: s, executor: scripted}\n",
		`2:18: schedule.cron "0 9 1 * mon": restricts both day of month and day of week`},
	{"a sub-pipeline not beside it (run, cdk synth)",
		"name: p\nsteps:\n  - {name: s, executor: pipeline, executor_config: {pipeline: child}}\n",
		`3:52: step "s": executor_config.pipeline "child": no pipeline file in `},
	{"a sub-pipeline that cannot be named",
		"name: p\nsteps:\n  - {name: s, executor: pipeline, executor_config: {pipeline: \"order intake\"}}\n",
		`3:52: step "s": executor_config.pipeline "order intake" is not a pipeline name`},
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func manySteps(n, size int) string {
	var b strings.Builder
	b.WriteString("name: p\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: s%d, executor: scripted, prompt_template: %s}\n", i, quote(strings.Repeat("z", size)))
	}
	return b.String()
}

// TestOneGate: each case fails validate, compile, run, the CDK plan and the
// intake loader (serve, ingest) with the same positioned errors.
func TestOneGate(t *testing.T) {
	for _, c := range gateCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := run(t, "", "validate", path)
			if code != exitFailed || !strings.HasPrefix(errOut, path+":"+c.want) {
				t.Fatalf("validate: exit %d\n%.600s\nwant %s:%s", code, errOut, path, c.want)
			}
			d := collect(t, dir, path)
			for _, p := range d.paths() {
				if got := d.errors[p]; got != d.errors["validate"] {
					t.Errorf("%s errors:\n%s\nvalidate errors:\n%s", p, got, d.errors["validate"])
				}
			}
		})
	}
}

// TestDiagnosticsAgree: for every example pipeline and a set of files with
// errors or warnings, validate, compile, run (local.Runner.Compile), the CDK
// plan and the intake loader report the same errors, and those that keep
// warnings the same warnings.
func TestDiagnosticsAgree(t *testing.T) {
	examples, _ := filepath.Glob("../../pipelines/*.yaml")
	if len(examples) < 4 {
		t.Fatalf("found %d examples", len(examples))
	}
	for _, path := range examples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			d := collect(t, filepath.Dir(path), path)
			d.agree(t)
			if d.errors["validate"] != "" {
				t.Errorf("an example does not validate:\n%s", d.errors["validate"])
			}
		})
	}
	files := map[string]string{
		"when on an included metadata key":    "name: p\ncontext_template:\n  include: [metadata.count]\nsteps:\n  - {name: a, executor: scripted, when: metadata.count >= 3}\n",
		"a var shadowing an include":          "name: p\nvars: {service: x}\ncontext_template:\n  include: [labels.service]\nsteps:\n  - {name: a, executor: scripted, when: service == \"x\"}\n",
		"gateway without base_url":            "name: p\nsteps:\n  - {name: a, executor: gateway, executor_config: {model: m}}\n",
		"a warning and an error":              "name: p\nvars: {labels: x}\nsteps:\n  - {name: a, executor: gatway}\n",
		"a Liquid filter that does not exist": "name: p\nsteps:\n  - {name: a, executor: scripted, prompt_template: \"{{ summary | upper }}\"}\n",
		"an unknown step reference":           "name: p\nsteps:\n  - {name: a, executor: scripted, when: steps.b.proceed}\n  - {name: b, executor: scripted}\n",
		"not a pipeline":                      "- just\n- a list\n",
		"a prompt opening with a Liquid tag":  "name: p\nsteps:\n  - {name: a, executor: scripted, prompt_template: \"{% if true %}yes{% endif %} and more\"}\n",
	}
	for _, c := range gateCases {
		files[c.name] = c.src
	}
	for name, src := range files {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			collect(t, dir, path).agree(t)
		})
	}
}

// diagnostics are what each path reported for one file: its errors and
// (where the path keeps them) its warnings, one per line.
type diagnostics struct {
	errors   map[string]string
	warnings map[string]string
}

func (d diagnostics) paths() []string {
	var out []string
	for p := range d.errors {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (d diagnostics) agree(t *testing.T) {
	t.Helper()
	for _, p := range d.paths() {
		if got := d.errors[p]; got != d.errors["validate"] {
			t.Errorf("%s errors:\n%s\nvalidate errors:\n%s", p, got, d.errors["validate"])
		}
	}
	for p, got := range d.warnings {
		if got != d.warnings["validate"] {
			t.Errorf("%s warnings:\n%s\nvalidate warnings:\n%s", p, got, d.warnings["validate"])
		}
	}
}

// collect runs every path over the file at path in dir.
func collect(t *testing.T, dir, path string) diagnostics {
	t.Helper()
	d := diagnostics{errors: map[string]string{}, warnings: map[string]string{}}
	split := func(text string) (errs, warns string) {
		for _, line := range strings.SplitAfter(text, "\n") {
			switch {
			case line == "":
			case strings.Contains(line, ": warning: "):
				warns += line
			default:
				errs += line
			}
		}
		return errs, warns
	}
	fromErr := func(err error) string {
		if err == nil {
			return ""
		}
		ds, ok := compiler.AsError(err)
		if !ok {
			t.Fatalf("%T is not a compiler error: %v", err, err)
		}
		return ds.String()
	}

	_, _, errOut := run(t, "", "validate", path)
	d.errors["validate"], d.warnings["validate"] = split(errOut)
	_, _, errOut = run(t, "", "compile", path)
	d.errors["compile"], d.warnings["compile"] = split(errOut)
	if e, _ := split(errOut); e != "" {
		code, _, runErr := run(t, "", "run", "--dir", t.TempDir(), path)
		if code == exitOK {
			t.Errorf("run: exit 0 for a file compile refuses")
		}
		d.errors["run"] = onlyDiagnostics(runErr, path)
	}

	runner, err := local.Open(t.Context(), local.Config{Dir: t.TempDir(), Handler: func(*sqlite.Store) local.StepHandler { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	_, _, ds, err := runner.Compile(path)
	if _, isDiag := compiler.AsError(err); err != nil && !isDiag {
		t.Fatalf("Runner.Compile: %v", err)
	}
	d.errors["local.Runner.Compile"], d.warnings["local.Runner.Compile"] = ds.Errors().String(), ds.Warnings().String()

	ps, err := plan.Load(dir, settings.Defaults{})
	d.errors["plan.Load"] = fromErr(err)
	for _, p := range ps {
		if filepath.Base(p.File) == filepath.Base(path) {
			var w string
			for _, line := range p.Warnings {
				w += line + "\n"
			}
			d.warnings["plan.Load"] = w
		}
	}

	_, err = intake.LoadPipelines(dir)
	d.errors["intake.LoadPipelines"] = fromErr(err)
	return d
}

// onlyDiagnostics keeps the lines of run's output that are diagnostics of
// the file, or of the library steps it uses (run also prints what it is
// doing).
func onlyDiagnostics(out, path string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.HasPrefix(line, path+":") || libraryDiagnostic.MatchString(line) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// libraryDiagnostic is a diagnostic positioned in a library step file.
var libraryDiagnostic = regexp.MustCompile(`^steps/[^:\s]+\.ya?ml:\d+:\d+: `)

// TestValidateWarnsWithoutBaseURL: a gateway step without base_url is a
// warning only when the environment has no OPENAI_BASE_URL either; it
// never fails validate or compile.
func TestValidateWarnsWithoutBaseURL(t *testing.T) {
	with := writeFile(t, "with.yaml", "name: p\nsteps:\n  - {name: a, executor: gateway, executor_config: {model: m, base_url: 'http://localhost:11434/v1'}}\n")
	without := writeFile(t, "without.yaml", "name: p\nsteps:\n  - {name: a, executor: gateway, executor_config: {model: m}}\n")
	cases := []struct {
		name, file, env, warning string
	}{
		{"step and environment", with, "https://api.openai.com/v1", ""},
		{"step only", with, "", ""},
		{"environment only", without, "https://api.openai.com/v1", ""},
		{"neither", without, "", without + `:3:51: warning: step "a": executor_config.base_url: not set, and OPENAI_BASE_URL is not set here`},
		{"environment not a URL", without, "api.openai.com", without + `:3:51: warning: step "a": executor_config.base_url: not set, and OPENAI_BASE_URL is not an absolute http or https URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, cmd := range []string{"validate", "compile"} {
				var out, errOut strings.Builder
				code := dispatch(t.Context(), []string{cmd, c.file}, env{
					stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
					getenv: func(k string) string { return map[string]string{"OPENAI_BASE_URL": c.env}[k] },
				})
				if code != exitOK {
					t.Fatalf("%s: exit %d\n%s", cmd, code, errOut.String())
				}
				if c.warning == "" && errOut.Len() > 0 || !strings.HasPrefix(errOut.String(), c.warning) {
					t.Errorf("%s: stderr %q, want %q", cmd, errOut.String(), c.warning)
				}
			}
		})
	}
}
