package asl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameDecode checks that Decode returns what the encoding/json decoder
// returns for data, the same value or the same error, and reports whether
// the fast decoder read it itself.
func sameDecode(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	want, wantErr := slowDecode(data)
	got, gotErr := Decode(data)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("Decode error %v, encoding/json's %v\n%s", gotErr, wantErr, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode read\n%#v\nencoding/json\n%#v\nfrom %s", got, want, data)
	}
	m, err := fastDecode(data)
	if err == nil && !reflect.DeepEqual(m, want) {
		t.Fatalf("fastDecode read\n%#v\nencoding/json\n%#v\nfrom %s", m, want, data)
	}
	if err == nil && wantErr != nil {
		t.Fatalf("fastDecode accepted what encoding/json refuses (%v): %s", wantErr, data)
	}
	return err == nil
}

// TestDecodeMatchesEncodingJSON: every definition in the repository's
// test data, as written and as Marshal writes it, decodes to the value
// encoding/json decodes, and the fast decoder reads those Marshal wrote.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/*.json", "../../compiler/testdata/*.asl.json", "../../compiler/testdata/*/*.asl.json"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 2 {
		t.Fatalf("only %d definitions found", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sameDecode(t, b)
			m, err := slowDecode(b)
			if err != nil {
				return
			}
			out, err := Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if !sameDecode(t, out) {
				t.Errorf("the fast decoder left Marshal's output to encoding/json")
			}
		})
	}
}

