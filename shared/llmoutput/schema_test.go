package llmoutput

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"
)

// TestContractSchemaAgreesWithParse feeds clean JSON documents to both the
// published schema and Parse: the verdicts must agree.
func TestContractSchemaAgreesWithParse(t *testing.T) {
	schema, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(ContractSchemaJSON()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"minimal", `{"confidence":0.5,"summary":"s","next_step_context":""}`, true},
		{"full", `{"confidence":1,"summary":"s","next_step_context":"n","proceed":false,"proceed_reason":"r","reasoning":{"supports":["a"]},"artifacts":{"a":"b"},"x":[1]}`, true},
		{"extras", `{"confidence":0,"summary":"s","next_step_context":"","action":{"k":"v"}}`, true},
		{"missing next_step_context", `{"confidence":0.5,"summary":"s"}`, false},
		{"confidence too high", `{"confidence":1.01,"summary":"s","next_step_context":""}`, false},
		{"confidence negative", `{"confidence":-1,"summary":"s","next_step_context":""}`, false},
		{"summary blank", `{"confidence":0.5,"summary":"  ","next_step_context":""}`, false},
		{"summary empty", `{"confidence":0.5,"summary":"","next_step_context":""}`, false},
		{"stop without reason", `{"confidence":0.5,"summary":"s","next_step_context":"","proceed":false}`, true},
		{"stop with blank reason", `{"confidence":0.5,"summary":"s","next_step_context":"","proceed":false,"proceed_reason":" "}`, true},
		{"proceed as number", `{"confidence":0.5,"summary":"s","next_step_context":"","proceed":1}`, false},
		{"reasoning as array", `{"confidence":0.5,"summary":"s","next_step_context":"","reasoning":[]}`, false},
		{"artifact not a string", `{"confidence":0.5,"summary":"s","next_step_context":"","artifacts":{"a":1}}`, false},
		{"not an object", `[]`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vr, err := schema.Validate(gojsonschema.NewStringLoader(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if vr.Valid() != c.ok {
				t.Errorf("schema valid = %v, want %v: %v", vr.Valid(), c.ok, vr.Errors())
			}
			if res := Parse(c.doc, ParseOptions{}); res.OK != c.ok {
				t.Errorf("Parse ok = %v, want %v: %v", res.OK, c.ok, res.Errors)
			}
		})
	}
}

func TestInstruction(t *testing.T) {
	text := ContractInstruction()
	for _, want := range []string{"exactly one JSON object", "nothing before or after it", "(llm_output)", `"next_step_context"`, "not a percentage"} {
		if !strings.Contains(text, want) {
			t.Errorf("the contract instruction lacks %q:\n%s", want, text)
		}
	}
	task := TaskAnalysisSchema()
	text = task.Instruction()
	if !strings.Contains(text, `"enum": [`) || !strings.Contains(text, "(task_analysis)") || !strings.Contains(text, "An analysis of a task") {
		t.Errorf("the task instruction misses its schema:\n%s", text)
	}
}

