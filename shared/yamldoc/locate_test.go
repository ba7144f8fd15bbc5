package yamldoc

import (
	"strings"
	"testing"
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
