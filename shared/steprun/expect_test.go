package steprun

import (
	"encoding/json"
	"errors"
	"testing"

	jsonata "github.com/blues/jsonata-go"

	"github.com/stepline/stepline/compiler/when"
)

// expectEnvs are check results an expect: expression may see.
var expectEnvs = []string{
	`{"response": {"status_code": 200, "body": {"status": "healthy", "pool": 50, "tags": ["a", "b"], "none": null, "empty": [], "obj": {"k": 1}}, "headers": {"content-type": "application/json"}}}`,
	`{"response": {"status_code": 399, "body": "plain text ok", "headers": {}}}`,
	`{"response": {"status_code": 400, "body": {"pool": 10, "status": "degraded"}, "headers": {}}}`,
	`{"response": {"status_code": 503, "body": "", "headers": {}}}`,
	`{"result": "42", "exit_code": 0}`,
	`{"result": "", "exit_code": 1}`,
}

// expectCases are expressions of the when: language over those results,
// with what each gives on every env, in order.
var expectCases = []struct {
	src  string
	want [6]bool
}{
	{"response.status_code < 400", [6]bool{true, true, false, false, false, false}},
	{"response.status_code <= 399", [6]bool{true, true, false, false, false, false}},
	{"response.status_code >= 400", [6]bool{false, false, true, true, false, false}},
	{"response.status_code == 200", [6]bool{true, false, false, false, false, false}},
	{"response.status_code != 200", [6]bool{false, true, true, true, true, true}},
	{`response.body.status == "healthy"`, [6]bool{true, false, false, false, false, false}},
	{"response.body.pool >= 50", [6]bool{true, false, false, false, false, false}},
	{"response.body.pool > 10", [6]bool{true, false, false, false, false, false}},
	{"not response.body.pool > 10", [6]bool{false, false, true, false, false, false}}, // an error stays false under not
	{`"a" in response.body.tags`, [6]bool{true, false, false, false, false, false}},
	{`"ok" in response.body`, [6]bool{false, true, false, false, false, false}},
	{`"pool" in response.body`, [6]bool{true, false, true, false, false, false}},
	{"response.body.none is none", [6]bool{true, false, false, false, false, false}},
	{"response.body.none is defined", [6]bool{true, false, false, false, false, false}},
	{"response.body.missing is not defined", [6]bool{true, true, true, true, true, true}},
	{"response.body.empty", [6]bool{false, false, false, false, false, false}},
	{"response.body.obj", [6]bool{true, false, false, false, false, false}},
	{"response.body.obj.k == 1.0", [6]bool{true, false, false, false, false, false}},
	{"response.body.tags == ['a', 'b']", [6]bool{true, false, false, false, false, false}},
	{`response.headers["content-type"] == "application/json"`, [6]bool{true, false, false, false, false, false}},
	{"response.body", [6]bool{true, true, true, false, false, false}},
	{`result == "42" and exit_code == 0`, [6]bool{false, false, false, false, true, false}},
	{"exit_code == 0", [6]bool{false, false, false, false, true, false}},
	{`result > "4" or exit_code > 0`, [6]bool{false, false, false, false, true, true}},
	{"exit_code in [1, 2]", [6]bool{false, false, false, false, false, true}},
	{`result < 5`, [6]bool{false, false, false, false, false, false}}, // a string and a number do not order
}

