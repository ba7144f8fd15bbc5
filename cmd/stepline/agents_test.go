package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/compiler"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestSchemaAgentCommand(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"pipeline by default", []string{"schema"}, 0, string(compiler.Schema())},
		{"pipeline", []string{"schema", "pipeline"}, 0, string(compiler.Schema())},
		{"agent", []string{"schema", "agent"}, 0, string(compiler.AgentSchema())},
		{"unknown", []string{"schema", "step"}, 2, ""},
		{"two", []string{"schema", "agent", "pipeline"}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code || out != c.out {
				t.Errorf("exit %d (stderr %q), stdout %d bytes; want %d, %d bytes", code, errOut, len(out), c.code, len(c.out))
			}
			if c.code == 2 && !strings.Contains(errOut, "usage: stepline schema [pipeline|agent]") {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}

const projectFile = `mcp_servers:
  grafana: {url: "https://grafana/mcp"}
tool_policy: {default: allow}
`

func TestAgentsCommand(t *testing.T) {
	good := writeTree(t, map[string]string{
		"stepline.yaml":            projectFile,
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\ntools:\n  - grafana: [query_*, search]\n",
		"agents/triage/soul.md":    "Triage.",
		"agents/judge/agent.yaml":  "name: judge\nmodel: openai/gpt-4o\n",
		"agents/judge/soul.md":     "",
	})
	bad := writeTree(t, map[string]string{
		"stepline.yaml":           projectFile,
		"agents/judge/agent.yaml": "name: judge\nmodel: opneai/gpt-4o\n",
		"agents/judge/soul.md":    "",
	})
	empty := writeTree(t, map[string]string{"stepline.yaml": ""})
	cfg := func(root string) string { return filepath.Join(root, "stepline.yaml") }
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"table", []string{"agents", "--config", cfg(good)}, 0, []string{
			"NAME    VERSION       MODEL                        TOOLS",
			"judge   ", "openai/gpt-4o                -",
			"triage  ", "anthropic/claude-sonnet-4-6  grafana[query_*,search]"}, ""},
		{"problems listed, exit 1", []string{"agents", "--config", cfg(bad)}, 1, []string{"judge"},
			filepath.Join(bad, "agents/judge/agent.yaml") + `:2:8: model: model "opneai/gpt-4o": unknown provider "opneai" (known: anthropic, bedrock, ollama, openai, openrouter) (did you mean "openai"?)`},
		{"no agents", []string{"agents", "--config", cfg(empty)}, 0, []string{"no agents in " + filepath.Join(empty, "agents")}, ""},
		{"missing project file", []string{"agents", "--config", filepath.Join(empty, "nope.yaml")}, 1, nil, "stepline: read project: "},
		{"arguments", []string{"agents", "x"}, 2, nil, "usage: stepline agents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			for _, s := range c.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout %q lacks %q", out, s)
				}
			}
			if !strings.Contains(errOut, c.stderr) || (c.stderr == "" && errOut != "") {
				t.Errorf("stderr %q, want %q", errOut, c.stderr)
			}
		})
	}

	code, out, errOut := run(t, "", "agents", "--json", "--config", cfg(good))
	var infos []agentInfo
	if code != 0 || json.Unmarshal([]byte(out), &infos) != nil || len(infos) != 2 {
		t.Fatalf("--json: exit %d, %q, %q", code, out, errOut)
	}
	if a := infos[1]; a.Name != "triage" || len(a.Version) != 12 || a.Model != "anthropic/claude-sonnet-4-6" ||
		len(a.Tools) != 1 || a.Tools[0].Server != "grafana" || strings.Join(a.Tools[0].Tools, ",") != "query_*,search" {
		t.Errorf("--json triage: %+v", a)
	}

	// Without --config, the project above the working directory.
	t.Chdir(filepath.Join(good, "agents"))
	if code, out, _ := run(t, "", "agents"); code != 0 || !strings.Contains(out, "triage") {
		t.Errorf("found from the working directory: exit %d, %q", code, out)
	}
	t.Chdir(t.TempDir())
	if code, _, errOut := run(t, "", "agents"); code != 1 || !strings.Contains(errOut, "no stepline.yaml here or above") {
		t.Errorf("outside a project: exit %d, %q", code, errOut)
	}
}

