package engine

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

type varMap map[string]any

func (m varMap) lookupVar(n string) (any, bool) { v, ok := m[n]; return v, ok }

func TestTemplates(t *testing.T) {
	states := map[string]any{"input": map[string]any{"a": 2.0, "s": "x", "arr": []any{1.0, 2.0, 3.0}}}
	vars := varMap{"run": map[string]any{"id": "r1"}, "n": 10.0}
	visible := map[string]bool{"run": true, "n": true, "unset": true}
	cases := []struct {
		name   string
		tmpl   string // JSON
		want   string // JSON; "" when an error is expected
		errHas string
	}{
		{"literal", `{"a":[1,"b",{"c":null}]}`, `{"a":[1,"b",{"c":null}]}`, ""},
		{"nested expressions", `{"x":"{% $states.input.a * $n %}","l":[1,"{% $run.id %}"]}`, `{"x":20,"l":[1,"r1"]}`, ""},
		{"whole value", `"{% {'sum': $sum($states.input.arr), 'count': $count($states.input.arr)} %}"`, `{"sum":6,"count":3}`, ""},
		{"not an expression", `"{{ liquid }} and {% partial"`, `"{{ liquid }} and {% partial"`, ""},
		{"undefined names the field", `{"p":{"q":"{% $states.input.missing %}"}}`, "", "'Args/p/q' returned nothing"},
		{"unset variable is undefined", `"{% $unset %}"`, "", "returned nothing"},
		{"type error", `"{% $states.input.s + 1 %}"`, "", "must evaluate to a number"},
		{"function result is not JSON", `"{% function($x){$x} %}"`, "", "not JSON"},
		{"partition", `"{% $partition([1,2,3,4,5], 2) %}"`, `[[1,2],[3,4],[5]]`, ""},
		{"range", `"{% $range(0, 10, 5) %}"`, `[0,5,10]`, ""},
		{"hash", `"{% $hash('abc', 'SHA-256') %}"`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`, ""},
		{"parse", `"{% $parse('{\"k\":[1]}').k %}"`, `[1]`, ""},
		{"Go slices become plain JSON", `"{% $sort($keys({'b':1,'a':2})) %}"`, `["a","b"]`, ""},
		{"match results", `"{% $match('abc', /b/).index %}"`, `1`, ""},
		{"local variables shadow state variables", `"{% ($n := 1; $n + 1) %}"`, `2`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(c.tmpl), &v); err != nil {
				t.Fatal(err)
			}
			tm, err := compileTmpl(v, "Args", visible)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := tm.eval(&evalEnv{states: states, vars: vars})
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, c.errHas)
				}
				if f := asFailure(err); f.Error != "States.QueryEvaluationError" {
					t.Errorf("error name %q", f.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("eval: %v", err)
			}
			b, _ := json.Marshal(got)
			jsonEqual(t, b, c.want)
		})
	}
}

func TestUUID(t *testing.T) {
	tm, err := compileTmpl("{% $uuid() %}", "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tm.eval(&evalEnv{})
	b, _ := tm.eval(&evalEnv{})
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !re.MatchString(a.(string)) || a == b {
		t.Errorf("uuids %v %v", a, b)
	}
}

func TestCompileErrorNamesField(t *testing.T) {
	_, err := compileTmpl(map[string]any{"k": "{% $x + %}"}, "Output", nil)
	if err == nil || !strings.Contains(err.Error(), "Output/k") {
		t.Errorf("err = %v", err)
	}
}
