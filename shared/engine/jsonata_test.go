package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
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

// TestPlainPathsAgreeWithJSONata evaluates plain paths both by lookup and
// by JSONata over values of every kind: results and undefinedness agree,
// null included, except where blues/jsonata-go departs from jsonata 2.0.6
// (TestEmittedExpressionsAgreeWithReference checks against it): a path
// that ends at an empty array is that array, not undefined.
func TestPlainPathsAgreeWithJSONata(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(`{
		"obj": {"a": {"b": 1, "n": null, "s": "str", "arr": [1, [2, 3], {"b": 4}], "empty": [], "t": true, "o": {}}},
		"arr": [{"a": 1}, {"a": [2, 3]}, {"b": 4}],
		"one": [{"a": {"b": 5}}],
		"null": null, "str": "x", "num": 2.5, "yes": true
	}`), &doc); err != nil {
		t.Fatal(err)
	}
	vars := varMap(doc.(map[string]any))
	states := map[string]any{"input": doc, "context": map[string]any{"State": map[string]any{"RetryCount": 0.0}}}
	visible := map[string]bool{}
	for k := range vars {
		visible[k] = true
	}
	visible["unset"] = true
	paths := []string{
		"$obj", "$obj.a", "$obj.a.b", "$obj.a.n", "$obj.a.s", "$obj.a.arr", "$obj.a.empty", "$obj.a.t", "$obj.a.o",
		"$obj.a.missing", "$obj.a.b.c", "$obj.a.s.length", "$obj.a.n.x", "$obj.a.arr.b", "$obj.a.empty.x",
		"$arr", "$arr.a", "$arr.b", "$one", "$one.a", "$one.a.b", "$null", "$null.a", "$str", "$str.a", "$num",
		"$num.a", "$yes", "$yes.a", "$unset", "$unset.a",
		"$states", "$states.input.obj.a.b", "$states.input.arr.a", "$states.context.State.RetryCount", "$states.nothing",
	}
	env := &evalEnv{states: states, vars: vars}
	reference := map[string]string{"$obj.a.empty": "[]"} // what jsonata 2.0.6 reads where blues differs
	for _, src := range paths {
		t.Run(src, func(t *testing.T) {
			fast, err := compileExpr(src, "f", visible)
			if err != nil {
				t.Fatal(err)
			}
			if fast.path == nil {
				t.Fatalf("%s is not taken as a plain path", src)
			}
			slow := *fast
			slow.path = nil
			got, gotErr := fast.eval(env)
			want, wantErr := slow.eval(env)
			if ref, ok := reference[src]; ok {
				if err := json.Unmarshal([]byte(ref), &want); err != nil {
					t.Fatal(err)
				}
				wantErr = nil
			}
			if (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("lookup: %v, %v; JSONata: %v, %v", got, gotErr, want, wantErr)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("lookup %s, JSONata %s", g, w)
			}
		})
	}
	for _, src := range []string{"$obj.a[0]", "$obj.`a`", "$obj.a + 1", "$uuid", "$other.a", "$obj.a.b ", " $obj"} {
		e, err := compileExpr(src, "f", visible)
		if err != nil {
			t.Fatal(err)
		}
		if want := src == "$obj.a.b " || src == " $obj"; (e.path != nil) != want {
			t.Errorf("%q: plain path %v, want %v", src, e.path != nil, want)
		}
	}
}

