package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
)

// The compiler's golden definitions: every expression shape it emits.
const goldenGlob = "../../compiler/testdata/golden/*.asl.json"

// emitted is one JSONata expression of a compiled definition.
type emitted struct {
	body  string
	field string
	file  string
}

// emittedExpressions collects every JSONata string of the golden
// definitions (deduplicated by text) and the state machine variables they
// may read (every name an Assign sets).
func emittedExpressions(t *testing.T) ([]emitted, map[string]bool) {
	t.Helper()
	files, _ := filepath.Glob(goldenGlob)
	if len(files) == 0 {
		t.Fatalf("no definitions match %s", goldenGlob)
	}
	seen := map[string]bool{}
	visible := map[string]bool{}
	var out []emitted
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var def any
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var walk func(v any, field string)
		walk = func(v any, field string) {
			switch x := v.(type) {
			case string:
				if body, ok := asl.ExprBody(x); ok && !seen[body] {
					seen[body] = true
					out = append(out, emitted{body: body, field: field, file: filepath.Base(f)})
				}
			case map[string]any:
				for k, e := range x {
					if k == "Assign" {
						if m, ok := e.(map[string]any); ok {
							for name := range m {
								visible[name] = true
							}
						}
					}
					walk(e, field+"/"+k)
				}
			case []any:
				for _, e := range x {
					walk(e, field+"[]")
				}
			}
		}
		walk(def, "")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].body < out[j].body })
	return out, visible
}

// evalDoc is what one evaluation sees: $states and the variables, by
// kind (step_* and items_* variables take the document's step and items
// values; absent keys are unset variables).
type evalDoc struct {
	name   string
	states map[string]any
	base   bool // $pipeline, $run, $trigger, $usage are set
	last   any  // $last: absent when lastUnset
	unset  bool // $last unset (the start state)
	step   any  // every $step_* variable; absent when noSteps
	items  any  // every $items_* variable
	nosave bool // no $step_*/$items_* variables (no step ran)
}

func mustJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// undefinedDocs are the situations a run meets, with the values it holds
// there: no step ran, every step skipped, only failures, an empty fan-out,
// a Parallel with no branch result, a completed step, nulls, missing
// fields and values of the wrong type.
func undefinedDocs() []evalDoc {
	ctx := func() map[string]any {
		return mustJSON(`{
			"Execution": {"Id": "arn:aws:states:local:000000000000:execution:p:run-1", "Name": "run-1", "StartTime": "2026-11-29T12:00:00.000Z", "Input": {}},
			"State": {"Name": "s", "EnteredTime": "2026-11-29T12:00:00.000Z", "RetryCount": 0},
			"StateMachine": {"Id": "arn:aws:states:local:000000000000:stateMachine:p", "Name": "p"},
			"Task": {"Token": "stl1.tok"},
			"Map": {"Item": {"Index": 0, "Value": {"name": "a"}}}}`).(map[string]any)
	}
	states := func(input, result, errorOutput string) map[string]any {
		m := map[string]any{"context": ctx()}
		if input != "" {
			m["input"] = mustJSON(input)
		}
		if result != "" {
			m["result"] = mustJSON(result)
		}
		if errorOutput != "" {
			m["errorOutput"] = mustJSON(errorOutput)
		}
		return m
	}
	const (
		usage     = `{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}`
		failedOut = `{"confidence": 0, "summary": "ExecutorUnavailable: boom", "next_step_context": "", "failed": true}`
		okOut     = `{"confidence": 0.9, "summary": "ok", "next_step_context": "", "proceed": true, "action": "restart", "items": ["a", "b"], "services": ["x"]}`
		lambdaErr = `{"Error": "ExecutorUnavailable", "Cause": "{\"errorMessage\":\"boom\",\"errorType\":\"ExecutorUnavailable\"}"}`
	)
	failedResp := `{"status": "failed", "step": "a", "output": ` + failedOut + `, "steps": {"a": ` + failedOut + `}, "usage": ` + usage + `, "reason": "step \"a\" failed: boom"}`
	okResp := `{"status": "completed", "step": "a", "output": ` + okOut + `, "steps": {"a": ` + okOut + `, "b": ` + okOut + `}, "usage": ` + usage + `}`
	emptyJoin := `{"status": "completed", "step": "f", "output": {"confidence": 1, "summary": "No items", "next_step_context": "", "proceed": true}, "usage": ` + usage + `}`
	return []evalDoc{
		{name: "start of the run", states: states(`{"trigger": {"source": "test"}}`, "", ""), unset: true, nosave: true},
		{name: "start without a trigger", states: states(`{}`, "", ""), unset: true, nosave: true},
		{name: "no step ran", states: states(`{"trigger": {"source": "test"}}`, "", ""), base: true, nosave: true},
		{name: "every step skipped", states: states(`{"status": "completed", "output": null}`, "", ""), base: true, nosave: true},
		{name: "only failures", states: states(failedResp, `{"Payload": `+failedResp+`}`, lambdaErr), base: true,
			step: mustJSON(failedOut), items: mustJSON(`{"f/0": ` + failedOut + `}`)},
		{name: "a failure caught", states: states(`{"error": `+lambdaErr+`, "step": {"name": "a", "executor": "scripted"}}`, "", lambdaErr), base: true,
			step: mustJSON(failedOut), items: mustJSON(`{}`)},
		{name: "empty fan-out", states: states(`{"results": []}`, `{"Payload": `+emptyJoin+`}`, ""), base: true,
			last: mustJSON(okOut), step: mustJSON(`{"confidence": 1, "items": [], "services": []}`), items: mustJSON(`{}`)},
		{name: "empty parallel result", states: states(`[]`, `[]`, ""), base: true, last: mustJSON(okOut), step: mustJSON(okOut), items: mustJSON(`{}`)},
		{name: "empty Map result", states: states(`{"results": []}`, `[]`, ""), base: true, nosave: true},
		{name: "completed", states: states(okResp, `{"Payload": `+okResp+`, "Output": {"status": "completed", "output": `+okOut+`}}`, ""), base: true,
			last: mustJSON(okOut), step: mustJSON(okOut), items: mustJSON(`{"f/0": ` + okOut + `, "f/1": ` + okOut + `}`)},
		{name: "nulls", states: states(`{"status": null, "output": null, "child": null, "error": null, "results": null, "trigger": null, "step": null, "reason": null, "item": null, "index": null, "parent_run_id": null}`,
			`{"Payload": {"status": null, "output": null, "steps": null, "usage": null}, "Output": null}`, `{"Error": "States.Timeout", "Cause": null}`),
			base: true, step: nil, items: nil},
		{name: "null fields of steps", states: states(`{"status": "completed", "output": {"confidence": null}}`, `{"Payload": {"steps": {"a": null, "b": null}}}`, ""),
			base: true, step: mustJSON(`{"confidence": null, "proceed": null, "action": null, "items": null, "services": null}`), items: mustJSON(`{"f/0": null}`)},
		{name: "missing fields", states: states(`{}`, `{}`, `{}`), base: true, step: mustJSON(`{}`), items: mustJSON(`{}`)},
		{name: "wrong types", states: states(`{"status": 1, "output": [1, 2], "results": "x", "error": "e", "child": 3, "trigger": "t"}`,
			`{"Payload": {"output": "o", "steps": [], "usage": 1}, "Output": "x"}`, `{"Error": 1, "Cause": ["c"]}`),
			base: true, last: "x", step: mustJSON(`{"confidence": "high", "proceed": "yes", "action": 3, "items": "x", "services": {"a": 1}}`), items: "x"},
		{name: "input is not an object", states: states(`"text"`, `"text"`, `"text"`), base: true, step: "s", items: []any{}},
	}
}

// bindings returns the variables of d for the names the expressions read.
func (d evalDoc) bindings(names map[string]bool) map[string]any {
	vars := map[string]any{}
	for n := range names {
		switch {
		case n == "last":
			if !d.unset {
				vars[n] = d.last
			}
		case n == "pipeline", n == "run", n == "trigger", n == "usage":
			if d.base {
				vars[n] = mustJSON(map[string]string{
					"pipeline": `{"name": "p", "stage": "testing", "vars": {"env": "prod"}, "include": ["severity"]}`,
					"run":      `{"id": "run-1", "execution": "arn", "started_at": "2026-11-29T12:00:00.000Z", "parent_run_id": ""}`,
					"trigger":  `{"source": "test", "severity": "critical", "summary": "s", "labels": {"service": "api"}, "fingerprint": null}`,
					"usage":    `{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}`,
				}[n])
			}
		case strings.HasPrefix(n, "step_"):
			if !d.nosave {
				vars[n] = d.step
			}
		case strings.HasPrefix(n, "items_"):
			if !d.nosave {
				vars[n] = d.items
			}
		}
	}
	return vars
}

// refCell is one evaluation's outcome, as compiler/when/testdata's
// reference script reports it.
type refCell struct {
	Value     any    `json:"value"`
	Undefined bool   `json:"undefined"`
	Error     string `json:"error"`
}

func (c refCell) String() string {
	switch {
	case c.Error != "":
		return "error " + c.Error
	case c.Undefined:
		return "undefined"
	}
	b, _ := json.Marshal(c.Value)
	return string(b)
}

