package llmoutput

import (
	"strings"
	"testing"

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
