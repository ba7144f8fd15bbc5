package plan_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
)

// TestLoadTrust: what deploying a step with a grounding judge and
// deterministic checks needs: the judge's agent, models and secrets, the
// checks' secrets; and the refusal of a shell check, which runs only
// locally.
func TestLoadTrust(t *testing.T) {
	root := agentTree(t, map[string]string{
		"trust.yaml": `name: trust
steps:
  - name: dig
    executor: gateway
    executor_config: {agent: local-free}
    grounding: {agent: judge, executor: bedrock, enforce: true}
    deterministic_checks:
      - {name: health, type: webhook, url: "https://status/${STATUS_HOST}", headers: {Authorization: "Bearer ${STATUS_TOKEN}"}, payload: {key: "${STATUS_KEY}"}}
      - {name: ok, type: human}
`,
	})
	writeFiles(t, root, map[string]string{
		"agents/local-free/agent.yaml": "name: local-free\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/local-free/soul.md":    "",
		"agents/judge/agent.yaml":      "name: judge\nmodel: bedrock/anthropic.claude-3-haiku-20240307-v1:0\n",
		"agents/judge/soul.md":         "Judge.",
	})
	ps, err := plan.Load(filepath.Join(root, "pipelines"), settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if want := []string{"ANTHROPIC_API_KEY", "STATUS_HOST", "STATUS_KEY", "STATUS_TOKEN"}; !reflect.DeepEqual(p.Secrets, want) {
		t.Errorf("Secrets = %v, want %v", p.Secrets, want)
	}
	if want := []string{"anthropic.claude-3-haiku-20240307-v1:0"}; !reflect.DeepEqual(p.Models, want) {
		t.Errorf("Models = %v, want %v: the judge's Bedrock model is granted", p.Models, want)
	}
	if want := []string{"judge", "local-free"}; !reflect.DeepEqual(p.Agents, want) {
		t.Errorf("Agents = %v, want %v", p.Agents, want)
	}
	if !p.Approvals() {
		t.Error("a human check needs the approval function")
	}

	shell := agentTree(t, map[string]string{
		"shell.yaml": "name: shell\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: investigator}\n    deterministic_checks:\n      - {name: disk, type: shell, run: df -h}\n",
	})
	dir := filepath.Join(shell, "pipelines")
	_, err = plan.Load(dir, settings.Defaults{})
	want := filepath.Join(dir, "shell.yaml") + `:7:28: step "a": deterministic check "disk" is a shell check, which runs only in local runs (stepline run, serve)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\ndoes not say %q", err, want)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
