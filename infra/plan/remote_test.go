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

// remoteTree writes a project whose stepline.yaml is cfg and whose
// pipelines run remote agents.
func remoteTree(t *testing.T, cfg string, pipelines map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{"stepline.yaml": cfg}
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
	return filepath.Join(root, "pipelines")
}

const remotePipeline = `name: remote
steps:
  - {name: triage, executor: openclaw, executor_config: {agent: sre-triage}}
  - {name: investigate, executor: gateway, executor_config: {agent: sre-investigator}}
`

// TestLoadRemoteAgents: deploying remote agent steps needs the gateway's
// token and the OpenClaw identity as mapped secrets; synth names one left
// unmapped.
func TestLoadRemoteAgents(t *testing.T) {
	dir := remoteTree(t, "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${AGENT_GATEWAY_TOKEN}\"}\n  openclaw: {url: \"wss://${OPENCLAW_HOST}/\"}\n",
		map[string]string{"remote.yaml": remotePipeline})
	ps, err := plan.Load(dir, settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AGENT_GATEWAY_TOKEN", "OPENCLAW_DEVICE", "OPENCLAW_DEVICE_AUTH", "OPENCLAW_HOST"}
	if !reflect.DeepEqual(ps[0].Secrets, want) {
		t.Errorf("Secrets = %v, want %v", ps[0].Secrets, want)
	}
	mapping := map[string]string{"AGENT_GATEWAY_TOKEN": "secretsmanager:gw", "OPENCLAW_HOST": "ssm:/oc/host", "OPENCLAW_DEVICE": "secretsmanager:stepline/openclaw-device"}
	if _, err := plan.Secrets(ps, mapping); err == nil || !strings.Contains(err.Error(), `secret "OPENCLAW_DEVICE_AUTH" (used by remote) has no mapping`) {
		t.Errorf("unmapped identity: %v", err)
	}
	mapping["OPENCLAW_DEVICE_AUTH"] = "secretsmanager:stepline/openclaw-device-auth"
	if refs, err := plan.Secrets(ps, mapping); err != nil || len(refs) != 4 {
		t.Errorf("refs %v, %v", refs, err)
	}
}

// TestUnreachableRemoteAgents: synth refuses a remote agent the step
// function cannot reach: an unconfigured runtime, a loopback address.
func TestUnreachableRemoteAgents(t *testing.T) {
	tests := []struct {
		name, cfg, want string
	}{
		{"openclaw not configured", "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${T}\"}\n",
			`step "triage": agent "sre-triage" runs on the openclaw runtime, which stepline.yaml does not configure: set executors.openclaw.url to deploy this pipeline`},
		{"openclaw on loopback", "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${T}\"}\n  openclaw: {url: \"ws://127.0.0.1:18789\"}\n",
			`step "triage": agent "sre-triage" runs on the openclaw runtime at ws://127.0.0.1:18789, a loopback address the step function cannot reach`},
		{"gateway on localhost", "executors:\n  gateway: {url: \"ws://localhost:18780/rpc\", token: \"${T}\"}\n  openclaw: {url: \"wss://oc.example\"}\n",
			`step "investigate": agent "sre-investigator" runs on the gateway runtime at ws://localhost:18780/rpc, a loopback address`},
		{"reachable", "executors:\n  gateway: {url: \"wss://agents.example/rpc\", token: \"${T}\"}\n  openclaw: {url: \"ws://10.0.0.8:18789\"}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Load(remoteTree(t, tt.cfg, map[string]string{"remote.yaml": remotePipeline}), settings.Defaults{})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err %v\nwant %q", err, tt.want)
			}
		})
	}
}
