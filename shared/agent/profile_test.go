package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const profilePath, soulPath = "agents/x/agent.yaml", "agents/x/soul.md"

func parseX(t *testing.T, src string) (*Loaded, Diagnostics) {
	t.Helper()
	return ParseProfile("x", profilePath, []byte(src), soulPath, []byte("You are x."))
}

// TestParseProfileErrors: every problem a profile's files alone decide,
// with its exact message and position.
func TestParseProfileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"name mismatch", "name: y\nmodel: a\n", []string{
			`agents/x/agent.yaml:1:7: name "y" does not match its directory "x": an agent is named after its directory`}},
		{"name missing", "model: a\n", []string{`agents/x/agent.yaml:1:1: name: required`}},
		{"model missing", "name: x\n", []string{`agents/x/agent.yaml:1:1: model: required`}},
		{"model null", "name: x\nmodel:\n", []string{`agents/x/agent.yaml:2:7: model: want a string, got null`}},
		{"model empty", "name: x\nmodel: ' '\n", []string{`agents/x/agent.yaml:2:8: model: must not be empty`}},
		{"model number", "name: x\nmodel: 5\n", []string{`agents/x/agent.yaml:2:8: model: want a string, got a number`}},
		{"model template", "name: x\nmodel: '{{ m }}'\n", []string{`agents/x/agent.yaml:2:8: model: "{{ m }}" is a template: a model is written out`}},
		{"model blank inside", "name: x\nmodel: 'a b'\n", []string{`agents/x/agent.yaml:2:8: model: "a b" holds a blank or a control character`}},
		{"model provider only", "name: x\nmodel: openai/\n", []string{`agents/x/agent.yaml:2:8: model: "openai/" names no model after its provider`}},
		{"max_tokens below", "name: x\nmodel: a\nmax_tokens: 0\n", []string{`agents/x/agent.yaml:3:13: max_tokens: 0 is out of range: 1..1000000`}},
		{"max_tokens above", "name: x\nmodel: a\nmax_tokens: 1000001\n", []string{`agents/x/agent.yaml:3:13: max_tokens: 1000001 is out of range: 1..1000000`}},
		{"max_tokens huge", "name: x\nmodel: a\nmax_tokens: 99999999999999999999\n", []string{`agents/x/agent.yaml:3:13: max_tokens: 99999999999999999999 is out of range: 1..1000000`}},
		{"max_tokens fraction", "name: x\nmodel: a\nmax_tokens: 1.5\n", []string{`agents/x/agent.yaml:3:13: max_tokens: want a whole number, got 1.5`}},
		{"max_tokens text", "name: x\nmodel: a\nmax_tokens: lots\n", []string{`agents/x/agent.yaml:3:13: max_tokens: want a whole number, got a string`}},
		{"temperature below", "name: x\nmodel: a\ntemperature: -0.1\n", []string{`agents/x/agent.yaml:3:14: temperature: -0.1 is out of range: 0..2`}},
		{"temperature above", "name: x\nmodel: a\ntemperature: 2.01\n", []string{`agents/x/agent.yaml:3:14: temperature: 2.01 is out of range: 0..2`}},
		{"temperature nan", "name: x\nmodel: a\ntemperature: .nan\n", []string{`agents/x/agent.yaml:3:14: temperature: must be a finite number, not .nan`}},
		{"thinking level typo", "name: x\nmodel: a\nthinking_level: hgh\n", []string{
			`agents/x/agent.yaml:3:17: thinking_level: "hgh" is not a thinking level (did you mean "high"?): want one of off, minimal, low, medium, high, xhigh`}},
		{"thinking level case", "name: x\nmodel: a\nthinking_level: High\n", []string{
			`agents/x/agent.yaml:3:17: thinking_level: "High" is not a thinking level (did you mean "high"?): want one of off, minimal, low, medium, high, xhigh`}},
		{"max_iterations below", "name: x\nmodel: a\nmax_iterations: 0\n", []string{`agents/x/agent.yaml:3:17: max_iterations: 0 is out of range: 1..1000`}},
		{"max_iterations above", "name: x\nmodel: a\nmax_iterations: 1001\n", []string{`agents/x/agent.yaml:3:17: max_iterations: 1001 is out of range: 1..1000`}},
		{"tool timeout below", "name: x\nmodel: a\ntool_timeout_seconds: 0\n", []string{`agents/x/agent.yaml:3:23: tool_timeout_seconds: 0 is out of range: 1..900`}},
		{"tool timeout above", "name: x\nmodel: a\ntool_timeout_seconds: 901\n", []string{`agents/x/agent.yaml:3:23: tool_timeout_seconds: 901 is out of range: 1..900`}},
		{"trace cap below", "name: x\nmodel: a\ntrace_tool_result_max_chars: 0\n", []string{`agents/x/agent.yaml:3:30: trace_tool_result_max_chars: 0 is out of range: 1..1000000`}},
		{"trace cap above", "name: x\nmodel: a\ntrace_tool_result_max_chars: 1000001\n", []string{`agents/x/agent.yaml:3:30: trace_tool_result_max_chars: 1000001 is out of range: 1..1000000`}},
		{"unknown field", "name: x\nmodel: a\nmax_token: 5\n", []string{
			`agents/x/agent.yaml:3:1: unknown field "max_token" (did you mean "max_tokens"?) (fields: name, description, model, model_fallbacks, max_tokens, temperature, thinking_level, tools, max_iterations, tool_timeout_seconds, trace_tool_result_max_chars)`}},
		{"reference limit name", "name: x\nmodel: a\nmax_agent_iterations: 5\n", []string{
			`agents/x/agent.yaml:3:1: unknown field "max_agent_iterations": the limit is max_iterations in agent.yaml`}},
		{"version written", "name: x\nmodel: a\nversion: abc\n", []string{
			`agents/x/agent.yaml:3:1: unknown field "version": an agent's version is the hash of its files, computed when it loads`}},
		{"duplicate key", "name: x\nmodel: a\nmodel: b\n", []string{`agents/x/agent.yaml:3:1: a profile: key "model" is written twice (first at 2:1)`}},
		{"not a mapping", "- a\n", []string{`agents/x/agent.yaml:1:1: a profile: want a mapping, got a list`}},
		{"empty file", "", []string{`agents/x/agent.yaml:1:1: the file is empty: a profile needs at least name and model`}},
		{"bad yaml", "name: x\n\tmodel: a\n", []string{`agents/x/agent.yaml:2:1: invalid YAML: found a tab character that violates indentation`}},
		{"not utf-8", "name: \xff\n", []string{`agents/x/agent.yaml:1:1: the file is not valid UTF-8`}},
		{"fallback repeats model", "name: x\nmodel: a\nmodel_fallbacks: [b, a, b]\n", []string{
			`agents/x/agent.yaml:3:22: warning: model_fallbacks[1]: "a" is already tried before it`,
			`agents/x/agent.yaml:3:25: warning: model_fallbacks[2]: "b" is already tried before it`}},
		{"fallbacks not a list", "name: x\nmodel: a\nmodel_fallbacks: b\n", []string{`agents/x/agent.yaml:3:18: model_fallbacks: want a list, got a string`}},
		{"too many fallbacks", "name: x\nmodel: a\nmodel_fallbacks: [b, c, d, e, f, g, h, i, j, k, l]\n", []string{
			`agents/x/agent.yaml:3:18: model_fallbacks: 11 models, more than 10`}},
		{"tools granted twice", "name: x\nmodel: a\ntools: [grafana, {grafana: [q]}]\n", []string{
			`agents/x/agent.yaml:3:19: tools: server "grafana" is granted twice (first at 3:9)`}},
		{"tools empty glob list", "name: x\nmodel: a\ntools:\n  - grafana: []\n", []string{
			`agents/x/agent.yaml:4:14: tools.grafana: an empty list grants no tool: name the server alone to grant all its tools, or leave it out`}},
		{"tools bad glob", "name: x\nmodel: a\ntools:\n  - grafana: [query_*, '[ab']\n", []string{
			`agents/x/agent.yaml:4:24: tools.grafana[1]: glob "[ab": [ is not closed with ]`}},
		{"tools empty glob", "name: x\nmodel: a\ntools:\n  - grafana: ['']\n", []string{
			`agents/x/agent.yaml:4:15: tools.grafana[0]: an empty glob matches no tool`}},
		{"tools number", "name: x\nmodel: a\ntools: [5]\n", []string{
			`agents/x/agent.yaml:3:9: tools[0]: want an MCP server name or {server: [tool globs]}, got a number`}},
		{"tools bad server name", "name: x\nmodel: a\ntools: ['graf ana']\n", []string{
			`agents/x/agent.yaml:3:9: tools: "graf ana" is not an MCP server name (letters, digits, _ and -, at most 40, starting with a letter or digit)`}},
		{"tools globs not strings", "name: x\nmodel: a\ntools:\n  - grafana: [1]\n", []string{
			`agents/x/agent.yaml:4:15: tools.grafana[0]: want a string, got a number`}},
		{"several problems sorted", "name: x\nmodel: a\ntemperature: 3\nmax_tokens: 0\n", []string{
			`agents/x/agent.yaml:3:14: temperature: 3 is out of range: 0..2`,
			`agents/x/agent.yaml:4:13: max_tokens: 0 is out of range: 1..1000000`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parseX(t, tt.src)
			got := strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			if len(ds) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestParseProfileValues: what a valid profile reads as, and the limits at
// both ends of their ranges.
func TestParseProfileValues(t *testing.T) {
	src := `# a comment
name: x
description: triage
model: anthropic/claude-sonnet-4-6
model_fallbacks: [openrouter/nvidia/nemotron:free]
max_tokens: 1000000
temperature: 0
thinking_level: xhigh
tools:
  - filesystem
  - grafana: [search_dashboards, "query_*"]
max_iterations: 1
tool_timeout_seconds: 900
trace_tool_result_max_chars: 1
`
	l, ds := parseX(t, src)
	if len(ds) != 0 {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	zero := 0.0
	want := &Profile{
		Name: "x", Description: "triage", Model: "anthropic/claude-sonnet-4-6",
		ModelFallbacks: []string{"openrouter/nvidia/nemotron:free"}, MaxTokens: 1000000, Temperature: &zero,
		ThinkingLevel: "xhigh",
		Tools:         []ToolGrant{{Server: "filesystem"}, {Server: "grafana", Tools: []string{"search_dashboards", "query_*"}}},
		MaxIterations: 1, ToolTimeoutSeconds: 900, TraceToolResultMaxChars: 1,
		Soul: "You are x.", Version: Version([]byte(src), []byte("You are x.")),
	}
	if !reflect.DeepEqual(l.Profile, want) {
		t.Errorf("profile\n got %+v\nwant %+v", l.Profile, want)
	}
	for key, pos := range map[string]string{
		"model":              "agents/x/agent.yaml:4:8",
		"model_fallbacks[0]": "agents/x/agent.yaml:5:19",
		"tools.filesystem":   "agents/x/agent.yaml:10:5",
		"tools.grafana":      "agents/x/agent.yaml:11:5",
		"tools.grafana[1]":   "agents/x/agent.yaml:11:34",
		"unknown":            "agents/x/agent.yaml:1:1",
	} {
		if got := l.At(key).String(); got != pos {
			t.Errorf("At(%q) = %s, want %s", key, got, pos)
		}
	}
	// Optional fields written empty keep their defaults.
	l, ds = parseX(t, "name: x\nmodel: a\nthinking_level:\ntools:\nmax_iterations: ~\n")
	if len(ds) != 0 || l.Profile.ThinkingLevel != "" || l.Profile.Tools != nil || l.Profile.MaxIterations != 0 {
		t.Errorf("empty optional fields: %+v\n%s", l.Profile, ds)
	}
}

// TestVersion pins the hash's exact input, so a version computed elsewhere
// (a grounding judge, a calibration store) can be recomputed from the
// files.
func TestVersion(t *testing.T) {
	yml, soul := []byte("name: x\nmodel: a\n"), []byte("You are x.\n")
	sum := sha256.Sum256([]byte("agent.yaml\x0017\x00name: x\nmodel: a\nsoul.md\x0011\x00You are x.\n"))
	if got, want := Version(yml, soul), hex.EncodeToString(sum[:])[:12]; got != want {
		t.Errorf("Version = %s, want %s", got, want)
	}
	tests := []struct {
		name      string
		yml, soul string
	}{
		{"comment added", "name: x\nmodel: a\n# note\n", "You are x.\n"},
		{"soul changed", "name: x\nmodel: a\n", "You are x!\n"},
		{"trailing blank", "name: x\nmodel: a\n", "You are x.\n\n"},
		{"bytes moved across files", "name: x\nmodel: a\nY", "ou are x.\n"},
		{"no soul", "name: x\nmodel: a\n", ""},
	}
	base := Version(yml, soul)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := Version([]byte(tt.yml), []byte(tt.soul)); v == base || len(v) != 12 {
				t.Errorf("Version = %s, base %s: want a different 12-digit version", v, base)
			}
		})
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadProfiles: the directory scan and the file bounds, each at, and
// one byte past, its limit.
func TestLoadProfiles(t *testing.T) {
	atLimit := "name: big\nmodel: a\n# " + strings.Repeat("x", MaxProfileBytes-len("name: big\nmodel: a\n# ")-1) + "\n"
	tests := []struct {
		name  string
		files map[string]string
		names []string
		want  []string // diagnostics, with the directory as {dir}
	}{
		{"one agent", map[string]string{"a/agent.yaml": "name: a\nmodel: m\n", "a/soul.md": ""}, []string{"a"}, nil},
		{"missing soul", map[string]string{"a/agent.yaml": "name: a\nmodel: m\n"}, []string{"a"}, []string{
			"{dir}/a/soul.md: missing: an agent's system prompt is its soul.md, beside agent.yaml (an empty file is allowed)"}},
		{"soul not utf-8", map[string]string{"a/agent.yaml": "name: a\nmodel: m\n", "a/soul.md": "\xff"}, []string{"a"}, []string{
			"{dir}/a/soul.md:1:1: the file is not valid UTF-8"}},
		{"soul at limit", map[string]string{"a/agent.yaml": "name: a\nmodel: m\n", "a/soul.md": strings.Repeat("s", MaxSoulBytes)}, []string{"a"}, nil},
		{"soul past limit", map[string]string{"a/agent.yaml": "name: a\nmodel: m\n", "a/soul.md": strings.Repeat("s", MaxSoulBytes+1)}, []string{"a"}, []string{
			"{dir}/a/soul.md:1:1: the file is larger than 64 KiB"}},
		{"profile at limit", map[string]string{"big/agent.yaml": atLimit, "big/soul.md": ""}, []string{"big"}, nil},
		{"profile past limit", map[string]string{"big/agent.yaml": atLimit + "x", "big/soul.md": ""}, []string{"big"}, []string{
			"{dir}/big/agent.yaml:1:1: the file is larger than 64 KiB"}},
		{"directory without profile", map[string]string{"notes/readme.md": "", "a/agent.yaml": "name: a\nmodel: m\n", "a/soul.md": ""}, []string{"a"}, []string{
			"{dir}/notes: warning: no agent.yaml here: not an agent"}},
		{"hidden and underscore directories skipped", map[string]string{".git/x": "", "_drafts/agent.yaml": "bad: [", "README.md": ""}, nil, nil},
		{"directory that is no agent name", map[string]string{"my agent/agent.yaml": "name: my agent\nmodel: m\n", "my agent/soul.md": ""}, []string{"my agent"}, []string{
			`{dir}/my agent: agent directory "my agent" is not an agent name (letters, digits, _ and -, at most 80, starting with a letter or digit)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			got, ds := LoadProfiles(dir)
			var names []string
			for n := range got {
				names = append(names, n)
			}
			if len(names) != len(tt.names) || (len(names) == 1 && names[0] != tt.names[0]) {
				t.Errorf("profiles %v, want %v", names, tt.names)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "{dir}", dir))
			}
			var lines []string
			if len(ds) > 0 {
				lines = strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			}
			if !reflect.DeepEqual(lines, want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	if ps, ds := LoadProfiles(filepath.Join(t.TempDir(), "absent")); len(ps) != 0 || len(ds) != 0 {
		t.Errorf("absent directory: %v %s", ps, ds)
	}
}

// TestExampleProfiles: the repository's agents load without a problem.
func TestExampleProfiles(t *testing.T) {
	ps, ds := LoadProfiles("../../agents")
	if len(ds) != 0 {
		t.Errorf("diagnostics:\n%s", ds)
	}
	for _, name := range []string{"sre-triage", "sre-investigator", "grounding-judge"} {
		if ps[name] == nil || ps[name].Profile.Soul == "" || len(ps[name].Profile.Version) != 12 {
			t.Errorf("agent %q: %+v", name, ps[name])
		}
	}
}
