package inbound

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

func TestMatch(t *testing.T) {
	c := Context{
		Source: "alertmanager", Severity: "critical", Summary: "disk 91% full on db-1",
		Labels: map[string]string{
			"service": "checkout-api", "team": "checkout", "replicas": "3", "load": "0.75",
			"canary": "True", "empty": "", "version": "v2.10.1",
		},
	}
	m := func(field, op string, v any) pipeline.Match { return pipeline.Match{Field: field, Op: op, Value: v} }
	tests := []struct {
		name string
		ms   []pipeline.Match
		want bool
	}{
		{"no conditions match everything", nil, true},
		{"scalar equality", []pipeline.Match{m("source", "eq", "alertmanager")}, true},
		{"empty op is eq", []pipeline.Match{m("severity", "", "critical")}, true},
		{"equality is case sensitive", []pipeline.Match{m("severity", "eq", "Critical")}, false},
		{"label equality", []pipeline.Match{m("team", "eq", "checkout")}, true},
		{"all must hold", []pipeline.Match{m("team", "eq", "checkout"), m("severity", "eq", "warning")}, false},
		{"absent label fails eq", []pipeline.Match{m("region", "eq", "eu")}, false},
		{"absent label fails ne", []pipeline.Match{m("region", "ne", "eu")}, false},
		{"absent label fails not_in", []pipeline.Match{m("region", "not_in", []any{"eu"})}, false},
		{"present empty label", []pipeline.Match{m("empty", "eq", "")}, true},
		{"empty pipeline field", []pipeline.Match{m("pipeline", "eq", "")}, true},
		{"ne holds", []pipeline.Match{m("severity", "ne", "info")}, true},
		{"ne fails", []pipeline.Match{m("severity", "ne", "critical")}, false},
		{"number equals integer label", []pipeline.Match{m("replicas", "eq", int64(3))}, true},
		{"float equals integer label", []pipeline.Match{m("replicas", "eq", 3.0)}, true},
		{"number vs non-numeric", []pipeline.Match{m("team", "eq", 3.0)}, false},
		{"bool equals any case", []pipeline.Match{m("canary", "eq", true)}, true},
		{"bool mismatch", []pipeline.Match{m("canary", "eq", false)}, false},
		{"null equals nothing", []pipeline.Match{m("empty", "eq", nil)}, false},
		{"ne null holds", []pipeline.Match{m("team", "ne", nil)}, true},
		{"in", []pipeline.Match{m("severity", "in", []any{"critical", "warning"})}, true},
		{"in misses", []pipeline.Match{m("severity", "in", []any{"info", "warning"})}, false},
		{"in with numbers", []pipeline.Match{m("replicas", "in", []any{1.0, 3.0})}, true},
		{"in with a scalar", []pipeline.Match{m("severity", "in", "critical")}, true},
		{"not_in", []pipeline.Match{m("severity", "not_in", []any{"info"})}, true},
		{"not_in misses", []pipeline.Match{m("severity", "not_in", []any{"critical"})}, false},
		{"regex search", []pipeline.Match{m("summary", "regex", `\d+% full`)}, true},
		{"regex anchored", []pipeline.Match{m("summary", "regex", `^full`)}, false},
		{"regex on label", []pipeline.Match{m("version", "regex", `^v2\.`)}, true},
		{"invalid regex holds for nothing", []pipeline.Match{m("summary", "regex", `(`)}, false},
		{"regex not a string", []pipeline.Match{m("summary", "regex", 3.0)}, false},
		{"gt", []pipeline.Match{m("replicas", "gt", 2.0)}, true},
		{"gt equal", []pipeline.Match{m("replicas", "gt", 3.0)}, false},
		{"gte equal", []pipeline.Match{m("replicas", "gte", int64(3))}, true},
		{"lt", []pipeline.Match{m("load", "lt", 0.8)}, true},
		{"lt fails", []pipeline.Match{m("load", "lt", 0.5)}, false},
		{"lte equal", []pipeline.Match{m("load", "lte", 0.75)}, true},
		{"numeric op on text", []pipeline.Match{m("team", "gt", 1.0)}, false},
		{"numeric op with text bound", []pipeline.Match{m("replicas", "gt", "two")}, false},
		{"numeric op with numeric string bound", []pipeline.Match{m("replicas", "lt", "10")}, true},
		{"numeric op on empty", []pipeline.Match{m("empty", "lte", 0.0)}, false},
		{"unknown operator", []pipeline.Match{m("team", "like", "check%")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.ms, c); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func testPipeline(name string, stage pipeline.Stage, ms ...pipeline.Match) *pipeline.Pipeline {
	p := &pipeline.Pipeline{Name: name, Stage: stage}
	if ms != nil {
		p.Trigger = &pipeline.Trigger{Match: ms}
	}
	return p
}

func TestRoute(t *testing.T) {
	eq := func(f string, v any) pipeline.Match { return pipeline.Match{Field: f, Op: "eq", Value: v} }
	r, err := NewRouter([]*pipeline.Pipeline{
		testPipeline("critical-checkout", pipeline.StageProduction, eq("severity", "critical"), eq("team", "checkout")),
		testPipeline("any-checkout", pipeline.StageProduction, eq("team", "checkout")),
		testPipeline("manual-only", pipeline.StageProduction),
		testPipeline("orders", pipeline.StageProduction, eq("source", "generic"), eq("event", "order.created")),
		// An empty, non-nil match list: a trigger that matches everything.
		testPipeline("catch-all", pipeline.StageTesting, []pipeline.Match{}...),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		c       Context
		want    string
		wantErr error
	}{
		{"first match wins", Context{Severity: "critical", Labels: map[string]string{"team": "checkout"}}, "critical-checkout", nil},
		{"next in order", Context{Severity: "warning", Labels: map[string]string{"team": "checkout"}}, "any-checkout", nil},
		{"generic event", Context{Source: "generic", Labels: map[string]string{"event": "order.created"}}, "orders", nil},
		{"explicit name wins over match", Context{Pipeline: "orders", Severity: "critical", Labels: map[string]string{"team": "checkout"}}, "orders", nil},
		{"explicit name reaches a trigger-less pipeline", Context{Pipeline: "manual-only"}, "manual-only", nil},
		{"unknown explicit name", Context{Pipeline: "nope", Labels: map[string]string{"team": "checkout"}}, "", ErrUnknownPipeline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := r.Route(tt.c)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || HTTPStatus(err) != 422 {
					t.Fatalf("error %v, want %v (422)", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tt.want {
				t.Errorf("routed to %q, want %q", p.Name, tt.want)
			}
		})
	}
	if p, err := r.Route(Context{Source: "grafana"}); err != nil || p.Name != "catch-all" {
		t.Errorf("catch-all: %v %v", p, err)
	}
	if got, want := r.Pipelines(), []string{"critical-checkout", "any-checkout", "manual-only", "orders", "catch-all"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Pipelines() = %v, want %v", got, want)
	}

	noCatchAll, _ := NewRouter([]*pipeline.Pipeline{testPipeline("orders", pipeline.StageProduction, eq("source", "generic"))})
	if _, err := noCatchAll.Route(Context{Source: "alertmanager"}); !errors.Is(err, ErrNoMatch) || HTTPStatus(err) != 422 {
		t.Errorf("no match: %v", err)
	}
}

func TestNewRouterErrors(t *testing.T) {
	tests := []struct {
		name string
		ps   []*pipeline.Pipeline
		want string
	}{
		{"duplicate", []*pipeline.Pipeline{testPipeline("a", ""), testPipeline("a", "")}, `pipeline "a" is defined twice`},
		{"unnamed", []*pipeline.Pipeline{{}}, "pipeline 0 has no name"},
		{"nil", []*pipeline.Pipeline{nil}, "pipeline 0 has no name"},
		{"bad regex", []*pipeline.Pipeline{testPipeline("a", "", pipeline.Match{Field: "summary", Op: "regex", Value: "(?<=x)"})}, `pipeline "a": trigger.match.summary: invalid regex`},
		{"bad op", []*pipeline.Pipeline{testPipeline("a", "", pipeline.Match{Field: "team", Op: "like", Value: "x"})}, `unknown operator "like"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRouter(tt.ps)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
