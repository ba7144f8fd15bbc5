package llmoutput

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestBuiltinSchemas(t *testing.T) {
	task, errA, conv := TaskAnalysisSchema(), ErrorAnalysisSchema(), ConversationSummarySchema()
	for _, s := range []SchemaSpec{task.Spec(), errA.Spec(), conv.Spec()} {
		if !s.Strict || s.Name == "" || s.Description == "" {
			t.Errorf("spec %+v: want strict, named, described", s)
		}
		if _, err := StrictSchema(s.JSON); err != nil {
			t.Errorf("%s cannot be made strict: %v", s.Name, err)
		}
	}
	if task.MaxRetries != DefaultMaxRetries {
		t.Errorf("MaxRetries = %d, want %d", task.MaxRetries, DefaultMaxRetries)
	}

	t.Run("task analysis", func(t *testing.T) {
		cases := []struct {
			name  string
			raw   string
			want  TaskAnalysis
			flags []string
			codes []string
		}{
			{name: "valid", raw: `{"task_type":"code","complexity":"moderate","tools_needed":["git","go"],"approach":"Write a test first"}`,
				want: TaskAnalysis{"code", "moderate", []string{"git", "go"}, "Write a test first"}, flags: []string{}},
			{name: "repaired and fenced", raw: "Sure:\n```json\n{task_type: 'research', complexity: 'simple', tools_needed: [], approach: 'Search the wiki',}\n```",
				want: TaskAnalysis{"research", "simple", []string{}, "Search the wiki"}, flags: []string{"fenced", "surrounding_text", "trailing_comma", "single_quotes", "unquoted_keys"}},
			{name: "enum miss", raw: `{"task_type":"coding","complexity":"simple","tools_needed":[],"approach":"a"}`, codes: []string{"task_type:invalid_value"}},
			{name: "missing field", raw: `{"task_type":"code","complexity":"simple","tools_needed":[]}`, codes: []string{"approach:missing_field"}},
			{name: "unknown field", raw: `{"task_type":"code","complexity":"simple","tools_needed":[],"approach":"a","confidence":0.9}`, codes: []string{"confidence:unknown_field"}},
			{name: "wrong item type", raw: `{"task_type":"code","complexity":"simple","tools_needed":[1],"approach":"a"}`, codes: []string{"tools_needed[0]:wrong_type"}},
			{name: "null on required", raw: `{"task_type":"code","complexity":"simple","tools_needed":null,"approach":"a"}`, codes: []string{"tools_needed:wrong_type"}},
			{name: "placeholder", raw: `{"task_type":"code","complexity":"simple","tools_needed":[],"approach":"..."}`, codes: []string{"approach:placeholder"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, res := task.Check(c.raw, ParseOptions{})
				if c.codes != nil {
					if res.OK || !reflect.DeepEqual(errorCodes(res.Errors), c.codes) {
						t.Fatalf("verdict %s %v, want codes %v", res.Outcome, res.Errors, c.codes)
					}
					if res.Feedback() == "" || res.Output != nil {
						t.Error("a rejection needs feedback and no output")
					}
					return
				}
				if !res.OK {
					t.Fatalf("rejected: %v", res.Errors)
				}
				if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(res.Flags, c.flags) {
					t.Errorf("got %+v flags %v, want %+v flags %v", got, res.Flags, c.want, c.flags)
				}
			})
		}
	})

	t.Run("error analysis coercions", func(t *testing.T) {
		got, res := errA.Check(`{"error_type":"network","root_cause":"DNS timeout","suggested_fix":"retry","can_retry":"true"}`, ParseOptions{})
		if !res.OK || !got.CanRetry || !reflect.DeepEqual(res.Flags, []string{"bool_string"}) {
			t.Errorf("got %+v %s %v %v", got, res.Outcome, res.Flags, res.Errors)
		}
		_, res = errA.Check(`{"error_type":"network","root_cause":"x","suggested_fix":"y","can_retry":"maybe"}`, ParseOptions{})
		if res.OK || !reflect.DeepEqual(errorCodes(res.Errors), []string{"can_retry:wrong_type"}) {
			t.Errorf("can_retry maybe: %s %v", res.Outcome, res.Errors)
		}
		_, res = errA.Check(`{"error": "I will not analyse this"}`, ParseOptions{})
		if res.Outcome != Refused || res.Err() == nil {
			t.Errorf("error object: %s %v", res.Outcome, res.Errors)
		}
		_, res = errA.Check(`{"error_type":"network","root_cause":"x"`, ParseOptions{})
		if res.Outcome != Truncated {
			t.Errorf("cut reply: %s %v", res.Outcome, res.Errors)
		}
	})

	t.Run("conversation summary", func(t *testing.T) {
		raw := `{"key_topics":["billing"],"decisions_made":[],"action_items":["refund order 17"],"entities_mentioned":["Acme"],"overall_summary":"A refund was agreed."}`
		got, res := conv.Check(raw, ParseOptions{})
		want := ConversationSummary{[]string{"billing"}, []string{}, []string{"refund order 17"}, []string{"Acme"}, "A refund was agreed."}
		if !res.OK || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v %v", got, res.Errors)
		}
	})
}

