package project

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/agent"
)

// TestRuntime pins the one rule that places an agent step: a profile of
// the project wins; without one a gateway step runs on the remote
// gateway when one is configured; openclaw steps always run on OpenClaw.
func TestRuntime(t *testing.T) {
	withGateway := Parse("stepline.yaml", []byte("executors:\n  gateway: {url: \"ws://gw:18780/rpc\", token: \"${T}\"}\n"))
	without := Parse("stepline.yaml", nil)
	for _, p := range []*Project{withGateway, without} {
		p.Profiles["triage"] = &agent.Loaded{Profile: &agent.Profile{Name: "triage"}}
	}
	tests := []struct {
		name            string
		p               *Project
		executor, name2 string
		want            string
	}{
		{"local profile on gateway", withGateway, "gateway", "triage", RunsInProcess},
		{"local profile on anthropic", withGateway, "anthropic", "triage", RunsInProcess},
		{"remote gateway serves the rest", withGateway, "gateway", "sre-investigator", RunsGateway},
		{"only for gateway steps", withGateway, "bedrock", "sre-investigator", ""},
		{"no remote gateway", without, "gateway", "sre-investigator", ""},
		{"openclaw, configured or not", without, "openclaw", "triage", RunsOpenClaw},
		{"no agent executor", withGateway, "webhook", "triage", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Runtime(tt.executor, tt.name2); got != tt.want {
				t.Errorf("Runtime(%q, %q) = %q, want %q", tt.executor, tt.name2, got, tt.want)
			}
		})
	}
}

func TestOpenClawIdentity(t *testing.T) {
	for _, tt := range []struct{ written, want string }{
		{"", DefaultOpenClawIdentity},
		{"~/oc/identity", "~/oc/identity"},
		{"/etc/openclaw", "/etc/openclaw"},
		{"secrets/identity", filepath.Join("proj", "secrets/identity")},
	} {
		p := Parse("proj/stepline.yaml", []byte("executors:\n  openclaw: {url: \"ws://oc:18789\", identity: \""+tt.written+"\"}\n"))
		if tt.written == "" {
			p = Parse("proj/stepline.yaml", []byte("executors:\n  openclaw: {url: \"ws://oc:18789\"}\n"))
		}
		if len(p.Diagnostics) != 0 {
			t.Fatalf("%q: %s", tt.written, p.Diagnostics)
		}
		if got := p.OpenClawIdentity(); got != tt.want {
			t.Errorf("identity %q = %q, want %q", tt.written, got, tt.want)
		}
	}
	p := Parse("stepline.yaml", []byte("executors:\n  openclaw: {url: \"ws://oc:18789\", identity: \"${OC}\"}\n"))
	if s := p.Diagnostics.String(); !strings.Contains(s, "stepline.yaml:2:46: executors.openclaw.identity: a directory holding device.json and device-auth.json") || !strings.Contains(s, "OPENCLAW_DEVICE") {
		t.Errorf("diagnostics %s", s)
	}
}

func TestSessionKey(t *testing.T) {
	for _, tt := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, "agent:sre:pipeline:{{pipeline_run_id}}:{{current_step}}"},
		{map[string]any{"session_key": "  "}, "agent:sre:pipeline:{{pipeline_run_id}}:{{current_step}}"},
		{map[string]any{"session_key": "agent:{{agent}}:x:{{ agent }}:{{- agent -}}"}, "agent:sre:x:sre:sre"},
		{map[string]any{"session_key": "agent:{{ agent | upcase }}"}, "agent:{{ agent | upcase }}"},
	} {
		if got := SessionKey("sre", tt.cfg); got != tt.want {
			t.Errorf("SessionKey(%v) = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}
