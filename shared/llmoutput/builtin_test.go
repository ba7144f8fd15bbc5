package llmoutput

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
	"github.com/xeipuuv/gojsonschema"
)

// contractPart is the contract's part of a built-in answer.
const contractPart = `"confidence": 0.8, "summary": "Analysed", "next_step_context": ""`

// builtin is a built-in schema with its field list and its Go type.
type builtin struct {
	schema *OutputSchema
	fields []extraField
	typ    reflect.Type
}

func builtins() []builtin {
	return []builtin{
		{TaskAnalysisSchema(), taskAnalysisFields(), reflect.TypeFor[TaskAnalysis]()},
		{ErrorAnalysisSchema(), errorAnalysisFields(), reflect.TypeFor[ErrorAnalysis]()},
		{ConversationSummarySchema(), conversationSummaryFields(), reflect.TypeFor[ConversationSummary]()},
	}
}

// TestBuiltinSchemasAreTheContractAndTheirFields pins each built-in: it is
// named and described, keeps the default retries, its fields are its Go
// type's JSON names in order, and its JSON Schema is the contract's with
// those fields added and required.
func TestBuiltinSchemasAreTheContractAndTheirFields(t *testing.T) {
	for _, b := range builtins() {
		t.Run(b.schema.Name, func(t *testing.T) {
			spec := b.schema.Spec()
			if spec.Name == "" || spec.Name == ContractName || spec.Description == "" || b.schema.MaxRetries != DefaultMaxRetries {
				t.Errorf("spec %+v, retries %d", spec, b.schema.MaxRetries)
			}
			var tags, names []string
			for i := 0; i < b.typ.NumField(); i++ {
				tags = append(tags, b.typ.Field(i).Tag.Get("json"))
			}
			for _, f := range b.fields {
				names = append(names, f.name)
			}
			if !reflect.DeepEqual(tags, names) {
				t.Errorf("%v fields %v, schema fields %v", b.typ, tags, names)
			}
			if _, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(spec.JSON)); err != nil {
				t.Fatalf("the JSON Schema does not compile: %v", err)
			}
			var doc struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(spec.JSON, &doc); err != nil {
				t.Fatal(err)
			}
			if want := append([]string{keyConfidence, keySummary, keyNextStepContext}, names...); !reflect.DeepEqual(doc.Required, want) {
				t.Errorf("required = %v, want %v", doc.Required, want)
			}
			for _, k := range append([]string{keyProceed, keyReasoning, keyArtifacts}, names...) {
				if doc.Properties[k] == nil {
					t.Errorf("no property %q", k)
				}
			}
		})
	}
	if string(ContractSchema().JSON()) != string(ContractSchemaJSON()) {
		t.Error("adding fields to a built-in changed the contract's schema")
	}
}

