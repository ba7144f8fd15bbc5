package when

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"equality", `steps.triage.action == "restart"`, `steps.triage.action == "restart"`},
		{"single quotes, no spaces", `steps.triage.action=='restart'`, `steps.triage.action == "restart"`},
		{"bracket key", `steps['first-line-triage'].summary`, `steps["first-line-triage"].summary`},
		{"bracket identifiers print dotted", `steps["triage"]["action"] != 1`, `steps.triage.action != 1`},
		{"keyword after dot", `steps.x.and == steps.x.not`, `steps.x.and == steps.x.not`},
		{"double not", `not not steps.x.ok`, `not not steps.x.ok`},
		{"not binds looser than ==", `not steps.x.a == 1`, `not steps.x.a == 1`},
		{"not over and", `not (a and b)`, `not (a and b)`},
		{"and binds tighter than or", `a or b and c`, `a or b and c`},
		{"grouped or", `(a or b) and c`, `(a or b) and c`},
		{"right-nested or keeps its parentheses", `a or (b or c)`, `a or (b or c)`},
		{"redundant parentheses", `((a)) and (b == 1)`, `a and b == 1`},
		{"is undefined", `x is undefined`, `x is not defined`},
		{"is not undefined", `x is not undefined`, `x is defined`},
		{"is None", `x is None`, `x is none`},
		{"literal spellings", `True or False or None or null`, `true or false or none or none`},
		{"negative number", `x == -1.50`, `x == -1.5`},
		{"negative with space", `x > - 2`, `x > -2`},
		{"exponent", `1e3 == x`, `1000 == x`},
		{"small exponent", `x < 1.5E-7`, `x < 1.5e-07`},
		{"list", `x in [1, 'a', none, [], [true],]`, `x in [1, "a", none, [], [true]]`},
		{"not in", `x not in ['a']`, `x not in ["a"]`},
		{"escapes", `'it\'s\n\t\x41\101\u00e9\U0001F600\q' == x`, `"it's\n\tAAé😀\\q" == x`},
		{"control characters print as escapes", "'\\x01\\x7f' == x", `"\x01\x7f" == x`},
		{"multi-line", "steps.a.ok\n  and steps.b.ok", `steps.a.ok and steps.b.ok`},
		{"is defined on literal", `1 is defined`, `1 is defined`},
		{"literal truthiness", `"x"`, `"x"`},
		{"line continuation in string", "'a\\\nb' == x", `"ab" == x`},
		{"deepest nesting", strings.Repeat("(", MaxDepth) + "x" + strings.Repeat(")", MaxDepth), `x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if got := e.String(); got != tt.want {
				t.Errorf("Parse(%q).String() = %s, want %s", tt.src, got, tt.want)
			}
			e2, err := Parse(e.String())
			if err != nil {
				t.Fatalf("Parse(%q) (re-parse): %v", e.String(), err)
			}
			if !reflect.DeepEqual(stripOffsets(e), stripOffsets(e2)) {
				t.Errorf("re-parsing %s gives a different tree", e)
			}
		})
	}
}

// stripOffsets copies a tree with every offset zeroed, to compare shapes.
func stripOffsets(e Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		return &Binary{Op: n.Op, X: stripOffsets(n.X), Y: stripOffsets(n.Y)}
	case *Not:
		return &Not{X: stripOffsets(n.X)}
	case *Test:
		return &Test{X: stripOffsets(n.X), Name: n.Name, Negated: n.Negated}
	case *Path:
		return &Path{Root: n.Root, Segments: n.Segments}
	case *Literal:
		return &Literal{Value: n.Value}
	}
	return e
}

func TestParseTree(t *testing.T) {
	e, err := Parse(`a or not b.c in ["x"] and d is none`)
	if err != nil {
		t.Fatal(err)
	}
	want := &Binary{Op: OpOr, OpOffset: 2,
		X: &Path{Root: "a", Offset: 0},
		Y: &Binary{Op: OpAnd, OpOffset: 22,
			X: &Not{Offset: 5, X: &Binary{Op: OpIn, OpOffset: 13,
				X: &Path{Root: "b", Segments: []string{"c"}, Offset: 9},
				Y: &Literal{Value: []any{"x"}, Offset: 16}}},
			Y: &Test{X: &Path{Root: "d", Offset: 26}, Name: "none", Offset: 28}}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("tree = %#v\nwant %#v", e, want)
	}
	if e.Pos() != 0 || want.Y.Pos() != 5 {
		t.Errorf("Pos: %d, %d", e.Pos(), want.Y.Pos())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		off       int
		line, col int
		msg       string
	}{
		{"empty", ``, 0, 1, 1, "empty condition"},
		{"blank", `   `, 3, 1, 4, "empty condition"},
		{"jinja braces", `{{ steps.x.ok }}`, 0, 1, 1, `write the bare expression "steps.x.ok", without {{ }}`},
		{"jinja braces later", `steps.x.ok and {{ y }}`, 15, 1, 16, `write the bare expression: when: steps.x.ok == true, without {{ }}`},
		{"jinja tag", `{% if x %}`, 0, 1, 1, "when: takes a bare expression, not a {% %} tag"},
		{"unclosed string", `steps.x == "abc`, 11, 1, 12, "unclosed string"},
		{"unclosed string after escape", `x == 'ab\`, 5, 1, 6, "unclosed string"},
		{"missing operator", `steps.x "foo"`, 8, 1, 9, `unexpected "\"foo\"", expected a comparison operator`},
		{"name after value", `steps.x foo`, 8, 1, 9, `unexpected "foo", expected a comparison operator, and, or`},
		{"not without in", `steps.x not y`, 8, 1, 9, `unexpected "not", expected a comparison operator, and, or`},
		{"single equals", `steps.x = 1`, 8, 1, 9, `unexpected "=", write == to compare`},
		{"bang", `!x`, 0, 1, 1, `unexpected "!", write not to negate`},
		{"double ampersand", `a && b`, 2, 1, 3, `unexpected "&", write and`},
		{"double bar", `a || b`, 2, 1, 3, `unexpected "||", write or`},
		{"filter", `x | length`, 2, 1, 3, "filters are not supported in when:"},
		{"arithmetic", `x + 1 > 2`, 2, 1, 3, `"+": arithmetic is not supported in when:`},
		{"hyphenated step", `steps.first-line-triage.summary`, 11, 1, 12,
			`unexpected "-" in a name: write "steps['first-line-triage']" or "steps.first_line_triage"`},
		{"hyphenated root", `first-line == 1`, 5, 1, 6, `unexpected "-": names cannot contain "-"; write "first_line"`},
		{"unclosed paren", `(a and b`, 0, 1, 1, `unclosed "("`},
		{"paren junk", `(a and b c`, 9, 1, 10, `unexpected "c", expected a comparison operator, and, or`},
		{"dangling and", `a and`, 5, 1, 6, "unexpected end of condition, expected a value"},
		{"dangling ==", `x ==`, 4, 1, 5, "unexpected end of condition, expected a value"},
		{"keyword as value", `and`, 0, 1, 1, `unexpected "and", expected a value`},
		{"chained comparison", `a == 1 == 2`, 7, 1, 8, "comparisons cannot be chained; join them with and, as in a < b and b < c"},
		{"order against none", `x < none`, 4, 1, 5, "< compares numbers or strings, not none"},
		{"order against list", `[1] >= x`, 0, 1, 1, ">= compares numbers or strings, not a list"},
		{"order literals of two types", `1 < "a"`, 2, 1, 3, "cannot order a number and a string"},
		{"number in string", `1 in "abc"`, 0, 1, 1, "only a string can be in a string, not a number"},
		{"in a number", `x in 5`, 5, 1, 6, "in needs a list or a string on its right, not a number"},
		{"not in none", `x not in none`, 9, 1, 10, "not in needs a list or a string on its right, not none"},
		{"unknown test", `x is empty`, 5, 1, 6, `unexpected "empty", expected defined, undefined or none after is`},
		{"test on a group", `(a and b) is defined`, 1, 1, 2, "is defined applies to a path or a literal"},
		{"group compared", `(a or b) == 1`, 1, 1, 2, "the left side of == must be a path or a literal"},
		{"test compared", `x == y is defined`, 5, 1, 6, "the right side of == must be a path or a literal"},
		{"index", `x[0] == 1`, 2, 1, 3, "indexing by position is not supported in when:; test membership with in instead"},
		{"dotted index", `x.0 == 1`, 2, 1, 3, "indexing by position is not supported in when:; test membership with in instead"},
		{"bracket needs a string", `x[y]`, 2, 1, 3, `unexpected "y", expected a quoted key`},
		{"unclosed bracket key", `x["a" == 1`, 6, 1, 7, `unexpected "==", expected "]"`},
		{"call", `x() == 1`, 1, 1, 2, "function calls are not supported in when:"},
		{"path in list", `x == [y]`, 6, 1, 7, "list items must be literals (strings, numbers, true, false, none or lists)"},
		{"unclosed list", `x == [1`, 5, 1, 6, `unclosed "["`},
		{"list separator", `x in [1 2]`, 8, 1, 9, `unexpected "2", expected "," or "]"`},
		{"surrogate escape", `"\ud800" == x`, 1, 1, 2, `escape "\\ud800" is a surrogate half; write the character itself or a \U escape`},
		{"named escape", `"\N{DASH}" == x`, 1, 1, 2, `\N{...} escapes are not supported; write the character itself`},
		{"short hex escape", `"\x4" == x`, 1, 1, 2, `escape "\\x4\"" needs 2 hex digits`},
		{"escape beyond unicode", `"\U00110000" == x`, 1, 1, 2, `escape "\\U00110000" is beyond unicode`},
		{"number out of range", `1e999 == x`, 0, 1, 1, `number "1e999" is out of range`},
		{"minus before a name", `-x == 1`, 0, 1, 1, `"-" applies only to a number`},
		{"object literal", `x == {}`, 5, 1, 6, `unexpected '{'`},
		{"column counts runes", `x == "é" and y "z"`, 16, 1, 16, `unexpected "\"z\"", expected a comparison operator`},
		{"second line", "a ==\n  b c", 9, 2, 5, `unexpected "c", expected and, or, or the end of the condition`},
		{"invalid UTF-8", "x == \xff", 5, 1, 6, "invalid UTF-8 encoding"},
		{"non-ASCII name", `été == 1`, 0, 1, 1, `unexpected 'é'`},
		{"too deep", strings.Repeat("(not ", 51) + "x" + strings.Repeat(")", 51), 250, 1, 251,
			"condition nests deeper than 100 levels of not and parentheses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tt.src, e)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error %T %v, want *Error", tt.src, err, err)
			}
			if perr.Offset != tt.off || perr.Line != tt.line || perr.Col != tt.col || perr.Msg != tt.msg {
				t.Errorf("Parse(%q) error = {off %d, %d:%d, %q}\nwant {off %d, %d:%d, %q}",
					tt.src, perr.Offset, perr.Line, perr.Col, perr.Msg, tt.off, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	_, err := Parse("a ==\n  b c")
	if got, want := err.Error(), `2:5: unexpected "c", expected and, or, or the end of the condition`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e := &Error{Offset: 7, Msg: "unknown name \"x\""}
	if got, want := e.Error(), `offset 7: unknown name "x"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestPosition(t *testing.T) {
	src := "ab\nçd\n"
	tests := []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {6, 2, 3}, {7, 3, 1}, {99, 3, 1}, {-4, 1, 1},
	}
	for _, tt := range tests {
		if line, col := Position(src, tt.off); line != tt.line || col != tt.col {
			t.Errorf("Position(%q, %d) = %d:%d, want %d:%d", src, tt.off, line, col, tt.line, tt.col)
		}
	}
}

func TestPaths(t *testing.T) {
	e, err := Parse(`steps.a.b == steps['c-d'].e or not vars.x is defined and 1 in service`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Path{
		{Root: "steps", Segments: []string{"a", "b"}, Offset: 0},
		{Root: "steps", Segments: []string{"c-d", "e"}, Offset: 13},
		{Root: "vars", Segments: []string{"x"}, Offset: 35},
		{Root: "service", Offset: 62},
	}
	if got := Paths(e); !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %+v\nwant %+v", got, want)
	}
	if got := Paths(&Literal{Value: true}); got != nil {
		t.Errorf("Paths(literal) = %v, want nil", got)
	}
}

func TestWalkStops(t *testing.T) {
	e, err := Parse(`(a and b) or c`)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	Walk(e, func(n Expr) bool {
		seen = append(seen, n.String())
		_, isBinary := n.(*Binary)
		return !isBinary || n == e // do not descend into a and b
	})
	want := []string{"a and b or c", "a and b", "c"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("Walk visited %q, want %q", seen, want)
	}
}

// TestClone: a clone reads the same and can be rewritten without changing
// the original.
func TestClone(t *testing.T) {
	src := "not (steps.a.b == 1 or steps.c is not defined) and vars.x in [1, 'two']"
	e, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	c := Clone(e)
	if c.String() != e.String() {
		t.Fatalf("clone reads %q, original %q", c.String(), e.String())
	}
	Walk(c, func(n Expr) bool {
		if p, ok := n.(*Path); ok {
			p.Root = "@" + p.Root
			p.Segments = append(p.Segments[:0], "z")
		}
		return true
	})
	if again, _ := Parse(src); e.String() != again.String() {
		t.Errorf("rewriting the clone changed the original: %q", e.String())
	}
	if c.String() == e.String() {
		t.Error("the rewrite did not reach the clone")
	}
}