func TestExprReadsContext(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"$states.input.a", false},
		{"$states.result.Payload.steps", false},
		{"$states.errorOutput", false},
		{"$states . input", false},
		{"$x + $y", false},
		{"$statesX.context", false},
		{"$states.context.State.RetryCount + 1", true},
		{"$states.input.a and $states.context.Execution.Id", true},
		{"$states", true},
		{"$string($states)", true},
		{"$states.`context`", true},
		{"$states.inputs", true},
		{"$lookup($states, 'context')", true},
	}
	for _, tt := range tests {
		if got := exprReadsContext(tt.src); got != tt.want {
			t.Errorf("exprReadsContext(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

// TestConcurrentEvaluations evaluates, from many goroutines at once,
// expressions whose functions take their argument from the context: each
// must see its own (and the race detector nothing).
func TestConcurrentEvaluations(t *testing.T) {
	tm, err := compileTmpl(map[string]any{
		"upper": "{% $states.input.name.$uppercase() %}",
		"len":   "{% $string($length($states.input.name)) %}",
	}, "Output", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := strings.Repeat(string(rune('a'+g)), g+1)
			for range 200 {
				v, err := tm.eval(&evalEnv{states: map[string]any{"input": map[string]any{"name": name}}})
				if err != nil {
					errs <- err
					return
				}
				got := v.(map[string]any)
				if got["upper"] != strings.ToUpper(name) || got["len"] != fmt.Sprint(len(name)) {
					errs <- fmt.Errorf("goroutine %d got %v", g, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestExpressionsShareCode checks that one compile parses each distinct
// expression once: strings with the same body and bound variables share
// their code, while each keeps its own field for its errors; a body bound
// to other variables (another scope) gets its own code.
func TestExpressionsShareCode(t *testing.T) {
	c := exprCache{}
	visible := map[string]bool{"run": true}
	a, err := c.compile("$states.input.n + 1", "Output", visible)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.compile("$states.input.n + 1", "Choices[0]/Condition", visible)
	if err != nil {
		t.Fatal(err)
	}
	if a.code != b.code || len(c) != 1 {
		t.Fatalf("the same body compiled twice: %p %p, %d entries", a.code, b.code, len(c))
	}
	env := &evalEnv{states: map[string]any{"input": map[string]any{}}}
	for _, e := range []*expr{a, b} {
		if _, err := e.eval(env); err == nil || !strings.Contains(err.Error(), "'"+e.field+"'") {
			t.Errorf("error %v does not name the field %q", err, e.field)
		}
	}
	other, err := c.compile("$run.id & $x", "Output", map[string]bool{"run": true, "x": true})
	if err != nil {
		t.Fatal(err)
	}
	same, err := c.compile("$run.id & $x", "Output", visible)
	if err != nil {
		t.Fatal(err)
	}
	if other.code == same.code || strings.Join(other.names, ",") != "run,x" || strings.Join(same.names, ",") != "run" {
		t.Errorf("bodies bound to different variables share code: names %v and %v", other.names, same.names)
	}
	got, err := other.eval(&evalEnv{vars: varMap{"run": map[string]any{"id": "r1"}, "x": "-2"}})
	if err != nil || got != "r1-2" {
		t.Errorf("eval = %v, %v; want r1-2", got, err)
	}
}

// TestPlainPathCompiledOnUse checks that a plain path's JSONata program is
// compiled only when a lookup meets an array, and then answers as JSONata
// does; a broken body is still refused when it is compiled, also one that
// the block around it would make whole.
func TestPlainPathCompiledOnUse(t *testing.T) {
	e, err := compileExpr("$states.input.items.id", "Output", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.path == nil || e.code.prog != nil {
		t.Fatalf("path %v, program compiled %v: want a plain path not compiled yet", e.path, e.code.prog != nil)
	}
	got, err := e.eval(&evalEnv{states: map[string]any{"input": map[string]any{"items": map[string]any{"id": "a"}}}})
	if err != nil || got != "a" || e.code.prog != nil {
		t.Fatalf("object path: %v, %v, compiled %v", got, err, e.code.prog != nil)
	}
	items := []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}
	got, err = e.eval(&evalEnv{states: map[string]any{"input": map[string]any{"items": items}}})
	if err != nil || e.code.prog == nil {
		t.Fatalf("array path: %v, compiled %v", err, e.code.prog != nil)
	}
	if g, _ := json.Marshal(got); string(g) != `["a","b"]` {
		t.Errorf("array path = %s, want [\"a\",\"b\"]", g)
	}
	for _, body := range []string{"$states.input +", "1); (2"} {
		if _, err := (exprCache{}).compile(body, "Output", nil); err == nil || !strings.Contains(err.Error(), "Output: JSONata expression") {
			t.Errorf("%q: err = %v, want it refused at its field", body, err)
		}
	}
}

// TestVarRefs: varRefs finds what the regexp \$([A-Za-z_][A-Za-z0-9_]*)
// finds, on the shapes that decide a match: a name's first character
// (letter, underscore, digit, another $), its last, and a $ at the end.
func TestVarRefs(t *testing.T) {
	re := regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	for _, src := range []string{
		"", "$", "$$", "$$a", "$a", "$_", "$9", "$a9_b.c", "$states.input", "x$y", "$a$b", "$a.$b",
		"$é", "a $zZ_09 b $", "$A", "$Z", "$a[", "'$in' & $states", "$`q`",
	} {
		var want []string
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			want = append(want, m[1])
		}
		got := slices.Collect(varRefs(src))
		if !slices.Equal(got, want) {
			t.Errorf("varRefs(%q) = %q, want %q", src, got, want)
		}
	}
}

// FuzzVarRefs checks varRefs against the regexp on any text.
func FuzzVarRefs(f *testing.F) {
	f.Add("$states.input.a & $x1 & $$y")
	re := regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	f.Fuzz(func(t *testing.T, src string) {
		var want []string
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			want = append(want, m[1])
		}
		if got := slices.Collect(varRefs(src)); !slices.Equal(got, want) {
			t.Fatalf("varRefs(%q) = %q, want %q", src, got, want)
		}
	})
}

// TestExprCompiledAtFirstEvaluation: compiling an expression checks its
// body (a bad one is refused then) and leaves the wrapped program to the
// first evaluation, which compiles it once however many runs evaluate it
// at the same time; a plain path is looked up and never compiled.
func TestExprCompiledAtFirstEvaluation(t *testing.T) {
	if _, err := compileExpr("$states.input.a +", "Output", nil); err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Fatalf("a bad body compiled: %v", err)
	}
	e, err := compileExpr("$states.input.a * $n", "Output", map[string]bool{"n": true})
	if err != nil {
		t.Fatal(err)
	}
	if e.code.prog != nil {
		t.Fatal("the wrapped program was compiled with the definition")
	}
	env := &evalEnv{states: map[string]any{"input": map[string]any{"a": 2.0}}, vars: varMap{"n": 21.0}}
	var wg sync.WaitGroup
	results := make([]any, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.eval(env)
		}()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i] != 42.0 {
			t.Fatalf("evaluation %d: %v, %v", i, results[i], errs[i])
		}
	}
	if e.code.prog == nil {
		t.Fatal("no program after evaluating")
	}
	p, err := compileExpr("$states.input.a", "Output", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.eval(env); err != nil || v != 2.0 || p.code.prog != nil {
		t.Fatalf("plain path: %v, %v, compiled %v", v, err, p.code.prog != nil)
	}
}
