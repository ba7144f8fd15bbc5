package plan_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/infra/plan"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewTrigger(t *testing.T) {
	tests := []struct {
		name    string
		match   []pipeline.Match
		pattern string
		inexact []string
	}{
		{name: "no conditions", pattern: `{"detail":{"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"]}`},
		{name: "source and labels",
			match: []pipeline.Match{
				{Field: "source", Op: "eq", Value: "alertmanager"},
				{Field: "severity", Op: "in", Value: []any{"critical", "warning"}},
				{Field: "team", Op: "eq", Value: "checkout"},
			},
			pattern: `{"detail":{"labels":{"team":["checkout"]},"pipeline":["",{"exists":false}],"severity":["critical","warning"]},"detail-type":["Stepline Trigger"],"source":["alertmanager"]}`},
		{name: "anything-but",
			match: []pipeline.Match{
				{Field: "summary", Op: "ne", Value: "test"},
				{Field: "env", Op: "not_in", Value: []any{"dev", "staging"}},
			},
			pattern: `{"detail":{"labels":{"env":[{"anything-but":["dev","staging"]}]},"pipeline":["",{"exists":false}],"summary":[{"anything-but":"test"}]},"detail-type":["Stepline Trigger"]}`},
		{name: "empty not_in needs only the key",
			match:   []pipeline.Match{{Field: "env", Op: "not_in", Value: []any{}}},
			pattern: `{"detail":{"labels":{"env":[{"exists":true}]},"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"]}`},
		{name: "pipeline, numbers and booleans go to ingest",
			match: []pipeline.Match{
				{Field: "pipeline", Op: "eq", Value: ""},
				{Field: "replicas", Op: "gt", Value: 3.0},
				{Field: "code", Op: "eq", Value: 500.0},
				{Field: "flag", Op: "in", Value: []any{"a", true}},
			},
			pattern: `{"detail":{"labels":{"code":[{"exists":true}],"flag":[{"exists":true}],"replicas":[{"exists":true}]}},"detail-type":["Stepline Trigger"]}`,
			inexact: []string{"pipeline eq", "replicas gt", "code eq", "flag in"}},
		{name: "an inexact source adds no filter",
			match:   []pipeline.Match{{Field: "source", Op: "regex", Value: "^alert"}},
			pattern: `{"detail":{"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"]}`,
			inexact: []string{"source regex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := plan.NewTrigger(&pipeline.Trigger{Match: tt.match})
			if got := jsonOf(t, tr.Pattern); got != tt.pattern {
				t.Errorf("Pattern = %s\nwant      %s", got, tt.pattern)
			}
			if tr.Exact != (len(tt.inexact) == 0) {
				t.Errorf("Exact = %v, want %v", tr.Exact, len(tt.inexact) == 0)
			}
			if !reflect.DeepEqual(tr.Inexact, tt.inexact) {
				t.Errorf("Inexact = %v, want %v", tr.Inexact, tt.inexact)
			}
		})
	}
}

func TestRules(t *testing.T) {
	off, on := false, true
	exact := []pipeline.Match{{Field: "source", Op: "eq", Value: "generic"}}
	inexact := []pipeline.Match{{Field: "summary", Op: "regex", Value: "disk"}}
	type rule struct {
		ID      string
		Pattern string
		Target  plan.Target
	}
	tests := []struct {
		name  string
		match []pipeline.Match
		dedup *pipeline.Dedup
		want  []rule
	}{
		{name: "exact without dedup", match: exact, dedup: &pipeline.Dedup{Enabled: &off}, want: []rule{
			{"Trigger", `{"detail":{"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`, plan.TargetStateMachine},
		}},
		{name: "exact with default dedup", match: exact, want: []rule{
			{"Trigger", `{"detail":{"fingerprint":["",{"exists":false}],"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`, plan.TargetStateMachine},
			{"DedupTrigger", `{"detail":{"fingerprint":[{"anything-but":""}],"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`, plan.TargetIngest},
		}},
		{name: "exact with dedup on", match: exact, dedup: &pipeline.Dedup{Enabled: &on}, want: []rule{
			{"Trigger", `{"detail":{"fingerprint":["",{"exists":false}],"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`, plan.TargetStateMachine},
			{"DedupTrigger", `{"detail":{"fingerprint":[{"anything-but":""}],"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`, plan.TargetIngest},
		}},
		{name: "inexact", match: inexact, dedup: &pipeline.Dedup{Enabled: &off}, want: []rule{
			{"Trigger", `{"detail":{"pipeline":["",{"exists":false}],"summary":[{"exists":true}]},"detail-type":["Stepline Trigger"]}`, plan.TargetIngest},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := plan.NewTrigger(&pipeline.Trigger{Match: tt.match, Dedup: tt.dedup})
			var got []rule
			for _, r := range tr.Rules() {
				got = append(got, rule{r.ID, jsonOf(t, r.Pattern), r.Target})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rules() =\n%v\nwant\n%v", got, tt.want)
			}
			if strings.Contains(jsonOf(t, tr.Pattern), "fingerprint") {
				t.Error("Rules() changed the trigger's own pattern")
			}
		})
	}
}

func TestExampleTriggerPatterns(t *testing.T) {
	ps, err := plan.Load("../../pipelines", settings.Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"sre-alert-triage":     `{"detail":{"labels":{"team":["checkout"]},"pipeline":["",{"exists":false}],"severity":["critical","warning"]},"detail-type":["Stepline Trigger"],"source":["alertmanager"]}`,
		"order-intake":         `{"detail":{"labels":{"event":["order.created"]},"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`,
		"multi-service-health": `{"detail":{"labels":{"event":["deploy.finished"]},"pipeline":["",{"exists":false}]},"detail-type":["Stepline Trigger"],"source":["generic"]}`,
		"sre-investigation":    `{"detail":{"pipeline":["",{"exists":false}],"severity":["critical","major"]},"detail-type":["Stepline Trigger"],"source":["incident"]}`,
	}
	for _, p := range ps {
		if p.Trigger == nil {
			continue
		}
		if got := jsonOf(t, p.Trigger.Pattern); got != want[p.Name] {
			t.Errorf("%s: pattern %s, want %s", p.Name, got, want[p.Name])
		}
	}
}

func TestExplicitPattern(t *testing.T) {
	want := `{"detail":{"pipeline":[{"anything-but":""}]},"detail-type":["Stepline Trigger"]}`
	if got := jsonOf(t, plan.ExplicitPattern()); got != want {
		t.Errorf("ExplicitPattern = %s, want %s", got, want)
	}
}