// TestConfigFlag: validate, compile and graph compile in the project
// --config gives; validate prints a project's problem once, and with
// --config alone validates the project's pipelines.
func TestConfigFlag(t *testing.T) {
	const pipe = "name: %s\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage}\n"
	proj := writeTree(t, map[string]string{
		"stepline.yaml":            projectFile,
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\ntools: [grafana]\n",
		"agents/triage/soul.md":    "",
		"pipelines/one.yaml":       strings.Replace(pipe, "%s", "one", 1),
		"pipelines/two.yaml":       strings.Replace(pipe, "%s", "two", 1),
	})
	broken := writeTree(t, map[string]string{
		"stepline.yaml":            projectFile + "steps: ''\n",
		"agents/triage/agent.yaml": "name: triage\nmodel: anthropic/claude-sonnet-4-6\n",
		"agents/triage/soul.md":    "",
	})
	outside := writeTree(t, map[string]string{"one.yaml": strings.Replace(pipe, "%s", "one", 1), "two.yaml": strings.Replace(pipe, "%s", "two", 1)})
	one, two := filepath.Join(outside, "one.yaml"), filepath.Join(outside, "two.yaml")

	if code, out, errOut := run(t, "", "validate", "--config", filepath.Join(proj, "stepline.yaml"), one, two); code != 0 || strings.Count(out, "is valid") != 2 || errOut != "" {
		t.Errorf("validate --config: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "validate", one); code != 1 || !strings.Contains(errOut, `unknown agent "triage": no stepline.yaml above`) {
		t.Errorf("validate without a project: exit %d\n%s", code, errOut)
	}
	code, _, errOut := run(t, "", "validate", "--config", filepath.Join(broken, "stepline.yaml"), one, two)
	projectErr := filepath.Join(broken, "stepline.yaml") + ":4:8: steps: must not be empty\n"
	if code != 1 || strings.Count(errOut, projectErr) != 1 {
		t.Errorf("a project's problem is printed once: exit %d\n%s", code, errOut)
	}
	code, out, errOut := run(t, "", "validate", "--config", filepath.Join(proj, "stepline.yaml"))
	if code != 0 || !strings.Contains(out, `pipeline "one" is valid`) || !strings.Contains(out, `pipeline "two" is valid`) {
		t.Errorf("validate --config alone: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "compile", "--config", filepath.Join(proj, "stepline.yaml"), one); code != 0 || !strings.Contains(out, `"agent"`) {
		t.Errorf("compile --config: exit %d %s", code, errOut)
	}
	if code, out, errOut := run(t, "", "graph", "--config", filepath.Join(proj, "stepline.yaml"), one); code != 0 || !strings.Contains(out, "flowchart") {
		t.Errorf("graph --config: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "compile", "--config", filepath.Join(outside, "none.yaml"), one); code != 1 || !strings.Contains(errOut, "read project: ") {
		t.Errorf("compile with a missing --config: exit %d %s", code, errOut)
	}
}

// TestSeedExamplesValidate: the design document's gateway agent example
// (a copy, unchanged, in compiler/testdata/seed) validates in the
// repository's project, where agents/sre-triage exists.
func TestSeedExamplesValidate(t *testing.T) {
	seed := "../../compiler/testdata/seed/failure-webhook-example.yaml"
	code, out, errOut := run(t, "", "validate", "--config", "../../stepline.yaml", seed)
	if code != 0 || !strings.Contains(out, `pipeline "seed-failure-webhook-example" is valid`) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	// Copied into a project of its own, beside the repository's
	// stepline.yaml and agents, it validates without --config too.
	root := t.TempDir()
	for _, f := range []string{"stepline.yaml", "agents/sre-triage/agent.yaml", "agents/sre-triage/soul.md"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(seed)
	copyPath := filepath.Join(root, "pipelines", "failure-webhook-example.yaml")
	_ = os.MkdirAll(filepath.Dir(copyPath), 0o755)
	if err := os.WriteFile(copyPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "", "validate", copyPath); code != 0 || !strings.Contains(out, "is valid") {
		t.Errorf("in its own project: exit %d\n%s%s", code, out, errOut)
	}
}

// TestRunAndServeConfig: run and serve compile in the project --config
// gives, also for pipelines outside its directory; serve takes the
// project's pipelines directory unless --pipelines says otherwise.
func TestRunAndServeConfig(t *testing.T) {
	root := writeTree(t, map[string]string{
		"proj/stepline.yaml":            "pipelines: ../outside\n",
		"proj/agents/helper/agent.yaml": "name: helper\nmodel: anthropic/claude-haiku-4-5\n",
		"proj/agents/helper/soul.md":    "Help.",
		"outside/p.yaml":                "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: helper}\n    prompt_template: hi\n",
		"r.yaml":                        "a:\n  - '{\"confidence\": 0.9, \"summary\": \"helped\", \"next_step_context\": \"\"}'\n",
	})
	cfg, pipe, replies := filepath.Join(root, "proj", "stepline.yaml"), filepath.Join(root, "outside", "p.yaml"), filepath.Join(root, "r.yaml")

	code, out, errOut := run(t, "", "run", "--dir", filepath.Join(root, "state"), "--config", cfg, "--responses", replies, pipe)
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, "helped") {
		t.Errorf("run --config: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = run(t, "", "run", "--dir", filepath.Join(root, "state"), "--responses", replies, pipe)
	if code != 1 || !strings.Contains(errOut, `unknown agent "helper": no stepline.yaml above`) {
		t.Errorf("run without --config: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, "", "run", "--dir", filepath.Join(root, "state"), "--config", filepath.Join(root, "nope.yaml"), pipe); code != 1 || !strings.Contains(errOut, "read project: ") {
		t.Errorf("run with a missing --config: exit %d\n%s", code, errOut)
	}

	serve := func(args ...string) (string, string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- dispatch(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(root, "serve-state")}, args...),
				env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
		}()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			select {
			case <-done:
				return out.String(), errOut.String()
			default:
			}
			if strings.Contains(out.String(), "serving on") {
				cancel()
				<-done
				return out.String(), errOut.String()
			}
		}
		cancel()
		<-done
		return out.String(), errOut.String()
	}
	if out, errOut := serve("--config", cfg); !strings.Contains(out, "serving on") {
		t.Errorf("serve --config did not start:\n%s%s", out, errOut)
	}
	if out, errOut := serve("--pipelines", filepath.Join(root, "outside")); strings.Contains(out, "serving on") || !strings.Contains(errOut, `unknown agent "helper"`) {
		t.Errorf("serve without the project:\n%s%s", out, errOut)
	}
}
