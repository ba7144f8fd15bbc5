package engine

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Two more shapes of expression the compiler emits in every step's Task,
// evaluated without JSONata (and without its process-wide lock) when
// their values are of the kinds below; any other value goes to JSONata,
// as every other expression does:
//
//   - an object of literal keys and variables, {'s1': $step_s1, …}: the
//     earlier steps' outputs a step's templates read. A variable that is
//     not set leaves its key out and null is a value, as in jsonata 2.0.6;
//     a variable holding an array is left to JSONata (sequences).
//   - a plain path plus a whole number, $states.context.State.RetryCount
//     + 1: the Task's attempt. Only a finite number sum is taken here.
//
// In BenchmarkRun these were the two evaluations per step that went
// through JSONata: each built an environment, walked its values for nulls
// and took the lock.

// objVar is a member of an object of variables: its key and variable.
type objVar struct{ key, name string }

// pathPlus is a plain path plus a whole number.
type pathPlus struct {
	path []string
	n    float64
}

// The two shapes are read by hand (objMember, plusInt), not by regular
// expressions compiled at package level: those cost every process that
// links the engine (every command of the CLI, every Lambda cold start)
// their compile, about 0.1 ms, used or not.

// objMember reads part as one member of an object of variables, 'key':
// $name with spaces around each piece (what the regexp
// ^\s*'([A-Za-z0-9_.\-]+)'\s*:\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*$ matches,
// \s being Go's [\t\n\f\r ]); ok false when it is not one.
func objMember(part string) (key, name string, ok bool) {
	i := skipShapeSpace(part, 0)
	if i >= len(part) || part[i] != '\'' {
		return "", "", false
	}
	i++
	start := i
	for i < len(part) && isKeyByte(part[i]) {
		i++
	}
	if i == start || i >= len(part) || part[i] != '\'' {
		return "", "", false
	}
	key = part[start:i]
	i = skipShapeSpace(part, i+1)
	if i >= len(part) || part[i] != ':' {
		return "", "", false
	}
	i = skipShapeSpace(part, i+1)
	if i >= len(part) || part[i] != '$' {
		return "", "", false
	}
	name, i = shapeName(part, i+1)
	if name == "" || skipShapeSpace(part, i) != len(part) {
		return "", "", false
	}
	return key, name, true
}

// plusInt reads body as a plain path plus a whole number of one to nine
// digits, $name.field… + n with spaces around each piece (what the regexp
// ^\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\+\s*([0-9]{1,9})\s*$
// matches): the variable's name, the fields each with its leading dot,
// and the digits; ok false when it is not one.
func plusInt(body string) (name, fields, digits string, ok bool) {
	i := skipShapeSpace(body, 0)
	if i >= len(body) || body[i] != '$' {
		return "", "", "", false
	}
	name, i = shapeName(body, i+1)
	if name == "" {
		return "", "", "", false
	}
	start := i
	for i < len(body) && body[i] == '.' {
		var f string
		if f, i = shapeName(body, i+1); f == "" {
			return "", "", "", false
		}
	}
	fields = body[start:i]
	i = skipShapeSpace(body, i)
	if i >= len(body) || body[i] != '+' {
		return "", "", "", false
	}
	i = skipShapeSpace(body, i+1)
	start = i
	for i < len(body) && '0' <= body[i] && body[i] <= '9' {
		i++
	}
	if n := i - start; n < 1 || n > 9 || skipShapeSpace(body, i) != len(body) {
		return "", "", "", false
	}
	return name, fields, body[start:i], true
}

// shapeName reads a name, [A-Za-z_][A-Za-z0-9_]*, at s[i:]: the name
// ("" when none starts there) and the index after it.
func shapeName(s string, i int) (string, int) {
	if i >= len(s) || !isNameStart(s[i]) {
		return "", i
	}
	start := i
	i++
	for i < len(s) && (isNameStart(s[i]) || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	return s[start:i], i
}

// isKeyByte reports whether c may be in an object-of-variables key,
// [A-Za-z0-9_.-].
func isKeyByte(c byte) bool {
	return isNameStart(c) || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// skipShapeSpace returns the index of the first byte at or after i in s
// that is not one of Go regexp's \s: space, \t, \n, \f, \r.
func skipShapeSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	return i
}

// objectOfVars parses body as {'k': $v, …} over bound variables (not
// $states), each key once; nil when it is not one.
func objectOfVars(body string, names []string) []objVar {
	s := strings.TrimSpace(body)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil
	}
	var members []objVar
	for _, part := range strings.Split(s[1:len(s)-1], ",") {
		key, name, ok := objMember(part)
		if !ok || name == "states" || !slices.Contains(names, name) {
			return nil
		}
		for _, o := range members {
			if o.key == key {
				return nil
			}
		}
		members = append(members, objVar{key: key, name: name})
	}
	return members
}

// plusWhole parses body as a plain path plus a whole number; nil when it
// is not one.
func plusWhole(body string, names []string) *pathPlus {
	name, fields, digits, ok := plusInt(body)
	if !ok || !slices.Contains(names, name) {
		return nil
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return nil
	}
	return &pathPlus{path: append([]string{name}, strings.Split(fields, ".")[1:]...), n: float64(n)}
}

// evalShape evaluates an expression of one of the shapes above; ok is
// false when it is of none, or its values are left to JSONata.
func (e *expr) evalShape(env *evalEnv) (v any, ok bool) {
	switch {
	case e.code.obj != nil:
		out := make(map[string]any, len(e.code.obj))
		for _, m := range e.code.obj {
			if env.vars == nil {
				continue
			}
			x, defined := env.vars.lookupVar(m.name)
			if !defined {
				continue // undefined: no key
			}
			if _, isArray := x.([]any); isArray {
				return nil, false
			}
			out[m.key] = x
		}
		return out, true
	case e.code.plus != nil:
		x, defined, found := lookupPath(e.code.plus.path, env)
		f, isNum := x.(float64)
		if !found || !defined || !isNum {
			return nil, false
		}
		sum := f + e.code.plus.n
		if math.IsInf(sum, 0) || math.IsNaN(sum) {
			return nil, false
		}
		return sum, true
	}
	return nil, false
}
