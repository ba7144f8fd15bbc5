package when

import (
	"encoding/json"
	"errors"
	"testing"

	jsonata "github.com/blues/jsonata-go"
)

// FuzzParse checks that Parse never panics, that its errors point inside
// the source, that String reads back to the same String, and that what
// parses lowers to JSONata that jsonata-go compiles and evaluates to a
// boolean.
func FuzzParse(f *testing.F) {
	for _, c := range differentialCases {
		f.Add(c.when)
	}
	for _, s := range []string{
		"", "{{ x }}", "x ==", `"\ud800"`, "a.b-c", "not not (a or b) and c is not none",
		`x in [1, [2, [none]], "\x00"]`, "steps['a\\'b'].c", "x\n==\n'é'", "-1e308 < x", "x[0]",
	} {
		f.Add(s)
	}
	docs := make([]map[string]any, 0, 3)
	for _, d := range differentialDocs[:4] {
		var m map[string]any
		if err := json.Unmarshal([]byte(d.json), &m); err != nil {
			f.Fatal(err)
		}
		vars := make(map[string]any, len(m))
		for k, v := range m {
			vars[k] = goJSONataValue(v)
		}
		docs = append(docs, vars)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error %T, want *Error", src, err)
			}
			if perr.Offset < 0 || perr.Offset > len(src) || perr.Msg == "" {
				t.Fatalf("Parse(%q) error %+v outside the source", src, perr)
			}
			if line, col := Position(src, perr.Offset); line != perr.Line || col != perr.Col {
				t.Fatalf("Parse(%q) error at %d:%d, Position says %d:%d", src, perr.Line, perr.Col, line, col)
			}
			return
		}
		Walk(e, func(n Expr) bool {
			if n.Pos() < 0 || n.Pos() >= len(src) {
				t.Fatalf("Parse(%q): node %s at offset %d", src, n, n.Pos())
			}
			return true
		})
		s := e.String()
		e2, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", src, s, err)
		}
		if s2 := e2.String(); s2 != s {
			t.Fatalf("round trip of %q: %q then %q", src, s, s2)
		}
		scope := Scope{}
		for _, p := range Paths(e) {
			scope[p.Root] = Root{Expr: "$steps", Keyed: 2}
		}
		j, err := JSONata(e, scope)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || perr.Offset < 0 || perr.Offset > len(src) {
				t.Fatalf("JSONata(%s): %v", s, err)
			}
			return // a key JSONata cannot address
		}
		compiled, err := jsonata.Compile(j)
		if err != nil {
			t.Fatalf("jsonata-go cannot compile the lowering of %s: %v\n%s", s, err, j)
		}
		for i, vars := range docs {
			if err := compiled.RegisterVars(vars); err != nil {
				t.Fatal(err)
			}
			v, err := compiled.Eval(map[string]any{})
			if _, ok := v.(bool); err != nil || !ok {
				t.Fatalf("lowering of %s on document %d = %v, %v; want a boolean\n%s", s, i, v, err, j)
			}
		}
	})
}