func TestExpect(t *testing.T) {
	for _, c := range expectCases {
		x, err := parseExpect(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		for i, raw := range expectEnvs {
			var env map[string]any
			if err := json.Unmarshal([]byte(raw), &env); err != nil {
				t.Fatal(err)
			}
			if got := x.holds(env); got != c.want[i] {
				t.Errorf("%s over env %d = %v, want %v", c.src, i, got, c.want[i])
			}
		}
	}
	if _, err := parseExpect("response.status_code <"); err == nil {
		t.Error("a broken expression parses")
	}
}

// TestExpectMatchesLowering: the Go evaluation gives what the state
// machine's JSONata gives for the same expression (when.Condition,
// evaluated as the local engine evaluates it), on every case and result.
func TestExpectMatchesLowering(t *testing.T) {
	for _, c := range expectCases {
		for i, raw := range expectEnvs {
			var env map[string]any
			_ = json.Unmarshal([]byte(raw), &env)
			x, _ := parseExpect(c.src)
			if got, lowered := x.holds(env), loweredHolds(t, c.src, env, "response", "result", "exit_code"); got != lowered {
				t.Errorf("%s over env %d: Go %v, JSONata %v", c.src, i, got, lowered)
			}
		}
	}
}

// TestExpectValues: truthiness and == at each boundary between false and
// true (0, 0.0, "", [], {}, null against their non-empty neighbours; 1
// against 1.0, "1" and true; nested lists and objects), in Go and in the
// state machine's JSONata alike.
func TestExpectValues(t *testing.T) {
	const raw = `{"value": {"zero": 0, "zerof": 0.0, "one": 1, "onef": 1.0, "neg": -1, "tiny": 5e-324,
		"empty": "", "space": " ", "str0": "0", "str1": "1", "yes": true, "no": false, "null": null,
		"list": [], "list1": [0], "obj": {}, "obj1": {"k": null},
		"nested": {"a": [1, {"b": null, "c": [2.0]}]}, "deep": [1, [2.0, ["x"]]]}}`
	var env map[string]any
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		src  string
		want bool
	}{
		{"value.zero", false},
		{"value.zerof", false},
		{"value.one", true},
		{"value.neg", true},
		{"value.tiny", true},
		{"value.empty", false},
		{"value.space", true},
		{"value.str0", true},
		{"value.no", false},
		{"value.yes", true},
		{"value.null", false},
		{"value.missing", false},
		{"value.list", false},
		{"value.list1", true},
		{"value.obj", false},
		{"value.obj1", true},
		{"not value.obj", true},
		{"value.one == value.onef", true},
		{"value.one == 1.0", true},
		{"value.one == 2", false},
		{"value.zero == value.zerof", true},
		{"value.one == value.str1", false},
		{`value.str1 == "1"`, true},
		{"value.one == value.yes", false},
		{"value.zero == value.no", false},
		{"value.zero == value.null", false},
		{"value.null == none", true},
		{"value.missing == none", false},
		{"value.missing != none", true},
		{"value.empty == value.null", false},
		{"value.list == []", true},
		{"value.list == value.obj", false},
		{"value.list1 == [0.0]", true},
		{"value.list1 == [false]", false},
		{"value.nested == value.nested", true},
		{"value.nested.a == [1.0]", false},
		{`value.deep == [1.0, [2, ["x"]]]`, true},
		{`value.deep == [1, [2, ["y"]]]`, false},
		{`value.deep == [1, [2, "x"]]`, false},
		{"value.obj1 == value.obj", false},
		{"1 in value.nested.a", true},
		{`"1" in value.nested.a`, false},
		{"value.yes in value.nested.a", false},
		{"value.nested.a != value.list1", true},
	}
	for _, c := range cases {
		x, err := parseExpect(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := x.holds(env); got != c.want {
			t.Errorf("%s = %v, want %v", c.src, got, c.want)
		}
		if lowered := loweredHolds(t, c.src, env, "value"); lowered != c.want {
			t.Errorf("%s: JSONata %v, want %v", c.src, lowered, c.want)
		}
	}
}

// loweredHolds evaluates src as the state machine does: its JSONata
// lowering (when.JSONata) with the given roots read from env, as the
// local engine evaluates it.
func loweredHolds(t *testing.T, src string, env map[string]any, roots ...string) bool {
	t.Helper()
	e, err := when.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	scope := when.Scope{}
	var binds string
	for _, root := range roots {
		scope[root] = when.Root{Expr: "$" + root}
		binds += "$" + root + " := $." + root + "; "
	}
	lowered, err := when.JSONata(e, scope)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	prog, err := jsonata.Compile("(" + binds + "(" + lowered + "))")
	if err != nil {
		t.Fatalf("%s: %s: %v", src, lowered, err)
	}
	v, err := prog.Eval(jsonataNulls(env))
	if err != nil && !errors.Is(err, jsonata.ErrUndefined) {
		t.Fatalf("%s: %v", src, err)
	}
	b, ok := v.(bool)
	if !ok {
		t.Errorf("%s: JSONata gives %v, not a boolean (%s)", src, v, lowered)
	}
	return b
}

// jsonataNulls binds JSON null as blues/jsonata-go's null (a nil
// *interface{}), as the local engine does.
func jsonataNulls(v any) any {
	switch x := v.(type) {
	case nil:
		return (*any)(nil)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonataNulls(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonataNulls(e)
		}
		return out
	}
	return v
}