// TestFastDecodeShapes: each shape the fast decoder reads or leaves to
// encoding/json decodes as encoding/json decodes it, errors included.
func TestFastDecodeShapes(t *testing.T) {
	wrap := func(state string) string {
		return `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":` + state + `}}`
	}
	cases := []struct {
		name string
		data string
		fast bool
	}{
		{"pass", wrap(`{"Type":"Pass","Output":{"a":[1,2.5,-0,1e3,true,false,null,"x"]},"End":true}`), true},
		{"type not first", wrap(`{"End":true,"Type":"Pass"}`), false},
		{"type twice, same", wrap(`{"Type":"Pass","Type":"Pass","End":true}`), false},
		{"type twice, different", wrap(`{"Type":"Pass","Type":"Succeed"}`), false},
		{"type in lower case", wrap(`{"type":"Pass","End":true}`), false},
		{"field in another case", wrap(`{"Type":"Pass","end":true}`), false},
		{"unknown field", wrap(`{"Type":"Pass","Bogus":1}`), false},
		{"unknown type", wrap(`{"Type":"Nope"}`), false},
		{"missing type", wrap(`{"End":true}`), false},
		{"repeated field", wrap(`{"Type":"Pass","Next":"A","Next":"B"}`), false},
		{"null string field", wrap(`{"Type":"Pass","Next":null,"End":true}`), false},
		{"null any field", wrap(`{"Type":"Pass","Output":null,"End":true}`), true},
		{"null assign", wrap(`{"Type":"Pass","Assign":null,"End":true}`), false},
		{"empty assign", wrap(`{"Type":"Pass","Assign":{},"End":true}`), true},
		{"repeated key in a value", wrap(`{"Type":"Pass","Output":{"a":1,"a":2},"End":true}`), true},
		{"escaped string", wrap(`{"Type":"Pass","Output":"a\"b\u00e9\ud83d\ude00\n","End":true}`), true},
		{"bad escape", wrap(`{"Type":"Pass","Output":"a\qb","End":true}`), false},
		{"lone surrogate", wrap(`{"Type":"Pass","Output":"\ud83d","End":true}`), true},
		{"invalid UTF-8", wrap("{\"Type\":\"Pass\",\"Output\":\"a\xffb\",\"End\":true}"), false},
		{"control character", wrap("{\"Type\":\"Pass\",\"Output\":\"a\tb\",\"End\":true}"), false},
		{"leading zero", wrap(`{"Type":"Pass","Output":01,"End":true}`), false},
		{"bare minus", wrap(`{"Type":"Pass","Output":-,"End":true}`), false},
		{"fraction without digits", wrap(`{"Type":"Pass","Output":1.,"End":true}`), false},
		{"exponent without digits", wrap(`{"Type":"Pass","Output":1e,"End":true}`), false},
		{"number out of range", wrap(`{"Type":"Pass","Output":1e400,"End":true}`), false},
		{"end not a boolean", wrap(`{"Type":"Pass","End":1}`), false},
		{"truncated literal", wrap(`{"Type":"Pass","End":tru}`), false},
		{"literal run on", wrap(`{"Type":"Pass","End":truex}`), false},
		{"task", wrap(`{"Type":"Task","Resource":"r","Arguments":{"x":"{% $states.input %}"},"TimeoutSeconds":30,"HeartbeatSeconds":"{% 5 %}",` +
			`"Retry":[{"ErrorEquals":["States.ALL"],"IntervalSeconds":2,"MaxAttempts":0,"BackoffRate":1.5,"MaxDelaySeconds":9,"JitterStrategy":"FULL","Comment":"c"}],` +
			`"Catch":[{"ErrorEquals":[],"Output":1,"Assign":{"v":2},"Next":"A","Comment":"c"}],"End":true}`), true},
		{"empty retry", wrap(`{"Type":"Task","Resource":"r","Retry":[],"End":true}`), true},
		{"interval with a fraction", wrap(`{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["x"],"IntervalSeconds":1.5}],"End":true}`), false},
		{"interval as exponent", wrap(`{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["x"],"IntervalSeconds":1e1}],"End":true}`), false},
		{"interval out of range", wrap(`{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["x"],"IntervalSeconds":99999999999999999999}],"End":true}`), false},
		{"interval negative zero", wrap(`{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["x"],"IntervalSeconds":-0}],"End":true}`), true},
		{"choice", wrap(`{"Type":"Choice","Choices":[{"Condition":true,"Output":1,"Assign":{"a":1},"Next":"A","Comment":"c"}],"Default":"A","Output":2,"Assign":{}}`), true},
		{"parallel", wrap(`{"Type":"Parallel","Branches":[{"Comment":"b","StartAt":"B","States":{"B":{"Type":"Succeed"}}}],"End":true}`), true},
		{"map", wrap(`{"Type":"Map","Items":[1],"ItemSelector":{"a":1},"MaxConcurrency":2,` +
			`"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE","ExecutionType":"STANDARD"},"StartAt":"M","States":{"M":{"Type":"Pass","End":true}}},"End":true}`), true},
		{"wait", wrap(`{"Type":"Wait","Seconds":1,"Timestamp":"t","Next":"A"}`), true},
		{"fail", wrap(`{"Type":"Fail","Error":"e","Cause":"c","Comment":"x","QueryLanguage":"JSONata"}`), true},
		{"state named twice", `{"StartAt":"A","States":{"A":{"Type":"Succeed"},"A":{"Type":"Succeed"}}}`, false},
		{"state with an empty name", `{"StartAt":"","States":{"":{"Type":"Succeed"}}}`, false},
		{"states null", `{"StartAt":"A","States":null}`, false},
		{"no states", `{"StartAt":"A"}`, true},
		{"version and timeout", `{"Comment":"c","StartAt":"A","TimeoutSeconds":5,"Version":"1.0","States":{}}`, true},
		{"text after", `{"StartAt":"A","States":{}} {}`, false},
		{"whitespace after", "{\"StartAt\":\"A\",\"States\":{}}\n\t ", true},
		{"empty", ``, false},
		{"truncated", `{"StartAt":"A","States":{"A":{"Type":"Succeed"`, false},
		{"deep", wrap(`{"Type":"Pass","Output":` + strings.Repeat("[", maxFastDepth+1) + strings.Repeat("]", maxFastDepth+1) + `,"End":true}`), false},
		{"deep, at the bound", wrap(`{"Type":"Pass","Output":` + strings.Repeat("[", maxFastDepth-3) + strings.Repeat("]", maxFastDepth-3) + `,"End":true}`), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameDecode(t, []byte(c.data)); got != c.fast {
				t.Errorf("read by the fast decoder: %v, want %v", got, c.fast)
			}
		})
	}
}

// FuzzDecode checks that Decode decodes whatever it is given as
// encoding/json does, and that the fast decoder accepts only what
// encoding/json accepts.
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("testdata/all_states.asl.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Output":{"a":[1,"\u00e9"]},"End":true}}}`))
	f.Add([]byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["x"],"MaxAttempts":2}],"End":true}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDecode(t, data)
	})
}
