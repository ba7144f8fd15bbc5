package when

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	jsonata "github.com/blues/jsonata-go"
)

// referenceVersion is the jsonata npm version AWS Step Functions runs;
// package.json at the repository root pins it.
const referenceVersion = "2.0.6"

// cell is one evaluation result: a value, nothing (undefined), or an error.
type cell struct {
	Value     any    `json:"value"`
	Undefined bool   `json:"undefined"`
	Err       string `json:"error"`
}

func (c cell) String() string {
	switch {
	case c.Err != "":
		return "error(" + c.Err + ")"
	case c.Undefined:
		return "undefined"
	}
	b, _ := json.Marshal(c.Value)
	return string(b)
}

// boolean returns the cell's value when it is exactly a boolean.
func (c cell) boolean() (bool, bool) {
	if c.Err != "" || c.Undefined {
		return false, false
	}
	b, ok := c.Value.(bool)
	return b, ok
}

// testScope is the scope the tests lower with: the roots the compiler
// passes, with their real shapes.
var testScope = Scope{
	"steps":    {Expr: "$steps", Keyed: 2},
	"vars":     {Expr: "$vars", Keyed: 1},
	"labels":   {Expr: "$trigger.labels", Keyed: 1},
	"service":  {Expr: "$trigger.labels.service"},
	"severity": {Expr: "$trigger.severity"},
	"region":   {Expr: "$vars.region"},
}

// repoRoot finds the directory holding go.mod above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// requireReference skips (locally) or fails (under CI) when node or the
// pinned jsonata package is missing; it returns the node binary.
func requireReference(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		msg := why + "; run `npm ci` at the repository root to install the reference jsonata@" + referenceVersion
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH (install Node.js 20)")
	}
	pkg := filepath.Join(repoRoot(t), "node_modules", "jsonata", "package.json")
	raw, err := os.ReadFile(pkg)
	if err != nil {
		missing("node_modules/jsonata is missing")
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatalf("read %s: %v", pkg, err)
	}
	if meta.Version != referenceVersion {
		t.Fatalf("node_modules/jsonata is %s, want %s (the version Step Functions runs)", meta.Version, referenceVersion)
	}
	return node
}

// evalReference evaluates every expression against every binding set
// with the reference JSONata, in one node process.
func evalReference(t *testing.T, exprs []string, bindings []map[string]any) [][]cell {
	t.Helper()
	node := requireReference(t)
	in, err := json.Marshal(map[string]any{"expressions": exprs, "bindings": bindings})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "jsonata-eval.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jsonata-eval.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		Version string
		Results [][]cell
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode jsonata-eval.mjs output: %v", err)
	}
	if res.Version != referenceVersion {
		t.Fatalf("reference jsonata is %s, want %s", res.Version, referenceVersion)
	}
	if len(res.Results) != len(exprs) {
		t.Fatalf("jsonata-eval.mjs returned %d rows for %d expressions", len(res.Results), len(exprs))
	}
	return res.Results
}

// goJSONataValue converts decoded JSON for jsonata-go: it reads a nil
// interface as "no value", so JSON null must be bound as its own null, a
// nil *interface{}. The engine that binds $steps, $vars and $trigger must
// do the same.
func goJSONataValue(v any) any {
	switch x := v.(type) {
	case nil:
		return (*any)(nil)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = goJSONataValue(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = goJSONataValue(e)
		}
		return s
	}
	return v
}

// evalGo evaluates an expression with blues/jsonata-go, as the local
// engine will: variables bound with RegisterVars, an empty input.
func evalGo(expr string, bindings []map[string]any) []cell {
	row := make([]cell, len(bindings))
	e, err := jsonata.Compile(expr)
	if err != nil {
		for i := range row {
			row[i] = cell{Err: "compile: " + err.Error()}
		}
		return row
	}
	for i, b := range bindings {
		row[i] = evalGoOne(e, b)
	}
	return row
}

func evalGoOne(e *jsonata.Expr, b map[string]any) (c cell) {
	defer func() {
		if r := recover(); r != nil {
			c = cell{Err: fmt.Sprint("panic: ", r)}
		}
	}()
	vars := make(map[string]any, len(b))
	for k, v := range b {
		vars[k] = goJSONataValue(v)
	}
	if err := e.RegisterVars(vars); err != nil {
		return cell{Err: "register: " + err.Error()}
	}
	v, err := e.Eval(map[string]any{})
	if errors.Is(err, jsonata.ErrUndefined) {
		return cell{Undefined: true}
	}
	if err != nil {
		return cell{Err: err.Error()}
	}
	return cell{Value: v}
}

// decodeDoc decodes one JSON binding set.
func decodeDoc(t *testing.T, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatalf("bad test document %s: %v", src, err)
	}
	return m
}
