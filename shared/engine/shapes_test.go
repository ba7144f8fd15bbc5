package engine

import (
	"reflect"
	"slices"
	"testing"
)

// testVars is a scope of variables for an evaluation.
type testVars map[string]any

func (v testVars) lookupVar(name string) (any, bool) {
	x, ok := v[name]
	return x, ok
}

// TestShapesAsJSONata evaluates the expressions shapes.go evaluates
// without JSONata both ways, over variables of every kind, and requires
// the same value or the same failure; and checks which bodies are of a
// shape at all (another spelling is left to JSONata).
func TestShapesAsJSONata(t *testing.T) {
	visible := map[string]bool{"a": true, "b": true, "n": true}
	values := []any{
		nil, // null
		"x", 2.5, float64(0), true,
		map[string]any{"summary": "done", "confidence": 0.9, "inner": []any{1.0, "two"}},
		map[string]any{},
		[]any{1.0}, []any{},
		1.7976931348623157e308,
	}
	bodies := []struct {
		body  string
		shape bool
	}{
		{"{'a': $a}", true},
		{"{ 'a' : $a , 'b-1.x': $b }", true},
		{"{'a': $a, 'a': $b}", false}, // a key twice
		{"{'a': $nope}", false},       // not a visible variable
		{"{'a': $states}", false},
		{"{\"a\": $a}", false}, // double quotes: JSONata's
		{"{'a': $a.b}", false},
		{"{}", false},
		{"$n + 1", true},
		{"$n + 0", true},
		{" $n.x.y+123456789 ", true},
		{"$states.context.State.RetryCount + 1", true},
		{"$n + 1.5", false},
		{"$n - 1", false},
		{"$n + 1234567890", false},
	}
	for _, b := range bodies {
		fast, err := compileExpr(b.body, "f", visible)
		if err != nil {
			t.Fatalf("%s: %v", b.body, err)
		}
		if got := fast.code.obj != nil || fast.code.plus != nil; got != b.shape {
			t.Errorf("%s: a shape %v, want %v", b.body, got, b.shape)
		}
		for _, av := range values {
			for _, bv := range []any{"y", nil, []any{"z"}} {
				for _, set := range []string{"ab", "a", "b", ""} {
					vars := testVars{}
					if slices.Contains([]string{"ab", "a"}, set) {
						vars["a"], vars["n"] = av, av
					}
					if slices.Contains([]string{"ab", "b"}, set) {
						vars["b"] = bv
					}
					if set == "ab" {
						vars["n"] = map[string]any{"x": map[string]any{"y": av}}
						if b.body[0] != ' ' {
							vars["n"] = av
						}
					}
					states := map[string]any{"context": map[string]any{"State": map[string]any{"RetryCount": av}}}
					slow, err := compileExpr(b.body, "f", visible)
					if err != nil {
						t.Fatal(err)
					}
					slow.code.obj, slow.code.plus = nil, nil
					env := &evalEnv{states: states, vars: vars}
					fv, ferr := fast.eval(env)
					sv, serr := slow.eval(env)
					if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(fv, sv) {
						t.Errorf("%s with %#v: got %#v (%v), JSONata %#v (%v)", b.body, vars, fv, ferr, sv, serr)
					}
				}
			}
		}
	}
}
