package asl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// sameIndent checks indent against json.Indent on src compacted.
func sameIndent(t *testing.T, src []byte) {
	t.Helper()
	var compact, want bytes.Buffer
	if err := json.Compact(&compact, src); err != nil {
		return // indent is only given valid JSON
	}
	if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	if got := indent(compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("indent of %s:\n%s\njson.Indent:\n%s", compact.Bytes(), got, want.Bytes())
	}
}

// TestIndentMatchesJSONIndent: Marshal's indentation is json.Indent's,
// byte for byte, on every definition of the test data and on the shapes
// that decide it (empty and nested containers, escaped quotes and
// backslashes before a string's end, punctuation inside strings).
func TestIndentMatchesJSONIndent(t *testing.T) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":{}}`, `{"a":[]}`, `[[],{},[{}]]`, `{"a":[1,2,{"b":null}],"c":"d"}`,
		`"x"`, `1`, `true`, `null`, `"\\"`, `{"a\"":"\\\""}`, `{"{[,:]}":"{[,:]}"}`,
		`{"a":[[[[1]]]],"b":{"c":{"d":-1.5e3}}}`, `["\u2028","é"]`,
	} {
		sameIndent(t, []byte(s))
	}
	files, _ := filepath.Glob("../../compiler/testdata/*.asl.json")
	files = append(files, "testdata/all_states.asl.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sameIndent(t, b)
		m, err := slowDecode(b)
		if err != nil {
			continue
		}
		got, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		compact, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "", "  "); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: Marshal differs from json.Indent of MarshalJSON", f)
		}
	}
}

// FuzzIndent checks indent against json.Indent on any valid JSON.
func FuzzIndent(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c\"d"},[]],"e":{}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		sameIndent(t, src)
	})
}
