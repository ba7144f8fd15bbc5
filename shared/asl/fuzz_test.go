package asl

import (
	"os"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// marshals and parses back to the same bytes.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/all_states.asl.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	f.Add([]byte(`{"QueryLanguage":"JSONata","StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Condition":true,"Next":"C"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		out, err := Marshal(m)
		if err != nil {
			t.Fatalf("Marshal of a parsed definition: %v", err)
		}
		m2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-Parse: %v\n%s", err, out)
		}
		out2, _ := Marshal(m2)
		if string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
