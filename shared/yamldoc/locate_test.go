package yamldoc

import (
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// TestSyntaxError: a syntax error is placed at the character whose
// reading breaks the document, where the YAML library names the line
// before the enclosing block (the first case: "line 2").
func TestSyntaxError(t *testing.T) {
	const head = "name: p\nsteps:\n"
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"key indented under a flow value", head + "  - name: a\n    verifier:\n      executor: x\n    executor_config: {model: m}\n      combination_strategy: veto\n", 7, 7, "did not find expected key"},
		{"list item indented into a mapping", head + "  - name: a\n    executor: x\n   - name: b\n", 5, 4, "did not find expected '-' indicator"},
		{"tab indentation", head + "  - name: a\n\texecutor: x\n", 4, 1, "found a tab character that violates indentation"},
		{"colon in a plain value", head + "  - name: a\n    prompt_template: Summary: x\n", 4, 29, "mapping values are not allowed in this context"},
		{"unclosed quote after a multi-byte character", head + "  - name: é\n    prompt_template: \"x\n", 4, 22, "found unexpected end of stream"},
		{"unclosed flow sequence", head + "  - [a, b\n", 3, 6, "did not find expected ',' or ']'"},
		{"first line", "name: [x\n", 1, 8, "did not find expected ',' or ']'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src))
			if err == nil {
				t.Fatal("parsed")
			}
			wantError(t, SyntaxError([]byte(c.src), err), c.line, c.col, c.msg)
		})
	}
}

// TestSyntaxErrorBound: a syntax error is searched for in a source of up
// to MaxLocateBytes; a larger one keeps the line the YAML library names.
func TestSyntaxErrorBound(t *testing.T) {
	const tail = "name: p\nsteps:\n  - name: a\n    executor: x\n   - name: b\n"
	for _, c := range []struct {
		size, line, col int
	}{
		{MaxLocateBytes - 1, 6, 4},
		{MaxLocateBytes, 6, 4},
		{MaxLocateBytes + 1, 3, 1}, // the library's: the line before the list item's
	} {
		src := []byte("#" + strings.Repeat("x", c.size-len(tail)-2) + "\n" + tail)
		if len(src) != c.size {
			t.Fatalf("source of %d bytes, want %d", len(src), c.size)
		}
		_, err := Parse(src)
		if err == nil {
			t.Fatal("parsed")
		}
		wantError(t, SyntaxError(src, err), c.line, c.col, "did not find expected '-' indicator")
	}
}

// TestSyntaxErrorKeepsBoundError: a bound crossed is its own position.
func TestSyntaxErrorKeepsBoundError(t *testing.T) {
	want := &Error{Line: 3, Column: 4, Msg: "x"}
	if got := SyntaxError(nil, want); got != want {
		t.Errorf("SyntaxError = %v, want %v", got, want)
	}
}

// TestParseSingle: a source of one document, with or without markers
// and an empty document after it, parses as Parse parses it; a second
// document is refused at its start, and one that is not YAML where it
// breaks.
func TestParseSingle(t *testing.T) {
	for _, c := range []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"one", "a: 1\n", 0, 0, ""},
		{"markers", "---\na: 1\n...\n", 0, 0, ""},
		{"empty", "", 0, 0, ""},
		{"comments only", "# nothing\n", 0, 0, ""},
		{"a trailing empty document", "a: 1\n---\n# nothing\n", 0, 0, ""},
		{"a second document", "a: 1\n---\nb: 2\n", 2, 1, "a second YAML document starts here"},
		{"a second scalar document", "a: 1\n--- x\n", 2, 1, "a second YAML document starts here"},
		{"a second document that is not YAML", "a: 1\n---\nb: [2\n", 3, 5, "did not find expected ',' or ']'"},
		{"a first document that is not YAML", "a: [1\n---\nb: 2\n", 1, 5, "did not find expected ',' or ']'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSingle([]byte(c.src))
			if c.msg == "" {
				want, werr := Parse([]byte(c.src))
				if err != nil || werr != nil {
					t.Fatalf("ParseSingle: %v; Parse: %v", err, werr)
				}
				if len(got.Content) != len(want.Content) || got.Kind != want.Kind {
					t.Errorf("ParseSingle gives %+v, Parse %+v", got, want)
				}
				return
			}
			if err == nil {
				t.Fatal("parsed")
			}
			wantError(t, SyntaxError([]byte(c.src), err), c.line, c.col, c.msg)
		})
	}
	if _, err := ParseSingle(yamldoctest.Laughs(9, 9)); err == nil || !strings.Contains(err.Error(), "expands the document past") {
		t.Errorf("the bounds: %v", err)
	}
}
