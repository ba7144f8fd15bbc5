package asl

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestRoundTripKeepsBytes(t *testing.T) {
	want, err := os.ReadFile("testdata/all_states.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(want)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := m.States.Names(); strings.Join(got, ",") != "Init,Call,Decide,Fan,Both,Done,Failed" {
		t.Errorf("state order = %v", got)
	}
	got, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSpace(want)) {
		t.Errorf("Marshal(Parse(x)) != x\n--- got\n%s", got)
	}
	task, _ := m.States.Get("Call")
	r := task.(*Task).Retry[0]
	if r.Attempts() != 0 || r.Interval() != 1 || r.Backoff() != 2 {
		t.Errorf("retrier = %+v", r)
	}
}

func TestMarshalOrderFollowsInsertion(t *testing.T) {
	m := &StateMachine{QueryLanguage: JSONata, StartAt: "Zeta"}
	must(t, m.States.Add("Zeta", &Task{
		Resource:       ResourceLambdaInvoke,
		Arguments:      map[string]any{"FunctionName": "f", "Payload": Expr("$states.input")},
		TimeoutSeconds: 30,
		Retry:          []Retrier{{ErrorEquals: []string{StatesALL}, MaxAttempts: Attempts(0)}},
		Next:           "Alpha",
	}))
	must(t, m.States.Add("Alpha", &Succeed{}))
	got, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "QueryLanguage": "JSONata",
  "StartAt": "Zeta",
  "States": {
    "Zeta": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Arguments": {
        "FunctionName": "f",
        "Payload": "{% $states.input %}"
      },
      "TimeoutSeconds": 30,
      "Retry": [
        {
          "ErrorEquals": [
            "States.ALL"
          ],
          "MaxAttempts": 0
        }
      ],
      "Next": "Alpha"
    },
    "Alpha": {
      "Type": "Succeed"
    }
  }
}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := m.States.Add("Alpha", &Pass{End: true}); err == nil {
		t.Error("Add accepted a duplicate name")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		def  string
		want []string // each must appear in the error
	}{
		{"missing next target", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Pass","Next":"Y"}}}`,
			[]string{`state "X": Next "Y" does not exist`}},
		{"missing StartAt", `{"QueryLanguage":"JSONata","States":{"X":{"Type":"Pass","End":true}}}`,
			[]string{`StartAt is missing`}},
		{"StartAt unknown", `{"QueryLanguage":"JSONata","StartAt":"Q","States":{"X":{"Type":"Pass","End":true}}}`,
			[]string{`StartAt "Q" does not exist`}},
		{"unreachable", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Succeed"},"Y":{"Type":"Succeed"}}}`,
			[]string{`state "Y": state is unreachable from StartAt "X"`}},
		{"jsonpath", `{"StartAt":"X","States":{"X":{"Type":"Succeed"}}}`,
			[]string{`QueryLanguage must be "JSONata"`}},
		{"unknown field", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Pass","ResultPath":"$.x","End":true}}}`,
			[]string{`state "X": unknown field "ResultPath"`}},
		{"unknown type", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Loop"}}}`,
			[]string{`state "X": unknown Type "Loop"`}},
		{"wrong type", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Task","Resource":"r","End":true,"Retry":[{"ErrorEquals":["E"],"MaxAttempts":"3"}]}}}`,
			[]string{`state "X": Retry.MaxAttempts: string is not a valid number`}},
		{"nested error names inner state", `{"QueryLanguage":"JSONata","StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Out"}}}]}}}`,
			[]string{`state "A": Next "Out" does not exist`}},
		{"next and end", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Pass","Next":"X","End":true}}}`,
			[]string{`state "X": has both Next and End`}},
		{"neither next nor end", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Wait","Seconds":1}}}`,
			[]string{`state "X": has neither Next nor End`}},
		{"states.all not last", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Task","Resource":"r","End":true,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"X"},{"ErrorEquals":["E"],"Next":"X"}]}}}`,
			[]string{`Catch[0]: a rule with States.ALL must be the last one`}},
		{"backoff below one", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Task","Resource":"r","End":true,"Retry":[{"ErrorEquals":["E"],"BackoffRate":0.5}]}}}`,
			[]string{`Retry[0].BackoffRate must be at least 1.0`}},
		{"result in arguments", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Task","Resource":"r","End":true,"Arguments":{"a":"{% $states.result %}"}}}}`,
			[]string{`Arguments: $states.result is not available here`}},
		{"inner assigns outer variable", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x":1},"Next":"M"},"M":{"Type":"Map","End":true,"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","Assign":{"x":2},"End":true}}}}}}`,
			[]string{`state "I": Assign: variable "x" is already used by an outer scope`}},
		{"reserved variable", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"states":1},"End":true}}}`,
			[]string{`variable name "states" is reserved`}},
		{"duplicate across scopes", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}]}}}`,
			[]string{`state "A": name is used by more than one state`}},
		{"wait both", `{"QueryLanguage":"JSONata","StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"Timestamp":"2024-01-01T00:00:00Z","End":true}}}`,
			[]string{`has both Seconds and Timestamp`}},
		{"timeout not integer", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Task","Resource":"r","End":true,"TimeoutSeconds":1.5}}}`,
			[]string{`TimeoutSeconds must be an integer`}},
		{"choice without condition", `{"QueryLanguage":"JSONata","StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Next":"D"}],"Default":"D"},"D":{"Type":"Succeed"}}}`,
			[]string{`Choices[0].Condition is missing`}},
		{"distributed map", `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"I","States":{"I":{"Type":"Succeed"}}}}}}`,
			[]string{`Mode "DISTRIBUTED" is not supported`}},
		{"duplicate name in object", `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":{"Type":"Succeed"},"X":{"Type":"Succeed"}}}`,
			[]string{`state "X": defined twice`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.def))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestChoiceFallThroughIsAWarning(t *testing.T) {
	def := `{"QueryLanguage":"JSONata","StartAt":"C","States":{
	  "C":{"Type":"Choice","Choices":[{"Condition":"{% $states.input.ok %}","Next":"D"}]},
	  "D":{"Type":"Succeed"}}}`
	m, err := Parse([]byte(def))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	probs := m.Check()
	if len(probs) != 1 || !probs[0].Warning || !strings.Contains(probs[0].Error(), `state "C": no Default`) {
		t.Errorf("Check = %v", probs)
	}
	// A final rule that always holds cannot fall through.
	ch, _ := m.States.Get("C")
	ch.(*Choice).Choices = append(ch.(*Choice).Choices, ChoiceRule{Condition: true, Next: "D"})
	if probs := m.Check(); len(probs) != 0 {
		t.Errorf("Check = %v", probs)
	}
}

