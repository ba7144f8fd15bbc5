package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/store"
)

// runIn calls the CLI in-process with env vars and stdout's terminal-ness
// chosen, and returns its exit code and output.
func runIn(t *testing.T, vars map[string]string, terminal bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(context.Background(), args, env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		getenv:      func(k string) string { return vars[k] },
		outTerminal: func(io.Writer) bool { return terminal },
	})
	return code, out.String(), errOut.String()
}

// gatePipeline writes a pipeline whose scripted step "triage" answers and
// whose human step "approve" then waits, with its replies; it returns
// both paths.
func gatePipeline(t *testing.T) (pipeline, responses string) {
	t.Helper()
	dir := t.TempDir()
	pipeline = filepath.Join(dir, "gate.yaml")
	responses = filepath.Join(dir, "r.yaml")
	write(t, pipeline, `name: gate
steps:
  - {name: triage, executor: scripted, prompt_template: Triage the alert, calibration: {n_min: 2, bin_width: 0.5}}
  - {name: approve, executor: human, prompt_template: "Ship it?", timeout_seconds: 600}
`)
	write(t, responses, `triage: ['{"confidence": 0.9, "summary": "fine", "next_step_context": ""}']`+"\n")
	return pipeline, responses
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitingRun runs the gate pipeline until its human step waits and
// returns the run's ID.
func waitingRun(t *testing.T, state string) string {
	t.Helper()
	pipeline, responses := gatePipeline(t)
	code, out, errOut := run(t, "", "run", pipeline, "--dir", state, "--responses", responses)
	m := regexp.MustCompile(`run (run-\S+): waiting`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	return m[1]
}

// TestFlagsAfterArguments: flags go before, between and after the
// positional arguments, in their --name and their old -name spellings,
// and "--" ends them.
func TestFlagsAfterArguments(t *testing.T) {
	cases := []struct {
		name string
		args func(state, runID string) []string
		by   string
	}{
		{"after", func(state, runID string) []string {
			return []string{"approve", runID, "approve", "--by", "me", "--dir", state}
		}, "me"},
		{"between", func(state, runID string) []string {
			return []string{"approve", "--dir", state, runID, "--by=you", "approve"}
		}, "you"},
		{"single dash after", func(state, runID string) []string {
			return []string{"approve", runID, "approve", "-by", "them", "-dir", state}
		}, "them"},
		{"after --", func(state, runID string) []string {
			return []string{"approve", "--dir", state, "--by", "us", "--", runID, "approve"}
		}, "us"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			runID := waitingRun(t, state)
			code, out, errOut := run(t, "", c.args(state, runID)...)
			if code != exitOK || !strings.Contains(out, "Approved by "+c.by) || !strings.Contains(out, "run "+runID+": completed") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
		})
	}
	t.Run("a flag's value is never read as a flag", func(t *testing.T) {
		state := t.TempDir()
		runID := waitingRun(t, state)
		code, out, errOut := run(t, "", "feedback", runID, "--outcome", "correct", "--notes", "-json", "--dir", state)
		if code != exitOK || !strings.Contains(out, "correct") || !strings.Contains(out, ": -json") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
	})
	t.Run("too many arguments", func(t *testing.T) {
		code, _, errOut := run(t, "", "approve", "a", "b", "c", "--by", "me")
		if code != exitUsage || !strings.Contains(errOut, "accepts 2 arg(s), received 3\nusage: stepline approve [flags] RUN STEP") {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
	})
}

// TestSingleDash: single-dash long flags of the command are rewritten as
// pflag reads them; shorthands, values, unknown names and what follows
// "--" are left alone.
func TestSingleDash(t *testing.T) {
	root := newRoot(env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, new(int))
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"long flags", []string{"run", "-responses", "r.yaml", "-json", "p.yaml"}, []string{"run", "--responses", "r.yaml", "--json", "p.yaml"}},
		{"with =", []string{"run", "p.yaml", "-responses=r.yaml"}, []string{"run", "p.yaml", "--responses=r.yaml"}},
		{"a value that looks like a flag", []string{"feedback", "RUN", "--notes", "-json", "-json"}, []string{"feedback", "RUN", "--notes", "-json", "--json"}},
		{"a single-dash flag's value", []string{"feedback", "RUN", "-notes", "-json"}, []string{"feedback", "RUN", "--notes", "-json"}},
		{"shorthand cluster", []string{"validate", "-qv", "p.yaml"}, []string{"validate", "-qv", "p.yaml"}},
		{"shorthand with a value", []string{"compile", "-o", "-dir", "p.yaml"}, []string{"compile", "-o", "-dir", "p.yaml"}},
		{"unknown name", []string{"runs", "-nope"}, []string{"runs", "-nope"}},
		{"not this command's flag", []string{"validate", "-json"}, []string{"validate", "-json"}},
		{"after --", []string{"show", "--", "-json"}, []string{"show", "--", "-json"}},
		{"subcommand", []string{"output", "check", "-finish-reason", "length"}, []string{"output", "check", "--finish-reason", "length"}},
		{"help", []string{"run", "-help"}, []string{"run", "--help"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, _, err := root.Find(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := singleDash(target, c.in); !slices.Equal(got, c.want) {
				t.Errorf("singleDash(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// allCommands lists every command path of the table ("run", "output
// check", ...) and of cobra's own (help, completion and its shells),
// the root's ([]) first.
func allCommands(t *testing.T) [][]string {
	out := [][]string{{}}
	var walk func(prefix []string, c *cobra.Command)
	walk = func(prefix []string, c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			path := append(slices.Clone(prefix), sub.Name())
			out = append(out, path)
			walk(path, sub)
		}
	}
	walk(nil, newRoot(env{stdout: io.Discard, stderr: io.Discard}, new(int)))
	for _, c := range commands() {
		name, _, _ := strings.Cut(c.use, " ")
		if !slices.ContainsFunc(out, func(p []string) bool { return len(p) == 1 && p[0] == name }) {
			t.Errorf("command %q is not in the tree", name)
		}
	}
	if len(out) < len(commands())+7 { // + help, completion and its four shells
		t.Errorf("commands %q", out)
	}
	return out
}

// TestHelpOnEveryCommand: -h and --help print the command's usage and its
// flags on stdout and exit 0, for every command and subcommand of the
// table, and run nothing.
func TestHelpOnEveryCommand(t *testing.T) {
	for _, path := range allCommands(t) {
		for _, h := range []string{"-h", "--help"} {
			t.Run(strings.Join(append(slices.Clone(path), h), " "), func(t *testing.T) {
				code, out, errOut := run(t, "", append(slices.Clone(path), h)...)
				if code != exitOK || errOut != "" {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if !strings.Contains(out, strings.TrimSpace("usage: stepline "+strings.Join(path, " "))) || !strings.Contains(out, "-h, --help   ") ||
					!strings.Contains(out, "print this help") {
					t.Errorf("stdout lacks the usage:\n%s", out)
				}
			})
		}
	}
	t.Run("help COMMAND", func(t *testing.T) {
		code, out, _ := run(t, "", "help", "approve")
		if code != exitOK || !strings.Contains(out, "usage: stepline approve [flags] RUN STEP") || !strings.Contains(out, "--by string") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("no command", func(t *testing.T) {
		code, out, _ := run(t, "")
		if code != exitUsage || !strings.Contains(out, "usage: stepline <command>") || !strings.Contains(out, "  approve ") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
}

// TestVersion: --version, -v and the version command print the build
// information this binary has.
func TestVersion(t *testing.T) {
	want := "stepline " + versionText(readBuildInfo()) + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}, {"-version"}} {
		code, out, errOut := run(t, "", args...)
		if code != exitOK || out != want || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q (want %q), stderr %q", args, code, out, want, errOut)
		}
	}
}

func TestVersionText(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	cases := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "v1.2.0"},
			Settings: settings("vcs.revision", "0123456789abcdef", "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "false")},
			"v1.2.0 (commit 0123456789abcdef, 2026-12-01T10:00:00Z; go1.25.0)"},
		{"modified work tree", debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", "0123456789abcdef", "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "true")},
			"devel (commit 0123456789abcdef, 2026-12-01T10:00:00Z, modified; go1.25.0)"},
		{"no VCS information", debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"}}, "devel (go1.25.0)"},
		{"nothing", debug.BuildInfo{}, "devel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := versionText(buildInfoOf(&c.info)); got != c.want {
				t.Errorf("versionText = %q, want %q", got, c.want)
			}
		})
	}
}

// TestVersionOfBuiltBinary: a built binary's --version says what the go
// command stamped into it (go version -m): its module version, and where
// the checkout lets the go command read it, the commit git names.
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "stepline")
	if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "stepline " + versionText(buildInfoOf(info)) + "\n"; string(out) != want {
		t.Errorf("--version = %q, want %q", out, want)
	}
	b := buildInfoOf(info)
	if b.revision == "" {
		// The go command stamps no VCS information in a git worktree
		// (.git is a file there) or a copy without .git.
		t.Logf("no VCS information stamped: %q", out)
		return
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err == nil && !strings.Contains(string(out), "commit "+strings.TrimSpace(string(head))) {
		t.Errorf("--version = %q, want the commit %s", out, head)
	}
}

// TestCompletion: completion scripts for bash, zsh and fish; each shell
// installed here accepts its script's syntax; and the completions the
// scripts ask for name the commands, a command's flags and their values.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			code, out, errOut := run(t, "", "completion", sh)
			if code != exitOK || errOut != "" || !strings.Contains(out, "stepline") || len(out) < 1000 {
				t.Fatalf("exit %d, stderr %q, script %.200q", code, errOut, out)
			}
			path, err := exec.LookPath(sh)
			if err != nil {
				if sh == "bash" {
					t.Fatal("bash is not installed")
				}
				t.Skipf("%s is not installed: the script's syntax is not checked", sh)
			}
			script := filepath.Join(t.TempDir(), "stepline."+sh)
			write(t, script, out)
			if b, err := exec.Command(path, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, b)
			}
		})
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"commands", []string{"__complete", "app"}, []string{"approve"}},
		{"flags after arguments", []string{"__complete", "approve", "RUN", "STEP", "--b"}, []string{"--by"}},
		{"schema arguments", []string{"__complete", "schema", ""}, []string{"pipeline", "agent"}},
		{"graph formats", []string{"__complete", "graph", "--format", ""}, []string{"mermaid", "dot"}},
		{"subcommands", []string{"__complete", "output", ""}, []string{"check"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := run(t, "", c.args...)
			if code != exitOK {
				t.Fatalf("exit %d", code)
			}
			lines := strings.Split(out, "\n")
			for _, w := range c.want {
				if !slices.ContainsFunc(lines, func(l string) bool { return l == w || strings.HasPrefix(l, w+"\t") }) {
					t.Errorf("completions lack %q:\n%s", w, out)
				}
			}
		})
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestColour: status words are coloured on a terminal, never when NO_COLOR
// is set (to anything) or TERM is dumb, and never off a terminal; the
// text is the same either way.
func TestColour(t *testing.T) {
	state := t.TempDir()
	pipeline, responses := gatePipeline(t)
	code, plain, errOut := runIn(t, nil, false, "run", pipeline, "--dir", state, "--responses", responses)
	if code != exitOK || ansi.MatchString(plain) {
		t.Fatalf("run off a terminal: exit %d, stdout %q, stderr %s", code, plain, errOut)
	}
	runID := regexp.MustCompile(`run (run-\S+): waiting`).FindStringSubmatch(plain)[1]
	for _, args := range [][]string{{"runs"}, {"show", runID}} {
		cases := []struct {
			name     string
			vars     map[string]string
			terminal bool
			coloured bool
		}{
			{"terminal", nil, true, true},
			{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, true, false},
			{"NO_COLOR anything", map[string]string{"NO_COLOR": "no"}, true, false},
			{"NO_COLOR empty", map[string]string{"NO_COLOR": ""}, true, true},
			{"dumb terminal", map[string]string{"TERM": "dumb"}, true, false},
			{"not a terminal", nil, false, false},
		}
		for _, c := range cases {
			t.Run(args[0]+" "+c.name, func(t *testing.T) {
				code, out, errOut := runIn(t, c.vars, c.terminal, append(args, "--dir", state)...)
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if got := strings.Contains(out, "\x1b[33mwaiting\x1b[0m"); got != c.coloured {
					t.Errorf("coloured %v, want %v:\n%q", got, c.coloured, out)
				}
				if c.coloured {
					_, uncoloured, _ := runIn(t, nil, false, append(args, "--dir", state)...)
					if ansi.ReplaceAllString(out, "") != uncoloured {
						t.Errorf("the coloured text differs from the plain one:\n%q\n%q", out, uncoloured)
					}
				}
			})
		}
	}
	t.Run("run on a terminal", func(t *testing.T) {
		code, out, _ := runIn(t, nil, true, "run", pipeline, "--dir", t.TempDir(), "--responses", responses)
		if code != exitOK || !strings.Contains(out, "\x1b[32mcompleted\x1b[0m") || !strings.Contains(out, ": \x1b[33mwaiting\x1b[0m") {
			t.Errorf("exit %d\n%q", code, out)
		}
	})
}

