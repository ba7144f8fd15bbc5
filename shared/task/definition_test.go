package task

import (
	"strings"
	"testing"
)

func TestJSONataLiteral(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`{% 'plain' %}`, "plain", true},
		{`{% 'it\u0027s "quoted"\n\\ done' %}`, "it's \"quoted\"\n\\ done", true},
		{`{% '' %}`, "", true},
		{`{% $states.input %}`, "", false},
		{`{% 'a' & 'b' %}`, "", false},
		{`{% 'unterminated\' %}`, "", false},
		{`plain text`, "", false},
	}
	for _, tc := range tests {
		got, ok := jsonataLiteral(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("jsonataLiteral(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPipelineAssigned: the facts are read from the assigned value with
// its static strings decoded, and the value itself is left as it was (the
// local runner passes a live state machine's Assign).
func TestPipelineAssigned(t *testing.T) {
	v := map[string]any{"name": "triage", "stage": "production", "vars": map[string]any{"empty": "{% '' %}"}}
	p, err := PipelineAssigned(v)
	if err != nil || p.Name != "triage" || string(p.Stage) != "production" {
		t.Fatalf("PipelineAssigned = %+v, %v", p, err)
	}
	if got := v["vars"].(map[string]any)["empty"]; got != "{% '' %}" {
		t.Errorf("the assigned value changed: vars.empty = %q", got)
	}
	if _, err := PipelineAssigned(map[string]any{"stage": "testing"}); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("facts without a name: %v", err)
	}
}

// TestPipelineValue: a run's variable holds the facts evaluated, so a
// string that reads as a JSONata literal is text the author wrote and
// stays as it is; facts without a name are refused.
func TestPipelineValue(t *testing.T) {
	v := map[string]any{"name": "triage", "stage": "production", "vars": map[string]any{"shown": "{% 'x' %}"}}
	p, err := PipelineValue(v)
	if err != nil || p.Name != "triage" || string(p.Stage) != "production" {
		t.Fatalf("PipelineValue = %+v, %v", p, err)
	}
	if got := p.Vars["shown"]; got != "{% 'x' %}" {
		t.Errorf("vars.shown = %v, want the text as it is", got)
	}
	for _, bad := range []any{map[string]any{"stage": "testing"}, "triage", nil} {
		if _, err := PipelineValue(bad); err == nil {
			t.Errorf("PipelineValue(%v): no error", bad)
		}
	}
}