func TestMatches(t *testing.T) {
	cases := []struct {
		equals []string
		err    string
		want   bool
	}{
		{[]string{"A", "B"}, "B", true},
		{[]string{"A"}, "B", false},
		{[]string{StatesALL}, "Anything", true},
		{[]string{StatesALL}, StatesRuntime, false},
		{[]string{StatesALL}, StatesTimeout, true},
		{[]string{StatesTaskFailed}, "ExecutorTimeout", true},
		{[]string{StatesTaskFailed}, StatesTimeout, false},
	}
	for _, c := range cases {
		if got := Matches(c.equals, c.err); got != c.want {
			t.Errorf("Matches(%v, %q) = %v", c.equals, c.err, got)
		}
	}
}

func TestExprHelpers(t *testing.T) {
	if Expr("$x + 1") != "{% $x + 1 %}" {
		t.Error("Expr")
	}
	if b, ok := ExprBody("{%  $x %}"); !ok || b != "$x" {
		t.Errorf("ExprBody = %q %v", b, ok)
	}
	if _, ok := ExprBody("{{ liquid }}"); ok {
		t.Error("ExprBody accepted a non-expression")
	}
	if Literal("plain") != "plain" {
		t.Error("Literal changed a plain string")
	}
	lit := Literal(`{% raw "q" %}`)
	if lit != `{% '{\u0025 raw "q" \u0025}' %}` {
		t.Errorf("Literal = %s", lit)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDecodeShapes checks that the shortcut reading a state's leading
// Type and the full decode agree, and what Decode refuses that
// json.Unmarshal refused before it.
func TestDecodeShapes(t *testing.T) {
	const pre, post = `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":`, `}}`
	same := []string{
		`{"Type":"Succeed"}`,                  // the shortcut
		"{ \n\t\"Type\" :\r \"Succeed\" }",    // the shortcut through whitespace
		`{"Comment":"c","Type":"Succeed"}`,    // Type not first: the full decode
		`{"type":"Succeed"}`,                  // another case: encoding/json matches it
		`{"Type":"Succ\u0065ed"}`,             // an escape: the full decode
		`{"Type":"Succeed","Type":"Succeed"}`, // the same Type twice
		`{"Type":"Succeed","Comment":"\"Type\""}`,
	}
	for _, st := range same {
		m, err := Decode([]byte(pre + st + post))
		if err != nil {
			t.Errorf("%s: %v", st, err)
			continue
		}
		if x, _ := m.States.Get("X"); !isSucceed(x) {
			t.Errorf("%s: decoded %T", st, x)
		}
	}
	refused := []struct{ def, want string }{
		{pre + `{"Type":"Succeed","Type":"Pass"}` + post, `state "X": two Types given, "Succeed" and "Pass"`},
		{pre + `{"Type":"Succeed","type":"Fail"}` + post, `two Types given, "Succeed" and "Fail"`},
		{pre + `{"Type":"Succeed"}` + post + `{}`, "invalid JSON after the definition"},
		{pre + `{"Type":"Succeed"}` + post + ` x`, "invalid JSON after the definition"},
		{``, "empty definition"},
		{`   `, "empty definition"},
		{pre + `{"Type":"Succeed"`, "unexpected EOF"},
		{pre + `{"Type":"Nope"}` + post, `unknown Type "Nope"`},
		{pre + `{"Type":""}` + post, "missing Type"},
		{pre + `{"Comment":"c"}` + post, "missing Type"},
		{pre + `{"Type":7}` + post, "Type: number is not a valid string"},
	}
	for _, c := range refused {
		_, err := Decode([]byte(c.def))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want an error with %q", c.def, err, c.want)
		}
	}
	// Trailing whitespace is not more JSON.
	if _, err := Decode([]byte(pre + `{"Type":"Succeed"}` + post + " \n")); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

// TestMarshalIsEncodingJSON pins Marshal's bytes to encoding/json's
// output for the machine's MarshalJSON, indented: the definition hash the
// engine keeps in snapshots depends on them.
func TestMarshalIsEncodingJSON(t *testing.T) {
	src, err := os.ReadFile("testdata/all_states.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	if want := bytes.TrimRight(b.Bytes(), "\n"); !bytes.Equal(got, want) {
		t.Errorf("Marshal differs from encoding/json:\n%s\nwant\n%s", got, want)
	}
}

func isSucceed(s State) bool { _, ok := s.(*Succeed); return ok }
