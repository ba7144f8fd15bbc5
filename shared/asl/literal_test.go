package asl

import (
	"strings"
	"testing"

	jsonata "github.com/blues/jsonata-go"
)

// TestLiteral: a string is written as itself exactly when it is plain, and
// otherwise as an expression that evaluates back to it, with delimiters
// only at its two ends.
func TestLiteral(t *testing.T) {
	cases := []struct {
		name  string
		s     string
		plain bool
	}{
		{"plain", "plain text", true},
		{"empty", "", false},
		{"one character", "x", true},
		{"begins with {%", "{% if x %}yes{% endif %} more", false},
		{"begins with {% without a space", "{%x", false},
		{"ends with %}", "text {% endif %}", false},
		{"ends with %} without a space", "x%}", false},
		{"begins and ends", "{% if x %}it's{% endif %}", false},
		{"{% in the middle", "a {% b %} c", true},
		{"begins with { %", "{ % x", true},
		{"ends with % }", "x % }", true},
		{"begins with {{", "{{ x }}", true},
		{"newline", "a\nb", false},
		{"ends with a newline", "a\n", false},
		{"carriage return", "a\rb", false},
		{"line separator", "a\u2028b", false},
		{"paragraph separator", "a\u2029b", false},
		{"tab", "a\tb", true},
		{"secret reference", "Bearer ${TOKEN}", true},
		{"dollars", "$$", true},
		{"quotes and backslashes", `it's "q" \ \\`, true},
		{"quote then {%", `'{%`, true},
		{"backslash and %}", `\%}`, false},
		{"control character", "a\x01b", true},
		{"only {%", "{%", false},
		{"only %}", "%}", false},
		{"{%}", "{%}", false},
		{"leading space then {%", " {% x %}", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsPlain(c.s); got != c.plain {
				t.Fatalf("IsPlain(%q) = %v, want %v", c.s, got, c.plain)
			}
			lit := Literal(c.s)
			if c.plain {
				if lit != c.s {
					t.Fatalf("Literal(%q) = %q, want it unchanged", c.s, lit)
				}
				return
			}
			body, ok := ExprBody(lit)
			if !ok || !strings.HasPrefix(lit, "{% '") || !strings.HasSuffix(lit, "' %}") {
				t.Fatalf("Literal(%q) = %q, want {%% '...' %%}", c.s, lit)
			}
			inner := lit[2 : len(lit)-2]
			if strings.Contains(inner, "{%") || strings.Contains(inner, "%}") || strings.ContainsAny(inner, "\n\r\u2028\u2029") {
				t.Fatalf("Literal(%q) = %q holds a delimiter or a line break inside", c.s, lit)
			}
			e, err := jsonata.Compile(body)
			if err != nil {
				t.Fatalf("%q does not compile: %v", body, err)
			}
			v, err := e.Eval(nil)
			if err != nil || v != c.s {
				t.Fatalf("%q evaluates to %q (%v), want %q", body, v, err, c.s)
			}
		})
	}
}

// TestQuote pins the escapes: JSONata has no \' escape, and a % next to a
// brace is escaped so that no delimiter occurs inside the literal.
func TestQuote(t *testing.T) {
	cases := []struct{ s, want string }{
		{"", `''`},
		{"it's", `'it\u0027s'`},
		{`a\b`, `'a\\b'`},
		{"a\nb\r\tc", `'a\nb\r\tc'`},
		{"{%x%}", `'{\u0025x\u0025}'`},
		{"%{%", `'%{\u0025'`},
		{"% }", `'% }'`},
		{"\u2028\u2029\x7f\x00", `'\u2028\u2029\u007f\u0000'`},
		{"é ☃ 😀", `'é ☃ 😀'`},
		{"\xff", "'\uFFFD'"},
	}
	for _, c := range cases {
		if got := Quote(c.s); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.s, got, c.want)
		}
	}
}

func TestLiteralValue(t *testing.T) {
	in := map[string]any{
		"{% key %}": "{% v %}",
		"list":      []any{"", "a", 1.5, true, nil, map[string]any{"n": "x\ny"}},
	}
	out := LiteralValue(in).(map[string]any)
	if out["{% key %}"] != Literal("{% v %}") {
		t.Errorf("value not encoded (key kept): %v", out)
	}
	list := out["list"].([]any)
	if list[0] != "{% '' %}" || list[1] != "a" || list[2] != 1.5 || list[3] != true || list[4] != nil {
		t.Errorf("list = %v", list)
	}
	if list[5].(map[string]any)["n"] != `{% 'x\ny' %}` {
		t.Errorf("nested = %v", list[5])
	}
	if in["{% key %}"] != "{% v %}" {
		t.Error("LiteralValue changed its input")
	}
}
