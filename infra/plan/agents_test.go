package plan_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/project"
)

// agentTree writes a project whose pipelines run agents: one over HTTP
// MCP servers with header secrets, one over a stdio server.
func agentTree(t *testing.T, pipelines map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"stepline.yaml": `mcp_servers:
  grafana:
    url: https://grafana/mcp
    headers: {Authorization: "Bearer ${GRAFANA_TOKEN}", X-Org: "${GRAFANA_ORG}"}
  files:
    command: npx
    args: [server-filesystem]
    env: {ROOT: "${FILES_ROOT}"}
providers:
  vllm: {base_url: "https://vllm.internal/v1", api_key: "${VLLM_KEY}"}
`,
		"agents/investigator/agent.yaml": "name: investigator\nmodel: bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0\nmodel_fallbacks: [vllm/qwen, anthropic/claude-haiku-4-5]\ntools: [grafana]\n",
		"agents/investigator/soul.md":    "Investigate.",
		"agents/local/agent.yaml":        "name: local\nmodel: anthropic/claude-haiku-4-5\ntools: [grafana, files]\n",
		"agents/local/soul.md":           "",
	}
	for name, src := range pipelines {
		files[filepath.Join("pipelines", name)] = src
	}
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLoadAgents: what deploying an agent pipeline needs: the secrets of
// its models and MCP servers, its Bedrock models, its agents; and the
// refusal of an agent that needs a stdio server, naming it and the step.
func TestLoadAgents(t *testing.T) {
	root := agentTree(t, map[string]string{
		"investigate.yaml": "name: investigate\nsteps:\n  - name: dig\n    executor: gateway\n    executor_config: {agent: investigator}\n",
	})
	ps, err := plan.Load(filepath.Join(root, "pipelines"), settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if want := []string{"ANTHROPIC_API_KEY", "GRAFANA_ORG", "GRAFANA_TOKEN", "VLLM_KEY"}; !reflect.DeepEqual(p.Secrets, want) {
		t.Errorf("Secrets = %v, want %v", p.Secrets, want)
	}
	if want := []string{"anthropic.claude-3-5-sonnet-20240620-v1:0"}; !reflect.DeepEqual(p.Models, want) {
		t.Errorf("Models = %v, want %v", p.Models, want)
	}
	if want := []string{"investigator"}; !reflect.DeepEqual(p.Agents, want) {
		t.Errorf("Agents = %v, want %v", p.Agents, want)
	}
	// The secrets of the MCP headers are mapped like any other: synth
	// fails naming one left unmapped.
	_, err = plan.Secrets(ps, map[string]string{"ANTHROPIC_API_KEY": "secretsmanager:a", "GRAFANA_TOKEN": "ssm:/g", "VLLM_KEY": "ssm:/v"})
	if err == nil || !strings.Contains(err.Error(), `secret "GRAFANA_ORG" (used by investigate) has no mapping`) {
		t.Errorf("unmapped header secret: %v", err)
	}
	refs, err := plan.Secrets(ps, map[string]string{"ANTHROPIC_API_KEY": "secretsmanager:a", "GRAFANA_TOKEN": "ssm:/g", "GRAFANA_ORG": "ssm:/o", "VLLM_KEY": "ssm:/v"})
	if err != nil || len(refs) != 4 {
		t.Errorf("mapped: %v %v", refs, err)
	}
}

func TestLoadRefusesStdioAgents(t *testing.T) {
	root := agentTree(t, map[string]string{
		"local.yaml": `name: local-run
steps:
  - name: triage
    executor: anthropic
    executor_config: {agent: local}
  - parallel:
      name: g
      steps:
        - name: b
          executor: gateway
          executor_config:
            agent: local
`,
		"fine.yaml": "name: fine\nsteps:\n  - {name: a, executor: gateway, executor_config: {agent: investigator}}\n",
	})
	dir := filepath.Join(root, "pipelines")
	_, err := plan.Load(dir, settings.Defaults{})
	want := []string{
		filepath.Join(dir, "local.yaml") + `:5:22: step "triage": agent "local" needs MCP server "files", a stdio server (command "npx") that only local runs can start: give the server a url (streamable HTTP) in stepline.yaml to deploy this pipeline`,
		filepath.Join(dir, "local.yaml") + `:12:13: branch "b" of parallel "g": agent "local" needs MCP server "files", a stdio server (command "npx") that only local runs can start: give the server a url (streamable HTTP) in stepline.yaml to deploy this pipeline`,
	}
	if err == nil {
		t.Fatal("Load accepted an agent that needs a stdio server")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "fine.yaml") {
		t.Errorf("the pipeline without a stdio server was refused: %v", err)
	}
}

// TestLoadInProject: the project given wins over the one above the
// directory, and a directory without one has no agents.
func TestLoadInProject(t *testing.T) {
	root := agentTree(t, map[string]string{"investigate.yaml": "name: investigate\nsteps:\n  - {name: dig, executor: gateway, executor_config: {agent: investigator}}\n"})
	elsewhere := writePipelines(t, map[string]string{"investigate.yaml": "name: investigate\nsteps:\n  - {name: dig, executor: gateway, executor_config: {agent: investigator}}\n"})
	if _, err := plan.Load(elsewhere, settings.Defaults{}); err == nil || !strings.Contains(err.Error(), `unknown agent "investigator": no stepline.yaml above`) {
		t.Errorf("without a project: %v", err)
	}
	p, err := project.Load(filepath.Join(root, "stepline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := plan.LoadIn(elsewhere, p, settings.Defaults{}); err != nil || len(ps) != 1 || ps[0].Agents[0] != "investigator" {
		t.Errorf("in the project given: %v", err)
	}
}
