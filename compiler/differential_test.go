package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"testing"

	jsonata "github.com/blues/jsonata-go"
)

// conditionDocs are the variable bindings the emitted conditions are
// evaluated over: steps present, missing, null, of the wrong type, with
// hyphenated names; each status a step function can answer.
func conditionDocs() []map[string]any {
	full := map[string]any{
		"triage":              map[string]any{"confidence": 0.9, "summary": "ok", "proceed": true, "action": "restart", "services": []any{"a", "b"}},
		"approve-remediation": map[string]any{"confidence": 1.0, "summary": "Approved", "proceed": true},
		"first-step":          map[string]any{"confidence": 0.6, "summary": "x", "proceed": true},
		"discover":            map[string]any{"confidence": 0.8, "items": []any{"x"}, "services": []any{}},
		"approve":             map[string]any{"confidence": 0.0, "summary": "Rejected"},
	}
	wrong := map[string]any{
		"triage":     map[string]any{"confidence": "high", "proceed": "yes", "action": 3},
		"first-step": map[string]any{"confidence": nil, "summary": nil},
		"approve":    "not an object",
		"discover":   map[string]any{"items": "x", "services": map[string]any{"a": 1}},
	}
	trigger := map[string]any{"severity": "critical", "labels": map[string]any{"service": "checkout-api", "team": "checkout"}}
	pipe := map[string]any{"name": "p", "vars": map[string]any{"env": "prod"}}
	var docs []map[string]any
	for _, status := range []string{"completed", "stopped", "escalated", "failed"} {
		for _, steps := range []map[string]any{full, wrong, {}} {
			doc := map[string]any{
				"states":   map[string]any{"input": map[string]any{"status": status, "output": map[string]any{"confidence": 0.5}}},
				"pipeline": pipe,
				"trigger":  trigger,
				"run":      map[string]any{"id": "run-1"},
			}
			for name, out := range steps { // one variable per step, as the state machine keeps them
				doc[stepVar(name)] = out
			}
			docs = append(docs, doc)
		}
	}
	docs = append(docs, map[string]any{"states": map[string]any{"input": map[string]any{}}, "steps": map[string]any{}, "pipeline": map[string]any{}, "trigger": map[string]any{}, "run": map[string]any{}})
	return docs
}

// emittedConditions collects every Choice condition and Map Items
// expression in the compiled examples.
func emittedConditions(t *testing.T) (conds, items []string) {
	t.Helper()
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok {
					if m := exprRE.FindStringSubmatch(s); m != nil {
						switch k {
						case "Condition":
							conds = append(conds, m[1])
						case "Items":
							items = append(items, m[1])
						}
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, def := range compileSources(t) {
		var v any
		if err := json.Unmarshal(def, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	slices.Sort(conds)
	slices.Sort(items)
	return slices.Compact(conds), slices.Compact(items)
}

// goValue binds JSON null as the Go evaluator needs it.
func goValue(v any) any {
	switch x := v.(type) {
	case nil:
		return (*any)(nil)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = goValue(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = goValue(e)
		}
		return s
	}
	return v
}

type cell struct {
	Value     any    `json:"value"`
	Undefined bool   `json:"undefined"`
	Error     string `json:"error"`
}

func evalGoCell(expr string, doc map[string]any) (c cell) {
	defer func() {
		if r := recover(); r != nil {
			c = cell{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	e, err := jsonata.Compile(expr)
	if err != nil {
		return cell{Error: err.Error()}
	}
	vars := map[string]any{}
	for k, v := range doc {
		vars[k] = goValue(v)
	}
	if err := e.RegisterVars(vars); err != nil {
		return cell{Error: err.Error()}
	}
	v, err := e.Eval(map[string]any{})
	if err == jsonata.ErrUndefined {
		return cell{Undefined: true}
	}
	if err != nil {
		return cell{Error: err.Error()}
	}
	b, _ := json.Marshal(v)
	var plain any
	_ = json.Unmarshal(b, &plain)
	return cell{Value: plain}
}

// TestEmittedConditionsAgree evaluates every condition and Items
// expression the compiler emits for the examples in both JSONata
// evaluators: they agree, and conditions are always booleans.
func TestEmittedConditionsAgree(t *testing.T) {
	conds, items := emittedConditions(t)
	if len(conds) < 10 || len(items) < 2 {
		t.Fatalf("found %d conditions and %d Items expressions", len(conds), len(items))
	}
	docs := conditionDocs()
	t.Logf("%d conditions and %d Items expressions over %d documents", len(conds), len(items), len(docs))
	all := append(append([]string{}, conds...), items...)
	goCells := make([][]cell, len(all))
	for i, e := range all {
		for _, d := range docs {
			goCells[i] = append(goCells[i], evalGoCell(e, d))
		}
	}
	for i, e := range conds {
		for j, c := range goCells[i] {
			if _, ok := c.Value.(bool); !ok {
				t.Errorf("condition %q on document %d: %+v, want a boolean", e, j, c)
			}
		}
	}
	if nodeTool(t, "jsonata") == "" {
		return
	}
	in, _ := json.Marshal(map[string]any{"expressions": all, "bindings": docs})
	cmd := exec.Command("node", "when/testdata/jsonata-eval.mjs")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference evaluator: %v", err)
	}
	var ref struct {
		Version string   `json:"version"`
		Results [][]cell `json:"results"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Version != "2.0.6" {
		t.Fatalf("reference jsonata is %s, want 2.0.6", ref.Version)
	}
	for i, e := range all {
		for j := range docs {
			g, r := goCells[i][j], ref.Results[i][j]
			if g.Error != "" || r.Error != "" || !reflect.DeepEqual(g, r) {
				t.Errorf("%q on document %d: go %+v, reference %+v", e, j, g, r)
			}
		}
	}
}