// engineCell evaluates an expression as the engine does (a plain path by
// lookup, anything else through JSONata) and reports it as a reference
// cell: undefined is a QueryEvaluationError for the engine's callers, and
// a cell of its own here.
func engineCell(e *expr, env *evalEnv) refCell {
	v, err := e.evalRaw(env)
	if err == nil {
		v, err = normalize(v)
	}
	if err != nil {
		if strings.Contains(err.Error(), "returned nothing (undefined)") {
			return refCell{Undefined: true}
		}
		return refCell{Error: err.Error()}
	}
	b, _ := json.Marshal(v)
	var plain any
	_ = json.Unmarshal(b, &plain)
	return refCell{Value: plain}
}

// TestEmittedExpressionsAgreeWithReference evaluates every JSONata
// expression the compiler emits (the golden definitions) over documents
// with undefined, missing, null and empty values, in the engine and in
// jsonata 2.0.6 (the version Step Functions runs): undefined, null and
// values agree, and so does failing.
func TestEmittedExpressionsAgreeWithReference(t *testing.T) {
	exprs, visible := emittedExpressions(t)
	docs := undefinedDocs()
	t.Logf("%d expressions over %d documents", len(exprs), len(docs))
	var bindings []map[string]any
	var envs []*evalEnv
	for _, d := range docs {
		vars := d.bindings(visible)
		envs = append(envs, &evalEnv{states: d.states, vars: varMap(vars)})
		b := map[string]any{"states": d.states}
		for k, v := range vars {
			b[k] = v
		}
		bindings = append(bindings, b)
	}
	got := make([][]refCell, len(exprs))
	for i, x := range exprs {
		e, err := compileExpr(x.body, x.field, visible)
		if err != nil {
			t.Fatalf("%s: %v", x.file, err)
		}
		for _, env := range envs {
			got[i] = append(got[i], engineCell(e, env))
		}
	}
	ref := referenceCells(t, exprs, bindings)
	if ref == nil {
		return
	}
	for i, x := range exprs {
		for j, d := range docs {
			g, r := got[i][j], ref[i][j]
			agree := (g.Error != "") == (r.Error != "") && g.Undefined == r.Undefined && reflect.DeepEqual(g.Value, r.Value)
			if !agree {
				t.Errorf("%s %s\n  %s\n  on %q: engine %s, jsonata 2.0.6 %s", x.file, x.field, x.body, d.name, g, r)
			}
		}
	}
}

// referenceCells evaluates the expressions with the pinned reference
// jsonata; nil when it is not installed (outside CI).
func referenceCells(t *testing.T, exprs []emitted, bindings []map[string]any) [][]refCell {
	t.Helper()
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "node_modules", "jsonata")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jsonata is not installed: run npm ci (make tools)")
		}
		t.Skip("jsonata is not installed: run npm ci (make tools)")
		return nil
	}
	var bodies []string
	for _, x := range exprs {
		bodies = append(bodies, x.body)
	}
	in, err := json.Marshal(map[string]any{"expressions": bodies, "bindings": bindings})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(root, "compiler", "when", "testdata", "jsonata-eval.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference evaluator: %v\n%s", err, stderr.String())
	}
	var res struct {
		Version string      `json:"version"`
		Results [][]refCell `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != "2.0.6" {
		t.Fatalf("reference jsonata is %s, want 2.0.6", res.Version)
	}
	return res.Results
}

// TestRunEndsAgree: the Succeed state that ends a completed run reads
// $last, which holds null when no step completed (every step skipped, or
// only failures under on_failure: continue); that is null in both
// evaluators, never undefined (which would fail the run).
func TestRunEndsAgree(t *testing.T) {
	exprs, visible := emittedExpressions(t)
	if !slices.ContainsFunc(exprs, func(x emitted) bool { return x.body == "$last" }) {
		t.Fatalf("no definition reads $last as its output")
	}
	cases := []struct {
		name    string
		vars    varMap
		want    any
		defined bool
	}{
		{"no step completed", varMap{"last": nil}, nil, true},
		{"a step completed", varMap{"last": map[string]any{"confidence": 0.9}}, map[string]any{"confidence": 0.9}, true},
		{"never assigned", varMap{}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := compileExpr("$last", "Output/output", visible)
			if err != nil {
				t.Fatal(err)
			}
			for _, slow := range []bool{false, true} {
				x := *e
				if slow {
					x.path = nil // through JSONata, not the plain-path lookup
				}
				v, err := x.eval(&evalEnv{vars: c.vars})
				if (err == nil) != c.defined {
					t.Fatalf("slow %v: err %v, want defined %v", slow, err, c.defined)
				}
				if c.defined && !reflect.DeepEqual(v, c.want) {
					t.Errorf("slow %v: %v, want %v", slow, v, c.want)
				}
			}
		})
	}
}
