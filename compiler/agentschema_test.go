package compiler

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/xeipuuv/gojsonschema"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/yamldoc"
)

// TestAgentSchemaAgreesWithLoader: every profile the loader accepts, the
// schema accepts, and each the schema refuses, the loader refuses; the
// loader's own checks beyond the schema are marked.
func TestAgentSchemaAgreesWithLoader(t *testing.T) {
	schema, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(AgentSchema()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src  string
		valid      bool
		loaderOnly bool // a rule the schema cannot state
	}{
		{"minimal", "name: x\nmodel: anthropic/c\n", true, false},
		{"everything", "name: x\ndescription: d\nmodel: m\nmodel_fallbacks: [openai/gpt-4o]\nmax_tokens: 8192\ntemperature: 0.5\nthinking_level: high\ntools: [a, {b: [q_*]}]\nmax_iterations: 20\ntool_timeout_seconds: 30\ntrace_tool_result_max_chars: 3000\n", true, false},
		{"nulls keep defaults", "name: x\nmodel: m\ndescription:\nthinking_level:\ntools:\nmax_tokens:\n", true, false},
		{"no name", "model: m\n", false, false},
		{"no model", "name: x\n", false, false},
		{"unknown field", "name: x\nmodel: m\nsoul: hi\n", false, false},
		{"model with a blank", "name: x\nmodel: 'a b'\n", false, false},
		{"model as a template", "name: x\nmodel: '{{ m }}'\n", false, false},
		{"model ends in a slash", "name: x\nmodel: openai/\n", false, false},
		{"model a number", "name: x\nmodel: 4\n", false, false},
		{"max_tokens at bounds", "name: x\nmodel: m\nmax_tokens: 1\nmax_iterations: 1000\ntool_timeout_seconds: 900\ntrace_tool_result_max_chars: 1000000\n", true, false},
		{"max_tokens below", "name: x\nmodel: m\nmax_tokens: 0\n", false, false},
		{"max_tokens above", "name: x\nmodel: m\nmax_tokens: 1000001\n", false, false},
		{"max_iterations above", "name: x\nmodel: m\nmax_iterations: 1001\n", false, false},
		{"tool timeout above", "name: x\nmodel: m\ntool_timeout_seconds: 901\n", false, false},
		{"trace cap below", "name: x\nmodel: m\ntrace_tool_result_max_chars: 0\n", false, false},
		{"fraction", "name: x\nmodel: m\nmax_tokens: 1.5\n", false, false},
		{"temperature at top", "name: x\nmodel: m\ntemperature: 2\n", true, false},
		{"temperature above", "name: x\nmodel: m\ntemperature: 2.5\n", false, false},
		{"thinking level", "name: x\nmodel: m\nthinking_level: max\n", false, false},
		{"too many fallbacks", "name: x\nmodel: m\nmodel_fallbacks: [a, b, c, d, e, f, g, h, i, j, k]\n", false, false},
		{"empty glob list", "name: x\nmodel: m\ntools: [{a: []}]\n", false, false},
		{"server name", "name: x\nmodel: m\ntools: ['a b']\n", false, false},
		{"tool entry a number", "name: x\nmodel: m\ntools: [3]\n", false, false},
		{"bad glob", "name: x\nmodel: m\ntools: [{a: ['[x']}]\n", false, true},
		{"server granted twice", "name: x\nmodel: m\ntools: [a, a]\n", false, true},
		{"name differs from the directory", "name: y\nmodel: m\n", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := agent.ParseProfile("x", "agent.yaml", []byte(tt.src), "soul.md", nil)
			if loaderOK := !ds.HasErrors(); loaderOK != tt.valid {
				t.Errorf("loader valid = %v, want %v\n%s", loaderOK, tt.valid, ds)
			}
			doc, err := yamldoc.Parse([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := schema.Validate(gojsonschema.NewGoLoader(toValue(doc.Content[0])))
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.valid || tt.loaderOnly; res.Valid() != want {
				t.Errorf("schema valid = %v, want %v: %v", res.Valid(), want, res.Errors())
			}
		})
	}
}

// TestAgentSchemaFieldsAndRanges: the schema's fields are the loader's,
// and each bounded number has the loader's range.
func TestAgentSchemaFieldsAndRanges(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Minimum  *float64 `json:"minimum"`
			Maximum  *float64 `json:"maximum"`
			MaxItems *int     `json:"maxItems"`
			Default  any      `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(AgentSchema(), &s); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for k := range s.Properties {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	want := append([]string(nil), agent.ProfileFields()...)
	sort.Strings(want)
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("schema fields %v\nloader fields %v", fields, want)
	}
	ranges := map[string][2]float64{
		"max_tokens":                  {1, agent.MaxMaxTokens},
		"temperature":                 {0, agent.MaxTemperature},
		"max_iterations":              {1, agent.MaxMaxIterations},
		"tool_timeout_seconds":        {1, agent.MaxToolTimeoutSeconds},
		"trace_tool_result_max_chars": {1, agent.MaxTraceToolResultChars},
	}
	for field, r := range ranges {
		p := s.Properties[field]
		if p.Minimum == nil || p.Maximum == nil || *p.Minimum != r[0] || *p.Maximum != r[1] {
			t.Errorf("%s: schema %v..%v, loader %v..%v", field, p.Minimum, p.Maximum, r[0], r[1])
		}
	}
	defaults := map[string]int{"max_iterations": agent.DefaultMaxIterations, "tool_timeout_seconds": agent.DefaultToolTimeoutSeconds, "trace_tool_result_max_chars": agent.DefaultTraceToolResultMaxChars}
	for field, d := range defaults {
		if got := fmt.Sprint(s.Properties[field].Default); got != fmt.Sprint(d) {
			t.Errorf("%s: schema default %s, agent default %d", field, got, d)
		}
	}
	if n := s.Properties["model_fallbacks"].MaxItems; n == nil || *n != agent.MaxModelFallbacks {
		t.Errorf("model_fallbacks maxItems %v, loader %d", n, agent.MaxModelFallbacks)
	}
	if n := s.Properties["tools"].MaxItems; n == nil || *n != agent.MaxToolGrants {
		t.Errorf("tools maxItems %v, loader %d", n, agent.MaxToolGrants)
	}
}

// TestExampleAgentsMatchSchema: the repository's profiles are valid under
// the published schema.
func TestExampleAgentsMatchSchema(t *testing.T) {
	schema, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(AgentSchema()))
	if err != nil {
		t.Fatal(err)
	}
	ps, ds := agent.LoadProfiles("../agents")
	if len(ds) != 0 || len(ps) < 3 {
		t.Fatalf("%d profiles: %s", len(ps), ds)
	}
	for name, l := range ps {
		src, err := os.ReadFile(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := yamldoc.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := schema.Validate(gojsonschema.NewGoLoader(toValue(doc.Content[0])))
		if err != nil || !res.Valid() {
			t.Errorf("%s: %v %v", name, err, res.Errors())
		}
	}
}
