package intake

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/inbound"
)

var testNow = time.Date(2026, 11, 29, 17, 52, 3, 0, time.UTC)

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    inbound.Tokens
		wantErr string
	}{
		{"team map, JSON", `{"checkout": "tok-1", "payments": "tok-2"}`, inbound.Tokens{"checkout": "tok-1", "payments": "tok-2"}, ""},
		{"team map, YAML", "checkout: tok-1\npayments: ${PAYMENTS_TOKEN}\n", inbound.Tokens{"checkout": "tok-1", "payments": "${PAYMENTS_TOKEN}"}, ""},
		{"reference form", "teams:\n  - name: checkout\n    token: tok-1\n  - {name: payments, token: tok-2}\n", inbound.Tokens{"checkout": "tok-1", "payments": "tok-2"}, ""},
		{"under auth with a legacy token", "auth:\n  token: legacy-1\n  teams: [{name: checkout, token: tok-1}]\n", inbound.Tokens{"": "legacy-1", "checkout": "tok-1"}, ""},
		{"empty file", "  \n", inbound.Tokens{}, ""},
		{"token not a string", `{"checkout": 12}`, nil, `the token of team "checkout" must be a string`},
		{"team without name", "teams: [{token: tok-1}]", nil, "teams[0] needs a name and a token"},
		{"team without token", "teams: [{name: checkout}]", nil, `team "checkout" has an empty token`},
		{"team twice", "teams: [{name: a, token: x1}, {name: a, token: x2}]", nil, `team "a" is listed twice`},
		{"unknown key", "teams: []\nusers: []", nil, `unknown key "users"`},
		{"shared token", `{"a": "same", "b": "same"}`, nil, `teams "a" and "b" share a token`},
		{"white space", `{"a": "tok 1"}`, nil, "contains white space"},
		{"not YAML", "{[", nil, "parse tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTokens([]byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

const minimalSteps = `
steps:
  - name: only
    executor: scripted
    prompt_template: "hello"
`

func writeFile(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPipelinesOrder(t *testing.T) {
	dir := t.TempDir()
	// Written out of order: the file names decide.
	writeFile(t, dir, "20-default.yaml", "name: default\ntrigger:\n  match: {}\n"+minimalSteps)
	writeFile(t, dir, "10-critical.yml", "name: critical\ntrigger:\n  match:\n    severity: critical\n"+minimalSteps)
	writeFile(t, dir, "15-broken.yaml", "name: broken\nsteps: 3\n")
	writeFile(t, dir, "notes.txt", "not a pipeline")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}

	ps, err := LoadPipelines(dir)
	if err == nil || !strings.Contains(err.Error(), "15-broken.yaml") {
		t.Errorf("error %v, want the broken file reported", err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"critical", "default"}) {
		t.Fatalf("loaded %v", names)
	}
	r, err := inbound.NewRouter(ps)
	if err != nil {
		t.Fatal(err)
	}
	for sev, want := range map[string]string{"critical": "critical", "warning": "default"} {
		if p, err := r.Route(inbound.Context{Severity: sev}); err != nil || p.Name != want {
			t.Errorf("severity %s routed to %v (%v), want %s", sev, p, err, want)
		}
	}
	if _, err := LoadPipelines(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory loads")
	}
}

// TestRouteSamples routes the sample events to the example pipelines.
func TestRouteSamples(t *testing.T) {
	ps, err := LoadPipelines(filepath.Join("..", "..", "pipelines"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := inbound.NewRouter(ps)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, source, want string
	}{
		{"alertmanager-firing.json", "alertmanager", "sre-alert-triage"},
		{"alertmanager-resolved.json", "alertmanager", "sre-alert-triage"},
		{"alertmanager-grouped.json", "alertmanager", "sre-alert-triage"},
		{"generic-order.json", "generic", "order-intake"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var c inbound.Context
			var err error
			if tt.source == "alertmanager" {
				c, err = inbound.NormalizeAlertmanager(readEvent(t, tt.file), "", testNow)
			} else {
				c, err = inbound.NormalizeGeneric(readEvent(t, tt.file), testNow)
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Route(c)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tt.want {
				t.Errorf("routed to %q, want %q", p.Name, tt.want)
			}
		})
	}
	info := inbound.Context{Source: "alertmanager", Severity: "info", Labels: map[string]string{"team": "checkout"}}
	if p, err := r.Route(info); !errors.Is(err, inbound.ErrNoMatch) {
		t.Errorf("an info alert routed to %v (%v)", p, err)
	}
}

// TestParseTokenList: intake's ParseTokenList reads an object as a tokens
// file (YAML), so a flow mapping stays accepted; inbound's reads JSON only.
func TestParseTokenList(t *testing.T) {
	got, err := ParseTokenList(` {checkout: tok-1, payments: "tok-2"}`)
	if err != nil || !reflect.DeepEqual(got, inbound.Tokens{"checkout": "tok-1", "payments": "tok-2"}) {
		t.Errorf("a flow mapping: %v, %v", got, err)
	}
	if _, err := inbound.ParseTokenList(`{checkout: tok-1}`); err == nil {
		t.Error("inbound.ParseTokenList read a YAML flow mapping")
	}
	got, err = ParseTokenList("checkout=tok-1")
	if err != nil || !reflect.DeepEqual(got, inbound.Tokens{"checkout": "tok-1"}) {
		t.Errorf("pairs: %v, %v", got, err)
	}
	if _, err := ParseTokenList(`{"a": "x1", "a": "x2"}`); err == nil || !strings.Contains(err.Error(), `"a" already defined`) {
		t.Errorf("a key twice: %v", err)
	}
}
