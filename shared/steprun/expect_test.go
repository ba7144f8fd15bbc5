package steprun

import (
	"encoding/json"
	"errors"
	"fmt"
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
	scope := when.Scope{"response": {Expr: "$response"}, "result": {Expr: "$result"}, "exit_code": {Expr: "$exit_code"}}
	for _, c := range expectCases {
		e, err := when.Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		lowered, err := when.JSONata(e, scope)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		prog, err := jsonata.Compile("($response := $.response; $result := $.result; $exit_code := $.exit_code; (" + lowered + "))")
		if err != nil {
			t.Fatalf("%s: %s: %v", c.src, lowered, err)
		}
		for i, raw := range expectEnvs {
			var env map[string]any
			_ = json.Unmarshal([]byte(raw), &env)
			v, err := prog.Eval(jsonataNulls(env))
			if err != nil && !errors.Is(err, jsonata.ErrUndefined) {
				t.Fatalf("%s over env %d: %v", c.src, i, err)
			}
			x, _ := parseExpect(c.src)
			if got := x.holds(env); fmt.Sprint(v) != fmt.Sprint(got) {
				t.Errorf("%s over env %d: Go %v, JSONata %v (%s)", c.src, i, got, v, lowered)
			}
		}
	}
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