func TestSchemaCoercions(t *testing.T) {
	type Detail struct {
		Port int `json:"port"`
	}
	type Answer struct {
		Count   int     `json:"count"`
		Score   float64 `json:"score"`
		Note    string  `json:"note,omitempty"`
		Detail  Detail  `json:"detail"`
		Details *Detail `json:"details,omitempty"`
	}
	s, err := NewOutputSchema[Answer]("answer", "")
	if err != nil {
		t.Fatal(err)
	}
	got, res := s.Check(`{"count": "3", "score": "0.5", "note": null, "detail": "{\"port\": \"8080\"}", "details": null}`, ParseOptions{})
	if !res.OK {
		t.Fatal(res.Errors)
	}
	if want := (Answer{Count: 3, Score: 0.5, Detail: Detail{Port: 8080}}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if want := []string{"number_string", "null_optional", "object_string"}; !reflect.DeepEqual(res.Flags, want) {
		t.Errorf("flags = %v, want %v", res.Flags, want)
	}
	_, res = s.Check(`{"count": 2.5, "score": 1, "detail": {"port": 1}}`, ParseOptions{})
	if res.OK || !reflect.DeepEqual(errorCodes(res.Errors), []string{"count:wrong_type"}) {
		t.Errorf("count 2.5: %v", res.Errors)
	}
	_, res = s.Check(`{"count": 1, "score": NaN, "detail": {"port": 1}}`, ParseOptions{})
	if res.OK || !reflect.DeepEqual(errorCodes(res.Errors), []string{"score:wrong_type"}) {
		t.Errorf("score NaN: %v", res.Errors)
	}
}

func TestNewOutputSchemaErrors(t *testing.T) {
	if _, err := NewOutputSchema[TaskAnalysis]("bad name!", ""); err == nil {
		t.Error("a bad name was accepted")
	}
	if _, err := NewOutputSchema[TaskAnalysis](strings.Repeat("a", 65), ""); err == nil {
		t.Error("a 65-character name was accepted")
	}
	if _, err := NewOutputSchemaFromJSON[TaskAnalysis]("x", "", json.RawMessage(`{"type": 7}`)); err == nil {
		t.Error("an invalid JSON Schema was accepted")
	}
	if _, err := NewOutputSchemaFromJSON[TaskAnalysis]("x", "", json.RawMessage(`[]`)); err == nil {
		t.Error("a non-object schema was accepted")
	}
	var zero OutputSchema[TaskAnalysis]
	if _, res := zero.Check(`{}`, ParseOptions{}); res.OK || len(res.Errors) == 0 {
		t.Error("a zero OutputSchema judged a reply")
	}
}

func TestContractSchemaCheck(t *testing.T) {
	s := ContractSchema()
	if s.Strict || s.Spec().Name != ContractName || string(s.JSON()) != string(ContractSchemaJSON()) {
		t.Errorf("contract schema %+v", s.Spec())
	}
	got, res := s.Check(`{"confidence": 0.5, "summary": "s", "next_step_context": ""}`, ParseOptions{})
	if !res.OK || got.Summary != "s" || !got.Proceed {
		t.Errorf("got %+v %v", got, res.Errors)
	}
}
