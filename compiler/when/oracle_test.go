package when

import (
	"strings"
)

// The oracle evaluates a condition directly over decoded JSON with the
// semantics doc.go specifies (Jinja2 with ChainableUndefined, an error
// counting as false). It shares no code with the lowering, so the
// differential tests check the JSONata against an independent reading of
// the rules.

type ovalue struct {
	v       any
	defined bool
}

// oracleEnv resolves each scope root to its value in a binding set.
func oracleEnv(s Scope, bindings map[string]any) map[string]ovalue {
	env := make(map[string]ovalue, len(s))
	for name, r := range s {
		ri, err := parseRoot(r.Expr)
		if err != nil {
			continue
		}
		v, ok := bindings[ri.base[1:]]
		cur := ovalue{v, ok}
		for _, k := range ri.keys {
			cur = oracleField(cur, k)
		}
		env[name] = cur
	}
	return env
}

func oracleField(cur ovalue, key string) ovalue {
	if m, ok := cur.v.(map[string]any); ok && cur.defined {
		v, ok := m[key]
		return ovalue{v, ok}
	}
	return ovalue{}
}

// oracle returns the condition's result: Jinja's truth value, or false
// where Jinja raises.
func oracle(e Expr, env map[string]ovalue) bool {
	v, ok := oracleCond(e, env)
	return ok && v
}

// oracleCond returns (value, true), or (_, false) for a Jinja error.
func oracleCond(e Expr, env map[string]ovalue) (bool, bool) {
	switch n := e.(type) {
	case *Not:
		v, ok := oracleCond(n.X, env)
		return !v, ok
	case *Binary:
		switch n.Op {
		case OpAnd:
			a, ok := oracleCond(n.X, env)
			if !ok || !a {
				return false, ok
			}
			return oracleCond(n.Y, env)
		case OpOr:
			a, ok := oracleCond(n.X, env)
			if !ok || a {
				return a, ok
			}
			return oracleCond(n.Y, env)
		}
		x, y := oracleValue(n.X, env), oracleValue(n.Y, env)
		switch n.Op {
		case OpEq:
			return x.defined && y.defined && oracleEqual(x.v, y.v), true
		case OpNe:
			return !(x.defined && y.defined && oracleEqual(x.v, y.v)), true
		case OpIn:
			return oracleIn(x, y)
		case OpNotIn:
			v, ok := oracleIn(x, y)
			return !v, ok
		}
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
			if a < b {
				c = -1
			} else if a > b {
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
		switch n.Op {
		case OpLt:
			return c < 0, true
		case OpLe:
			return c <= 0, true
		case OpGt:
			return c > 0, true
		}
		return c >= 0, true
	case *Test:
		x := oracleValue(n.X, env)
		r := x.defined
		if n.Name == "none" {
			r = x.defined && x.v == nil
		}
		return r != n.Negated, true
	}
	x := oracleValue(e, env)
	return x.defined && oracleTruthy(x.v), true
}

func oracleValue(e Expr, env map[string]ovalue) ovalue {
	switch n := e.(type) {
	case *Literal:
		return ovalue{n.Value, true}
	case *Path:
		cur := env[n.Root]
		for _, s := range n.Segments {
			cur = oracleField(cur, s)
		}
		return cur
	}
	panic("oracle: not a value")
}

func oracleTruthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

func oracleEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !oracleEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !oracleEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// oracleIn is Python's "x in c" over JSON values.
func oracleIn(x, c ovalue) (bool, bool) {
	if !c.defined {
		return false, true // iterating an undefined value yields nothing
	}
	switch cv := c.v.(type) {
	case []any:
		if !x.defined {
			return false, true
		}
		for _, e := range cv {
			if oracleEqual(x.v, e) {
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
