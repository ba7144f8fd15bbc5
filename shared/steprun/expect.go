package steprun

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stepline/stepline/compiler/when"
)

// expectation is a deterministic check's expect: expression, parsed. The
// language is when:'s (package compiler/when), checked by the compiler
// against the check's names; here it is evaluated in Go over the check's
// result, with the meaning package when documents for the state
// machine's JSONata: Jinja's {% if %} under ChainableUndefined, a missing
// value undefined, an expression Jinja would raise on false.
type expectation struct {
	src  string
	expr when.Expr
}

// parseExpect parses src. An expression the compiler checked always
// parses; one that does not (a config written by hand) is an error that
// fails the check closed.
func parseExpect(src string) (expectation, error) {
	e, err := when.Parse(src)
	if err != nil {
		return expectation{}, fmt.Errorf("expect %q: %v", src, err)
	}
	return expectation{src: src, expr: e}, nil
}

// holds evaluates the expectation over env (root name → JSON value as
// encoding/json decodes it: nil, bool, float64, string, []any,
// map[string]any). A root env does not hold is undefined.
func (x expectation) holds(env map[string]any) bool {
	v, ok := evalCond(x.expr, env)
	return ok && v
}

// xvalue is a value during evaluation; defined is false for a path that
// does not resolve.
type xvalue struct {
	v       any
	defined bool
}

// evalCond is a condition's truth value, ok false where Jinja raises. An
// error propagates through not, and through and/or unless
// short-circuiting skips it.
func evalCond(e when.Expr, env map[string]any) (bool, bool) {
	switch n := e.(type) {
	case *when.Not:
		v, ok := evalCond(n.X, env)
		return !v, ok
	case *when.Binary:
		switch n.Op {
		case when.OpAnd:
			a, ok := evalCond(n.X, env)
			if !ok || !a {
				return false, ok
			}
			return evalCond(n.Y, env)
		case when.OpOr:
			a, ok := evalCond(n.X, env)
			if !ok || a {
				return a, ok
			}
			return evalCond(n.Y, env)
		}
		x, y := evalValue(n.X, env), evalValue(n.Y, env)
		switch n.Op {
		case when.OpEq:
			return x.defined && y.defined && when.Equal(x.v, y.v), true
		case when.OpNe:
			return !(x.defined && y.defined && when.Equal(x.v, y.v)), true
		case when.OpIn:
			return contains(x, y)
		case when.OpNotIn:
			v, ok := contains(x, y)
			return !v, ok
		}
		return order(n.Op, x, y)
	case *when.Test:
		x := evalValue(n.X, env)
		r := x.defined
		if n.Name == "none" {
			r = x.defined && x.v == nil
		}
		return r != n.Negated, true
	}
	x := evalValue(e, env)
	return x.defined && when.Truthy(x.v), true
}

func evalValue(e when.Expr, env map[string]any) xvalue {
	switch n := e.(type) {
	case *when.Literal:
		return xvalue{n.Value, true}
	case *when.Path:
		v, ok := env[n.Root]
		cur := xvalue{v, ok}
		for _, k := range n.Segments {
			m, isObj := cur.v.(map[string]any)
			if !cur.defined || !isObj {
				return xvalue{}
			}
			v, ok := m[k]
			cur = xvalue{v, ok}
		}
		return cur
	}
	return xvalue{} // the parser gives comparisons values only
}

// contains is "x in c": list membership, substring, object key.
func contains(x, c xvalue) (bool, bool) {
	if !c.defined {
		return false, true // iterating an undefined value yields nothing
	}
	switch cv := c.v.(type) {
	case []any:
		if !x.defined {
			return false, true
		}
		for _, e := range cv {
			if when.Equal(x.v, e) {
				return true, true
			}
		}
		return false, true
	case string:
		s, ok := x.v.(string)
		if !x.defined || !ok {
			return false, false
		}
		return strings.Contains(cv, s), true
	case map[string]any:
		if !x.defined {
			return false, true
		}
		switch k := x.v.(type) {
		case string:
			_, ok := cv[k]
			return ok, true
		case []any, map[string]any:
			return false, false // unhashable
		}
		return false, true
	}
	return false, false
}

// order is <, <=, > and >=: two numbers, or two strings by UTF-16 code
// units (as JavaScript, which Step Functions' JSONata runs on, orders
// them); anything else raises.
func order(op when.Op, x, y xvalue) (bool, bool) {
	if !x.defined || !y.defined {
		return false, false
	}
	var c int
	switch a := x.v.(type) {
	case float64:
		b, ok := y.v.(float64)
		if !ok {
			return false, false
		}
		switch {
		case a < b:
			c = -1
		case a > b:
			c = 1
		}
	case string:
		b, ok := y.v.(string)
		if !ok {
			return false, false
		}
		c = compareUTF16(a, b)
	default:
		return false, false
	}
	switch op {
	case when.OpLt:
		return c < 0, true
	case when.OpLe:
		return c <= 0, true
	case when.OpGt:
		return c > 0, true
	case when.OpGe:
		return c >= 0, true
	}
	return false, false
}

// compareUTF16 orders strings by UTF-16 code units.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if utf16Key(ra) < utf16Key(rb) {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// utf16Key sorts a rune as its first UTF-16 code unit does (a rune above
// U+FFFF as its high surrogate, below U+E000).
func utf16Key(r rune) rune {
	if r >= 0x10000 {
		return 0xd800 + (r-0x10000)>>10
	}
	return r
}
