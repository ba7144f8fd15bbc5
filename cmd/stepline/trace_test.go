package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
)

// agentProject writes a project with one agent over one MCP server (an
// address nothing listens on: a scripted run must never reach it) and a
// pipeline whose step runs it; it returns the pipeline's path.
func agentProject(t *testing.T) (dir, pipelinePath string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"stepline.yaml": "mcp_servers:\n  grafana:\n    url: http://127.0.0.1:9/mcp\n" +
			"tool_policy:\n  default: allow\n  rules:\n    - deny: {server: grafana, tool: \"delete*\"}\n      reason: read only\n",
		"agents/inv/agent.yaml": "name: inv\nmodel: anthropic/claude-sonnet-4-6\ntools: [grafana]\n",
		"agents/inv/soul.md":    "You investigate.\n",
		"pipelines/p.yaml": "name: p\nsteps:\n  - name: investigate\n    executor: gateway\n" +
			"    executor_config: {agent: inv}\n    prompt_template: Investigate\n",
		"r.yaml": `investigate:
  - {tool_calls: [{name: grafana.query, arguments: {expr: up}}, {name: grafana.delete_dashboard, arguments: {id: 1}}], input_tokens: 10}
  - {reply: '{"confidence": 0.9, "summary": "found", "next_step_context": ""}', input_tokens: 20}
tool_results:
  grafana.query: ['{"v": 1}']
  grafana.delete_dashboard: [deleted]
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "pipelines", "p.yaml")
}

// TestAgentTraceShown runs an agent step offline and reads its trace back
// from run --json, show and show --json.
func TestAgentTraceShown(t *testing.T) {
	dir, p := agentProject(t)
	state := filepath.Join(dir, "state")
	code, out, errOut := run(t, "", "run", "--json", "--dir", state, "--responses", filepath.Join(dir, "r.yaml"), p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := rep.Steps[0]
	if rep.Status != "completed" || s.Agent != "inv" || s.AgentVersion == "" || s.Iterations != 2 {
		t.Fatalf("report %+v", rep)
	}
	var trace []struct{ Type, Name, Content, Reason string }
	if err := json.Unmarshal(s.Trace, &trace); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range trace {
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "tool_call,tool_result,tool_call,tool_denied,text" || trace[3].Reason != "read only" {
		t.Errorf("trace %+v", trace)
	}

	code, out, errOut = run(t, "", "show", "--dir", state, rep.RunID)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"agent inv (version " + s.AgentVersion + "), 2 iterations, 30 in / 0 out tokens",
		`[1] tool_call   grafana.query {"expr":"up"}`,
		`[1] tool_result grafana.query → {"v": 1}`,
		"[1] tool_denied grafana.delete_dashboard — read only",
		"[2] text",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "", "show", "--json", "--dir", state, rep.RunID)
	if code != 0 || !regexp.MustCompile(`"trace": \[\s*\{\s*"type": "tool_call"`).MatchString(out) {
		t.Errorf("show --json: exit %d\n%s", code, out)
	}
}

// TestRegistriesClose: closing a command's registries ends their MCP
// sessions; an agent step after that cannot open one.
func TestRegistriesClose(t *testing.T) {
	regs := &registries{}
	reg := executor.NewRegistry(executor.Deps{})
	regs.add(reg)
	if err := regs.Close(); err != nil {
		t.Fatal(err)
	}
	_, tools, err := reg.Agent(executor.Call{Executor: executor.Gateway, Step: "s"}, &agent.Resolved{Profile: agent.Profile{Name: "a"},
		Models: []agent.Endpoint{{Provider: "p", API: agent.APIGateway, Model: "m", BaseURL: "http://127.0.0.1:9"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Tools(context.Background(), agent.Server{Name: "grafana", URL: "http://127.0.0.1:9/mcp"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v", err)
	}
}