// TestTaskAnalysis judges task analysis answers, and checks that the
// published JSON Schema agrees wherever it can say the rule (a
// placeholder it cannot).
func TestTaskAnalysis(t *testing.T) {
	task := TaskAnalysisSchema()
	schema, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(task.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		raw      string
		want     TaskAnalysis
		flags    []string
		codes    []string
		noSchema bool // the JSON Schema cannot say this rule
	}{
		{name: "valid", raw: `{` + contractPart + `, "task_type":"code","complexity":"moderate","tools_needed":["git","go"],"approach":"Write a test first"}`,
			want: TaskAnalysis{"code", "moderate", []string{"git", "go"}, "Write a test first"}, flags: []string{}},
		{name: "repaired and fenced", raw: "Sure:\n```json\n{confidence: 0.8, summary: 'Analysed', next_step_context: '', task_type: 'research', complexity: 'simple', tools_needed: [], approach: 'Search the wiki',}\n```",
			want: TaskAnalysis{"research", "simple", []string{}, "Search the wiki"}, flags: []string{"fenced", "surrounding_text", "trailing_comma", "single_quotes", "unquoted_keys"}, noSchema: true},
		{name: "enum miss", raw: `{` + contractPart + `, "task_type":"coding","complexity":"simple","tools_needed":[],"approach":"a"}`, codes: []string{"task_type:invalid_value"}},
		{name: "missing field", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":[]}`, codes: []string{"approach:missing_field"}},
		{name: "only the contract", raw: `{` + contractPart + `}`, codes: []string{"approach:missing_field", "complexity:missing_field", "task_type:missing_field", "tools_needed:missing_field"}},
		{name: "contract field missing", raw: `{"summary": "s", "next_step_context": "", "task_type":"code","complexity":"simple","tools_needed":[],"approach":"a"}`, codes: []string{"confidence:missing_field"}},
		{name: "wrong item type", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":["go", 1],"approach":"a"}`, codes: []string{"tools_needed[1]:wrong_type"}},
		{name: "list as a string", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":"go","approach":"a"}`, codes: []string{"tools_needed:wrong_type"}},
		{name: "text as a number", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":[],"approach":7}`, codes: []string{"approach:wrong_type"}},
		{name: "null on required", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":null,"approach":"a"}`, codes: []string{"tools_needed:wrong_type"}},
		{name: "placeholder", raw: `{` + contractPart + `, "task_type":"code","complexity":"simple","tools_needed":[],"approach":"..."}`, codes: []string{"approach:placeholder"}, noSchema: true},
		{name: "other extras kept", raw: `{` + contractPart + `, "task_type":"question","complexity":"simple","tools_needed":[],"approach":"a","ticket":"OPS-1"}`,
			want: TaskAnalysis{"question", "simple", []string{}, "a"}, flags: []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, res := task.Check(c.raw, ParseOptions{})
			if !c.noSchema {
				vr, err := schema.Validate(gojsonschema.NewStringLoader(c.raw))
				if err != nil {
					t.Fatal(err)
				}
				if vr.Valid() != (c.codes == nil) {
					t.Errorf("the JSON Schema says valid %v: %v", vr.Valid(), vr.Errors())
				}
			}
			if c.codes != nil {
				if res.OK || res.Outcome != Rejected || !reflect.DeepEqual(errorCodes(res.Errors), c.codes) {
					t.Fatalf("verdict %s %v, want codes %v", res.Outcome, res.Errors, c.codes)
				}
				if res.Feedback() == "" || res.Output != nil || !errors.As(res.Err(), new(*fault.InvalidOutput)) {
					t.Error("a rejection needs feedback, no output and an InvalidOutput")
				}
				return
			}
			if !res.OK {
				t.Fatalf("rejected: %v", res.Errors)
			}
			if got.Summary != "Analysed" || !reflect.DeepEqual(res.Flags, c.flags) {
				t.Errorf("got %+v flags %v, want flags %v", got, res.Flags, c.flags)
			}
			ta, err := ReadTaskAnalysis(&got)
			if err != nil || !reflect.DeepEqual(ta, c.want) {
				t.Errorf("ReadTaskAnalysis = %+v, %v; want %+v", ta, err, c.want)
			}
		})
	}
}

func TestErrorAnalysis(t *testing.T) {
	errA := ErrorAnalysisSchema()
	got, res := errA.Check(`{`+contractPart+`, "error_type":"network","root_cause":"DNS timeout","suggested_fix":"retry","can_retry":" True "}`, ParseOptions{})
	if !res.OK || !reflect.DeepEqual(res.Flags, []string{"bool_string"}) {
		t.Fatalf("can_retry as a string: %s %v %v", res.Outcome, res.Flags, res.Errors)
	}
	if raw, _ := got.Extra.Get("can_retry"); string(raw) != "true" {
		t.Errorf("can_retry kept as %s, want true", raw)
	}
	if ea, err := ReadErrorAnalysis(&got); err != nil || ea != (ErrorAnalysis{"network", "DNS timeout", "retry", true}) {
		t.Errorf("ReadErrorAnalysis = %+v, %v", ea, err)
	}
	// The flag joins the others in their fixed order.
	_, res = errA.Check("```\n{"+contractPart+`, "error_type":"logic","root_cause":"x","suggested_fix":"y","can_retry":"false",}`+"\n```", ParseOptions{})
	if !res.OK || !reflect.DeepEqual(res.Flags, []string{"fenced", "trailing_comma", "bool_string"}) {
		t.Errorf("flags = %v (%v)", res.Flags, res.Errors)
	}
	for name, c := range map[string]struct{ raw, code string }{
		"maybe":  {`{` + contractPart + `, "error_type":"network","root_cause":"x","suggested_fix":"y","can_retry":"maybe"}`, "can_retry:wrong_type"},
		"number": {`{` + contractPart + `, "error_type":"network","root_cause":"x","suggested_fix":"y","can_retry":1}`, "can_retry:wrong_type"},
	} {
		if _, res := errA.Check(c.raw, ParseOptions{}); res.OK || !reflect.DeepEqual(errorCodes(res.Errors), []string{c.code}) {
			t.Errorf("%s: %s %v", name, res.Outcome, res.Errors)
		}
	}
	if _, res := errA.Check(`{"error": "I will not analyse this"}`, ParseOptions{}); res.Outcome != Refused || !errors.As(res.Err(), new(*fault.ModelRefused)) {
		t.Errorf("error object: %s %v", res.Outcome, res.Errors)
	}
	if _, res := errA.Check(`{`+contractPart+`, "error_type":"network","root_cause":"x"`, ParseOptions{}); res.Outcome != Truncated {
		t.Errorf("cut reply: %s %v", res.Outcome, res.Errors)
	}
}

func TestConversationSummary(t *testing.T) {
	raw := `{` + contractPart + `, "key_topics":["billing"],"decisions_made":[],"action_items":["refund order 17"],"entities_mentioned":["Acme"],"overall_summary":"A refund was agreed."}`
	got, res := ConversationSummarySchema().Check(raw, ParseOptions{})
	if !res.OK {
		t.Fatal(res.Errors)
	}
	cs, err := ReadConversationSummary(&got)
	want := ConversationSummary{[]string{"billing"}, []string{}, []string{"refund order 17"}, []string{"Acme"}, "A refund was agreed."}
	if err != nil || !reflect.DeepEqual(cs, want) {
		t.Errorf("ReadConversationSummary = %+v, %v", cs, err)
	}
}

// TestReadChecks: a reader checks the fields itself (an Output from a
// store or built in Go was never judged), reads only the declared names
// (encoding/json would fill TaskType from "Task_Type" too), and leaves the
// Output unchanged.
func TestReadChecks(t *testing.T) {
	o := New(1, "s", "")
	_, err := ReadTaskAnalysis(o)
	var io *fault.InvalidOutput
	if !errors.As(err, &io) || !strings.Contains(err.Error(), "task_type: missing_field") || !strings.Contains(err.Error(), "and 1 more") {
		t.Errorf("no fields: %v", err)
	}
	if _, err := ReadTaskAnalysis(nil); !errors.As(err, &io) {
		t.Errorf("nil output: %v", err)
	}
	for _, kv := range [][2]string{{"task_type", `"code"`}, {"complexity", `"simple"`}, {"tools_needed", `[]`}, {"approach", `"a"`}, {"Task_Type", `"system_admin"`}} {
		o.Extra = append(o.Extra, Field{Name: kv[0], Value: []byte(kv[1])})
	}
	if ta, err := ReadTaskAnalysis(o); err != nil || ta.TaskType != "code" {
		t.Errorf("ReadTaskAnalysis = %+v, %v", ta, err)
	}
	e := New(1, "s", "")
	for _, kv := range [][2]string{{"error_type", `"unknown"`}, {"root_cause", `"x"`}, {"suggested_fix", `"y"`}, {"can_retry", `"false"`}} {
		e.Extra = append(e.Extra, Field{Name: kv[0], Value: []byte(kv[1])})
	}
	if ea, err := ReadErrorAnalysis(e); err != nil || ea.CanRetry {
		t.Errorf("ReadErrorAnalysis = %+v, %v", ea, err)
	}
	if raw, _ := e.Extra.Get("can_retry"); string(raw) != `"false"` {
		t.Errorf("ReadErrorAnalysis changed the output: can_retry %s", raw)
	}
}

func TestZeroSchemaRejects(t *testing.T) {
	var zero OutputSchema
	if _, res := zero.Check(`{"confidence": 1, "summary": "s", "next_step_context": ""}`, ParseOptions{}); res.OK || len(res.Errors) == 0 {
		t.Error("a zero OutputSchema judged a reply")
	}
	var nilSchema *OutputSchema
	if _, res := nilSchema.Check(`{}`, ParseOptions{}); res.OK {
		t.Error("a nil OutputSchema judged a reply")
	}
}

func TestContractSchemaCheck(t *testing.T) {
	s := ContractSchema()
	if s.Spec().Name != ContractName || string(s.JSON()) != string(ContractSchemaJSON()) || s.MaxRetries != DefaultMaxRetries {
		t.Errorf("contract schema %+v", s.Spec())
	}
	got, res := s.Check(`{"confidence": 0.5, "summary": "s", "next_step_context": "", "task_type": 7}`, ParseOptions{})
	if !res.OK || got.Summary != "s" || !got.Proceed {
		t.Errorf("got %+v %v", got, res.Errors)
	}
}