// TestExitCode: with --exit-code a run that ends failed, escalated or
// aborted exits 3; without it, 0 as before; a completed or waiting run
// exits 0 either way.
func TestExitCode(t *testing.T) {
	dir := t.TempDir()
	pipeline := func(name, step string) string {
		p := filepath.Join(dir, name+".yaml")
		write(t, p, "name: "+name+"\nsteps:\n  - "+step+"\n")
		return p
	}
	low := filepath.Join(dir, "low.yaml")
	write(t, low, `a: ['{"confidence": 0.2, "summary": "unsure", "next_step_context": ""}']`+"\n")
	sure := filepath.Join(dir, "sure.yaml")
	write(t, sure, `a: ['{"confidence": 0.9, "summary": "sure", "next_step_context": ""}']`+"\n")
	garbled := filepath.Join(dir, "garbled.yaml")
	write(t, garbled, "a: ['no json', 'no json', 'no json']\n")
	gate, gateReplies := gatePipeline(t)
	cases := []struct {
		name      string
		pipeline  string
		responses string
		status    string
		code      int // with --exit-code
	}{
		{"escalated", pipeline("esc", "{name: a, executor: scripted}"), low, "escalated", exitRunNotOK},
		{"aborted", pipeline("abo", "{name: a, executor: scripted, on_low_confidence: abort}"), low, "aborted", exitRunNotOK},
		{"failed", pipeline("fail", "{name: a, executor: scripted}"), garbled, "failed", exitRunNotOK},
		{"completed", pipeline("ok", "{name: a, executor: scripted}"), sure, "completed", exitOK},
		{"proceeds below the threshold", pipeline("pro", "{name: a, executor: scripted, on_low_confidence: proceed}"), low, "completed", exitOK},
		{"waiting", gate, gateReplies, "waiting", exitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, flags := range [][]string{nil, {"--exit-code"}, {"--exit-code", "--json"}} {
				args := append([]string{"run", c.pipeline, "--dir", t.TempDir(), "--responses", c.responses}, flags...)
				code, out, errOut := run(t, "", args...)
				want := exitOK
				if len(flags) > 0 {
					want = c.code
				}
				if code != want {
					t.Errorf("%q: exit %d, want %d\n%s\n%s", flags, code, want, out, errOut)
				}
				if !strings.Contains(out, c.status) {
					t.Errorf("%q: stdout lacks %q:\n%s", flags, c.status, out)
				}
			}
		})
	}
	t.Run("approve and reject", func(t *testing.T) {
		for _, c := range []struct {
			decision string
			code     int
		}{{"approve", exitOK}, {"reject", exitRunNotOK}} {
			state := t.TempDir()
			runID := waitingRun(t, state)
			code, out, errOut := run(t, "", c.decision, runID, "approve", "--dir", state, "--exit-code")
			if code != c.code {
				t.Errorf("%s --exit-code: exit %d, want %d\n%s\n%s", c.decision, code, c.code, out, errOut)
			}
		}
	})
	t.Run("rerun", func(t *testing.T) {
		state := t.TempDir()
		p := pipeline("esc2", "{name: a, executor: scripted}")
		code, out, _ := run(t, "", "run", p, "--dir", state, "--responses", low, "--json")
		var rep runReport
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("exit %d: %s", code, out)
		}
		code, out, errOut := run(t, "", "rerun", rep.RunID, "--dir", state, "--pipelines", dir, "--responses", low, "--exit-code")
		if code != exitRunNotOK || !strings.Contains(out, "escalated") {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
}

// TestListingsJSON: every listing prints JSON that parses into its
// documented shape with --json.
func TestListingsJSON(t *testing.T) {
	state := t.TempDir()
	runID := waitingRun(t, state)
	pipeline, responses := gatePipeline(t)
	code, _, errOut := run(t, "", "run", pipeline, "--dir", state, "--responses", responses)
	if code != exitOK {
		t.Fatal(errOut)
	}
	if code, _, errOut := run(t, "", "feedback", runID, "triage", "--outcome", "correct", "--dir", state); code != exitOK {
		t.Fatal(errOut)
	}

	t.Run("runs", func(t *testing.T) {
		code, out, errOut := run(t, "", "runs", "--json", "--dir", state)
		var runs []runInfo
		if code != exitOK || json.Unmarshal([]byte(out), &runs) != nil {
			t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
		}
		if len(runs) != 2 || !slices.ContainsFunc(runs, func(r runInfo) bool { return r.RunID == runID }) {
			t.Fatalf("runs %+v", runs)
		}
		for _, r := range runs {
			if r.Pipeline != "gate" || r.Status != store.RunWaiting || r.StartedAt.IsZero() || r.Stage != "testing" {
				t.Errorf("run %+v", r)
			}
		}
		var raw []map[string]any
		_ = json.Unmarshal([]byte(out), &raw)
		for _, k := range []string{"run_id", "pipeline", "status", "started_at", "usage"} {
			if _, ok := raw[0][k]; !ok {
				t.Errorf("runs --json lacks %q: %s", k, out)
			}
		}
		code, out, _ = run(t, "", "runs", "--json", "--dir", state, "-n", "1", "--status", "waiting")
		if json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
			t.Errorf("runs -n 1: exit %d, %s", code, out)
		}
		code, out, _ = run(t, "", "runs", "--json", "--dir", state, "--pipeline", "other")
		if code != exitOK || strings.TrimSpace(out) != "[]" {
			t.Errorf("no runs: exit %d, %q", code, out)
		}
		if code, _, errOut := run(t, "", "runs", "--status", "done", "--dir", state); code != exitUsage || !strings.Contains(errOut, `--status "done": want one of running, waiting`) {
			t.Errorf("bad status: exit %d, %s", code, errOut)
		}
	})
	t.Run("show", func(t *testing.T) {
		code, out, _ := run(t, "", "show", runID, "--json", "--dir", state)
		var shown struct {
			Run          store.Run                  `json:"run"`
			Steps        []store.StepRecord         `json:"steps"`
			History      []store.HistoryEvent       `json:"history"`
			StepFeedback map[string]*store.Feedback `json:"step_feedback"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &shown) != nil {
			t.Fatalf("exit %d: %s", code, out)
		}
		if shown.Run.ID != runID || len(shown.Steps) == 0 || len(shown.History) == 0 || shown.StepFeedback["triage"] == nil {
			t.Errorf("show --json: %+v", shown)
		}
	})
	t.Run("feedback", func(t *testing.T) {
		code, out, _ := run(t, "", "feedback", runID, "triage", "--json", "--dir", state)
		var f struct {
			Feedback *store.Feedback `json:"feedback"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &f) != nil || f.Feedback == nil || f.Feedback.Outcome != store.OutcomeCorrect {
			t.Errorf("exit %d: %s", code, out)
		}
	})
	t.Run("calibration", func(t *testing.T) {
		code, out, _ := run(t, "", "calibration", "gate", "--json", "--dir", state)
		var c struct {
			Pipeline string       `json:"pipeline"`
			Buckets  []bucketBins `json:"buckets"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &c) != nil || c.Pipeline != "gate" || len(c.Buckets) == 0 {
			t.Errorf("exit %d: %s", code, out)
		}
	})
	t.Run("readiness", func(t *testing.T) {
		code, out, _ := run(t, "", "readiness", pipeline, "--json", "--dir", state)
		var r struct {
			Pipeline string `json:"pipeline"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Pipeline != "gate" {
			t.Errorf("exit %d: %s", code, out)
		}
	})
	project := t.TempDir()
	write(t, filepath.Join(project, "stepline.yaml"), "")
	for _, cmd := range []string{"agents", "steps"} {
		t.Run(cmd, func(t *testing.T) {
			code, out, errOut := run(t, "", cmd, "--json", "--config", filepath.Join(project, "stepline.yaml"))
			var list []map[string]any
			if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || list == nil {
				t.Errorf("exit %d: %q %s", code, out, errOut)
			}
		})
	}
}

// TestRunWaitingOnSubPipeline: a run whose sub-pipeline waits for a
// decision says which run to approve (the child's), is listed waiting,
// and the approval of the child ends the parent too.
func TestRunWaitingOnSubPipeline(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	parent := filepath.Join(dir, "parent.yaml")
	write(t, parent, "name: parent\nsteps:\n  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work}}\n"+
		"  - {name: last, executor: scripted, prompt_template: '{{ steps.delegate.summary }}'}\n")
	write(t, filepath.Join(dir, "child.yaml"), "name: child-work\nsteps:\n  - {name: ok, executor: human}\n  - {name: inner, executor: scripted}\n")
	responses := filepath.Join(dir, "r.yaml")
	write(t, responses, "inner: ['{\"confidence\": 0.9, \"summary\": \"inner done\", \"next_step_context\": \"\"}']\n"+
		"last: ['{\"confidence\": 0.9, \"summary\": \"last done\", \"next_step_context\": \"\"}']\n")
	code, out, errOut := run(t, "", "run", parent, "--dir", state, "--responses", responses)
	m := regexp.MustCompile(`run (run-\S+): waiting\n`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	child := m[1] + "/delegate@0"
	if want := `waiting for approval of "ok": stepline approve ` + child + ` ok (or reject)`; !strings.Contains(out, want) {
		t.Errorf("run's output does not say %q:\n%s", want, out)
	}
	if code, out, _ := run(t, "", "runs", "--dir", state); code != exitOK || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(m[1])+` +parent +waiting`).MatchString(out) {
		t.Errorf("runs: exit %d, the parent not listed waiting:\n%s", code, out)
	}
	if code, out, _ := run(t, "", "show", m[1], "--dir", state); code != exitOK || !strings.Contains(out, "stepline approve "+child+" ok (or reject)") {
		t.Errorf("show: exit %d, the child's approval not named:\n%s", code, out)
	}
	// Deciding it in the parent is refused, naming the child's run.
	if code, _, errOut := run(t, "", "approve", m[1], "ok", "--dir", state); code != exitFailed ||
		!strings.Contains(errOut, "no pending approval; it waits in sub-pipeline run "+child+" (stepline approve "+child+" ok)") {
		t.Errorf("approve in the parent: exit %d: %s", code, errOut)
	}
	code, out, errOut = run(t, "", "approve", child, "ok", "--dir", state)
	if code != exitOK || !strings.Contains(out, "run "+child+": completed\nparent run "+m[1]+": completed\n") {
		t.Fatalf("approve: exit %d, the child and its parent not both completed\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := run(t, "", "runs", "--dir", state); code != exitOK || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(m[1])+` +parent +completed`).MatchString(out) {
		t.Errorf("runs after the approval: exit %d, the parent not completed:\n%s", code, out)
	}
}

// TestRunDecidesSubPipelineApproval: a decision in the replies for a
// sub-pipeline's human step is taken by stepline run, which goes on with
// the parent to its end.
func TestRunDecidesSubPipelineApproval(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	parent := filepath.Join(dir, "parent.yaml")
	write(t, parent, "name: parent\nsteps:\n  - {name: delegate, executor: pipeline, executor_config: {pipeline: child-work}}\n"+
		"  - {name: last, executor: scripted}\n")
	write(t, filepath.Join(dir, "child.yaml"), "name: child-work\nsteps:\n  - {name: ok, executor: human}\n  - {name: inner, executor: scripted}\n")
	responses := filepath.Join(dir, "r.yaml")
	write(t, responses, "ok: [{decision: approve, by: scripted}]\n"+
		"inner: ['{\"confidence\": 0.9, \"summary\": \"inner done\", \"next_step_context\": \"\"}']\n"+
		"last: ['{\"confidence\": 0.9, \"summary\": \"last done\", \"next_step_context\": \"\"}']\n")
	code, out, errOut := run(t, "", "run", parent, "--dir", state, "--responses", responses)
	if code != exitOK || !regexp.MustCompile(`run run-\S+: completed\n$`).MatchString(out) || !strings.Contains(out, "last done") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestFollowing: where the run stands after a decision in it, in a child
// whose end continued it, or in a child that waits again.
func TestFollowing(t *testing.T) {
	own := store.Approval{RunID: "p", Step: "mine"}
	first := store.Approval{RunID: "p/c@0", Step: "ok"}
	second := store.Approval{RunID: "p/c@0", Step: "again"}
	other := store.Approval{RunID: "p/d@0", Step: "ok"}
	o := local.Outcome{RunID: "p", Status: store.RunWaiting, Waiting: []store.Approval{first, other, own}}

	done := local.Outcome{RunID: "p", Status: store.RunCompleted}
	if got := following(o, "p", done); got.Status != store.RunCompleted || got.RunID != "p" {
		t.Errorf("decided in the run itself: %+v", got)
	}
	grand := &local.Outcome{RunID: "g", Status: store.RunCompleted}
	parent := &local.Outcome{RunID: "p", Status: store.RunCompleted, Parent: grand}
	if got := following(o, "p/c@0", local.Outcome{RunID: "p/c@0", Status: store.RunCompleted, Parent: parent}); got.Status != store.RunCompleted || got.Parent != grand {
		t.Errorf("the child's end continued the run: %+v", got)
	}
	got := following(o, "p/c@0", local.Outcome{RunID: "p/c@0", Status: store.RunWaiting, Waiting: []store.Approval{second}})
	if got.Status != store.RunWaiting || !reflect.DeepEqual(got.Waiting, []store.Approval{other, own, second}) {
		t.Errorf("the child waits again: %+v", got)
	}
	if !reflect.DeepEqual(o.Waiting, []store.Approval{first, other, own}) {
		t.Errorf("following changed the outcome it was given: %+v", o.Waiting)
	}
	got = following(o, "p/c@0", local.Outcome{RunID: "p/c@0", Status: store.RunCompleted})
	if got.Status != store.RunWaiting || !reflect.DeepEqual(got.Waiting, []store.Approval{other, own}) {
		t.Errorf("the child ended, its parent not continued here: %+v", got)
	}
}

// TestRunWaitingOnNestedSubPipeline: a run whose sub-pipeline's own
// sub-pipeline waits for a decision names that grandchild's approval, and
// approving it prints the grandchild, the child and the run, each ended.
func TestRunWaitingOnNestedSubPipeline(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	top := filepath.Join(dir, "top.yaml")
	write(t, top, "name: top\nsteps:\n  - {name: mid, executor: pipeline, executor_config: {pipeline: middle}}\n  - {name: after, executor: scripted}\n")
	write(t, filepath.Join(dir, "middle.yaml"), "name: middle\nsteps:\n  - {name: leaf, executor: pipeline, executor_config: {pipeline: leafp}}\n")
	write(t, filepath.Join(dir, "leafp.yaml"), "name: leafp\nsteps:\n  - {name: ok, executor: human}\n  - {name: inner, executor: scripted}\n")
	responses := filepath.Join(dir, "r.yaml")
	write(t, responses, "inner: ['{\"confidence\": 0.9, \"summary\": \"inner done\", \"next_step_context\": \"\"}']\n"+
		"after: ['{\"confidence\": 0.9, \"summary\": \"after done\", \"next_step_context\": \"\"}']\n")
	code, out, errOut := run(t, "", "run", top, "--dir", state, "--responses", responses)
	m := regexp.MustCompile(`run (run-\S+): waiting\n`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	leaf := m[1] + "/mid@0/leaf@0"
	if want := "stepline approve " + leaf + " ok (or reject)"; !strings.Contains(out, want) {
		t.Fatalf("run's output does not say %q:\n%s", want, out)
	}
	code, out, errOut = run(t, "", "approve", leaf, "ok", "--dir", state)
	want := "run " + leaf + ": completed\nparent run " + m[1] + "/mid@0: completed\nparent run " + m[1] + ": completed\n"
	if code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("approve: exit %d, want %q\n%s\n%s", code, want, out, errOut)
	}
}

// TestApproveAfterFailedContinuation: approve records the decision, and
// the run cannot go on (its definitions are gone); show names the
// decision the run has not taken; given the definitions back, a reject of
// the same step continues the run with the recorded approval, prints it,
// and exits non-zero saying so.
func TestApproveAfterFailedContinuation(t *testing.T) {
	state := t.TempDir()
	runID := waitingRun(t, state)
	defs := filepath.Join(state, "definitions")
	kept := filepath.Join(t.TempDir(), "kept")
	if err := os.Rename(defs, kept); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "", "approve", runID, "approve", "--by", "me", "--dir", state); code != exitFailed {
		t.Fatalf("approve without definitions: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if err := os.RemoveAll(defs); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(kept, defs); err != nil {
		t.Fatal(err)
	}
	// show names the decision the run has not taken.
	want := `waiting for "approve", approved by me but not taken by the run: stepline approve ` + runID + ` approve sends it again`
	if code, out, errOut := run(t, "", "show", runID, "--dir", state); code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("show: exit %d\nstdout %s\nstderr %s\nwant %s", code, out, errOut, want)
	}
	code, out, errOut := run(t, "", "reject", runID, "approve", "--by", "you", "--dir", state)
	if code != exitFailed || !strings.Contains(errOut, "decided before: approved by me, and the run went on with that decision") ||
		!strings.Contains(out, "Approved by me") || !strings.Contains(out, "run "+runID+": completed") {
		t.Fatalf("reject after the approval: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// TestShowStepSummary: show prints a step's summary on its line, as run
// prints it when the step ends (a failed step's error instead).
func TestShowStepSummary(t *testing.T) {
	state := t.TempDir()
	runID := waitingRun(t, state)
	code, out, errOut := run(t, "", "show", runID, "--dir", state)
	line := regexp.MustCompile(`(?m)^  triage +#1 completed +0\.90 +\d+ms  (.*)$`).FindStringSubmatch(out)
	if code != exitOK || line == nil || line[1] != "fine" {
		t.Fatalf("show: exit %d, triage's line %q\nstdout %s\nstderr %s", code, line, out, errOut)
	}
}