func TestStrictSchema(t *testing.T) {
	type Item struct {
		Name  string `json:"name"`
		Count *int   `json:"count"`
	}
	type Plan struct {
		Title string   `json:"title"`
		Note  string   `json:"note,omitempty"`
		Level string   `json:"level,omitempty" enum:"low,high"`
		Items []Item   `json:"items"`
		Tags  []string `json:"tags,omitempty"`
		Size  [2]int   `json:"size"`
	}
	raw, err := DeriveSchema[Plan]("plan", "a plan")
	if err != nil {
		t.Fatal(err)
	}
	strict, err := StrictSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(strict, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"title":       "plan",
		"description": "a plan",
		"type":        "object",
		"properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"note":  map[string]any{"type": []any{"string", "null"}},
			"level": map[string]any{"type": []any{"string", "null"}, "enum": []any{"low", "high", nil}},
			"items": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":  map[string]any{"type": "string"},
					"count": map[string]any{"type": []any{"integer", "null"}},
				},
				"required":             []any{"name", "count"},
				"additionalProperties": false,
			}},
			"tags": map[string]any{"type": []any{"array", "null"}, "items": map[string]any{"type": "string"}},
			"size": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
		},
		"required":             []any{"title", "note", "level", "items", "tags", "size"},
		"additionalProperties": false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StrictSchema\n got %s", strict)
	}

	for name, schema := range map[string]string{
		"contract": string(ContractSchemaJSON()),
		"map":      `{"type":"object","additionalProperties":{"type":"string"}}`,
		"oneOf":    `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
		"free":     `{"type":"object","properties":{"a":{"type":"object"}}}`,
	} {
		if _, err := StrictSchema(json.RawMessage(schema)); !errors.Is(err, ErrNotStrict) {
			t.Errorf("StrictSchema(%s) = %v, want ErrNotStrict", name, err)
		}
	}
	if _, err := StrictSchema(json.RawMessage(`{`)); err == nil || errors.Is(err, ErrNotStrict) {
		t.Errorf("StrictSchema of broken JSON = %v, want a read error", err)
	}
}

type recursive struct {
	Next *recursive `json:"next"`
}

type embeddedBase struct {
	ID   string `json:"id"`
	Kind string `json:"kind,omitempty"`
}

func TestDeriveSchema(t *testing.T) {
	type Sample struct {
		embeddedBase
		Name     string            `json:"name" desc:"who"`
		Hidden   string            `json:"-"`
		private  int               // unexported: skipped
		Level    int               `json:"level" enum:"1,2,3"`
		Ratio    float64           `json:"ratio,omitzero"`
		When     time.Time         `json:"when"`
		Data     []byte            `json:"data"`
		Labels   map[string]string `json:"labels"`
		Any      any               `json:"any"`
		Raw      json.RawMessage   `json:"raw"`
		Optional *bool             `json:"optional"`
		Quoted   int               `json:"quoted,string"`
		NoTag    bool
	}
	_ = Sample{}.private
	raw, err := DeriveSchema[Sample]("", "")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	wantProps := map[string]any{
		"id":       map[string]any{"type": "string"},
		"kind":     map[string]any{"type": "string"},
		"name":     map[string]any{"description": "who", "type": "string"},
		"level":    map[string]any{"type": "integer", "enum": []any{1.0, 2.0, 3.0}},
		"ratio":    map[string]any{"type": "number"},
		"when":     map[string]any{"type": "string", "format": "date-time"},
		"data":     map[string]any{"type": "string", "contentEncoding": "base64"},
		"labels":   map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"any":      map[string]any{},
		"raw":      map[string]any{},
		"optional": map[string]any{"type": "boolean"},
		"quoted":   map[string]any{"type": "string"},
		"NoTag":    map[string]any{"type": "boolean"},
	}
	if !reflect.DeepEqual(props, wantProps) {
		t.Errorf("properties\n got %#v\nwant %#v", props, wantProps)
	}
	wantReq := []any{"id", "name", "level", "when", "data", "labels", "any", "raw", "quoted", "NoTag"}
	if !reflect.DeepEqual(got["required"], wantReq) {
		t.Errorf("required = %v, want %v", got["required"], wantReq)
	}
	if _, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(raw)); err != nil {
		t.Errorf("the derived schema does not compile: %v", err)
	}

	if _, err := DeriveSchema[recursive]("", ""); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive type: %v", err)
	}
	if _, err := DeriveSchema[struct{ C chan int }]("", ""); err == nil {
		t.Error("a channel field derived a schema")
	}
	if _, err := DeriveSchema[struct {
		B bool `enum:"true"`
	}]("", ""); err == nil {
		t.Error("an enum on a bool derived a schema")
	}
	if _, err := DeriveSchema[struct {
		N int `enum:"one"`
	}]("", ""); err == nil {
		t.Error("a non-integer enum on an int derived a schema")
	}
}
