package engine

import (
	"math"
	"regexp"
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

var (
	objMember = regexp.MustCompile(`^\s*'([A-Za-z0-9_.\-]+)'\s*:\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	plusInt   = regexp.MustCompile(`^\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\+\s*([0-9]{1,9})\s*$`)
)

// objectOfVars parses body as {'k': $v, …} over bound variables (not
// $states), each key once; nil when it is not one.
func objectOfVars(body string, names []string) []objVar {
	s := strings.TrimSpace(body)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil
	}
	var members []objVar
	for _, part := range strings.Split(s[1:len(s)-1], ",") {
		m := objMember.FindStringSubmatch(part)
		if m == nil || m[2] == "states" || !slices.Contains(names, m[2]) {
			return nil
		}
		for _, o := range members {
			if o.key == m[1] {
				return nil
			}
		}
		members = append(members, objVar{key: m[1], name: m[2]})
	}
	return members
}

// plusWhole parses body as a plain path plus a whole number; nil when it
// is not one.
func plusWhole(body string, names []string) *pathPlus {
	m := plusInt.FindStringSubmatch(body)
	if m == nil || !slices.Contains(names, m[1]) {
		return nil
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return nil
	}
	return &pathPlus{path: append([]string{m[1]}, strings.Split(m[2], ".")[1:]...), n: float64(n)}
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
