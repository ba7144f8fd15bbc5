package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// The property test of the string encoding: pipelines whose every string
// field begins and ends with what JSONata, Liquid, JSON, YAML and
// CloudFormation read specially compile to definitions that the pinned
// asl-validator accepts, and every string reads back, in the reference
// jsonata@2.0.6 and in the Go evaluator the local engine runs, as the
// text the author wrote.

// rawEdges begin and end the free strings (vars, descriptions, on_abort,
// notification configs, when: literals, fan_out lists).
var rawEdges = []string{"", "{%", "%}", "{% ", " %}", "{{", "}}", "$", "$$", "${", "${X}", "'", `"`, `\`, `\\`, "\n", "\r\n", "\u2028", "\u2029", "{%}", "%}{%", "\t", "`", "{% '", "' %}"}

// Liquid fields (prompts, executor configs, failure webhooks, notification
// templates) must parse, so their edges are Liquid that does.
var (
	templatePrefixes = []string{"", "{% if true %}a{% endif %}", "{%- if true -%}a{%- endif -%}", "{{ 'a' }}", "{{- 'a' -}}", "{% raw %}{%{% endraw %}", "%}", "}}", "$", "$$", "${X}", "'", `"`, `\`, "\n", "\r\n", "\u2028", "%}{% if true %}{% endif %}", "{% comment %}%}{% endcomment %}"}
	templateSuffixes = []string{"", "{% if true %}a{% endif %}", "{{ 'a' }}", "{% comment %}x{% endcomment %}", "%}", "}}", "$", "$$", "${", "'", `"`, `\`, "\n", "\u2029", "{% raw %}{{{% endraw %}", " %}"}
)

func edgeStrings(prefixes, suffixes []string, cores ...string) []string {
	var out []string
	for _, p := range prefixes {
		for _, s := range suffixes {
			for _, c := range cores {
				if x := p + c + s; x != "" && !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
		}
	}
	return out
}

// pyQuote writes s as a when: string literal (Python escapes).
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// literalCase is one generated pipeline and what its strings must read
// back as.
type literalCase struct {
	name string
	src  []byte
	// conds: for each guarded step, the Choice that routes to it, the
	// step output its when: reads, and the literal it compares with.
	conds []literalCond
}

type literalCond struct {
	state, prev, literal string
}

// literalPipelines spreads every generated string over n pipelines, each
// field kind holding each string in one of them.
func literalPipelines(n int) []literalCase {
	raw := edgeStrings(rawEdges, rawEdges, "v", "")
	tpl := edgeStrings(templatePrefixes, templateSuffixes, "v")
	var out []literalCase
	for k := range n {
		var rs, ts []string
		for i, s := range raw {
			if i%n == k {
				rs = append(rs, s)
			}
		}
		for i, s := range tpl {
			if i%n == k {
				ts = append(ts, s)
			}
		}
		c := literalCase{name: fmt.Sprintf("literals-%02d", k)}
		vars := map[string]any{}
		for i, s := range rs {
			vars[fmt.Sprintf("v%d", i)] = s
		}
		var notes []any
		for i, s := range ts[:min(4, len(ts))] {
			notes = append(notes, map[string]any{"channel": "log", "template": s, "config": map[string]any{"note": rs[i%len(rs)]}})
		}
		var steps []any
		for j, s := range ts {
			name := fmt.Sprintf("s%d", j)
			if j%4 == 1 { // names as long as a step name may be, with every legal character
				name = (name + "-A_z9" + strings.Repeat("x", 64))[:64]
			}
			step := map[string]any{
				"name":            name,
				"executor":        "scripted",
				"prompt_template": s,
				"executor_config": map[string]any{"note": s, "list": []any{s, "{{ 'b' }}"}, "nested": map[string]any{"deep": s}},
				"on_abort":        rs[j%len(rs)],
				"on_failure": map[string]any{"policy": "continue", "webhook": map[string]any{
					"url":     "https://hooks.example.com/{{ 'x' }}",
					"headers": map[string]any{"X-Note": s},
					"payload": map[string]any{"text": s, "list": []any{s}},
				}},
			}
			if j > 0 {
				lit := rs[(j*7)%len(rs)]
				prev := steps[j-1].(map[string]any)["name"].(string)
				step["when"] = "steps." + pipeline.TemplateName(prev) + ".summary == " + pyQuote(lit)
				c.conds = append(c.conds, literalCond{state: "Check " + step["name"].(string), prev: prev, literal: lit})
			}
			steps = append(steps, step)
		}
		group, branch := "p"+strings.Repeat("g", 32), "b"+strings.Repeat("r", 39) // "<group>/<branch>: lost" is 80 characters
		steps = append(steps, map[string]any{"parallel": map[string]any{
			"name": group,
			"steps": []any{
				map[string]any{"name": branch, "executor": "scripted", "prompt_template": ts[0], "executor_config": map[string]any{"note": ts[len(ts)-1]}},
				map[string]any{"name": "other", "executor": "scripted", "prompt_template": ts[len(ts)/2]},
			},
		}})
		var over []string
		for _, s := range rs[:3] {
			over = append(over, pyQuote(s))
		}
		steps = append(steps, map[string]any{"fan_out": map[string]any{
			"name": "f", "executor": "scripted", "over": "[" + strings.Join(over, ", ") + "]", "prompt_template": ts[1],
		}})
		doc := map[string]any{
			"name":          c.name,
			"description":   rs[len(rs)-1],
			"vars":          vars,
			"notifications": map[string]any{"escalate": notes},
			"steps":         steps,
		}
		// JSON is YAML whose every string is double-quoted with escapes:
		// the file holds exactly these strings, whatever they contain.
		var src bytes.Buffer
		enc := json.NewEncoder(&src)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		if err := enc.Encode(doc); err != nil {
			panic(err)
		}
		c.src = src.Bytes()
		out = append(out, c)
	}
	return out
}

// decoded is a value of the definition with each JSONata expression in
// it replaced by what it evaluates to.
type literalRun struct {
	exprs []string // expressions to evaluate, without bindings
	index map[string]int
}

func (r *literalRun) add(expr string) int {
	if i, ok := r.index[expr]; ok {
		return i
	}
	r.index[expr] = len(r.exprs)
	r.exprs = append(r.exprs, expr)
	return len(r.exprs) - 1
}

// collect registers every expression in v.
func (r *literalRun) collect(v any) {
	switch v := v.(type) {
	case string:
		if m := exprRE.FindStringSubmatch(v); m != nil {
			r.add(m[1])
		}
	case map[string]any:
		for _, e := range v {
			r.collect(e)
		}
	case []any:
		for _, e := range v {
			r.collect(e)
		}
	}
}

// decode replaces every expression in v by its value in values.
func (r *literalRun) decode(v any, values []cell) any {
	switch v := v.(type) {
	case string:
		if m := exprRE.FindStringSubmatch(v); m != nil {
			c := values[r.index[m[1]]]
			if c.Error != "" || c.Undefined {
				return fmt.Sprintf("<%s: %+v>", m[1], c)
			}
			return c.Value
		}
		return v
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = r.decode(e, values)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.decode(e, values)
		}
		return out
	}
	return v
}

// referenceEval evaluates each expression with its bindings in the pinned
// jsonata@2.0.6, in one node process.
func referenceEval(t *testing.T, exprs []string, bindings []map[string]any) []cell {
	t.Helper()
	type ecase struct {
		Expr     string         `json:"expr"`
		Bindings map[string]any `json:"bindings,omitempty"`
	}
	in := struct {
		Cases []ecase `json:"cases"`
	}{}
	for i, e := range exprs {
		in.Cases = append(in.Cases, ecase{e, bindings[i]})
	}
	b, _ := json.Marshal(in)
	cmd := exec.Command("node", "testdata/jsonata-cases.mjs")
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference evaluator: %v\n%s", err, stderr.String())
	}
	var ref struct {
		Version string `json:"version"`
		Results []cell `json:"results"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Version != "2.0.6" || len(ref.Results) != len(exprs) {
		t.Fatalf("reference jsonata %s answered %d of %d", ref.Version, len(ref.Results), len(exprs))
	}
	return ref.Results
}

func TestStringsSurviveTheDefinition(t *testing.T) {
	validatorDir := nodeTool(t, "asl-validator")
	nodeTool(t, "jsonata")
	cases := literalPipelines(16)
	tmp := t.TempDir()
	var args []string
	type compiled struct {
		c   literalCase
		f   *File
		def map[string]any
	}
	var all []compiled
	for _, c := range cases {
		f, sm, ds := Build(c.name+".yaml", c.src, nil)
		if sm == nil {
			t.Fatalf("%s does not compile:\n%s\n%s", c.name, ds.Errors(), c.src)
		}
		def, err := Marshal(sm)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, c.name+".asl.json")
		if err := os.WriteFile(p, def, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--json-path", p)
		var doc map[string]any
		if err := json.Unmarshal(def, &doc); err != nil {
			t.Fatal(err)
		}
		all = append(all, compiled{c, f, doc})
	}

	// AWS accepts every definition.
	out, err := exec.Command(filepath.Join(validatorDir, "..", ".bin", "asl-validator"), args...).CombinedOutput()
	if err != nil || strings.Count(string(out), "is valid") != len(cases) {
		t.Fatalf("asl-validator judged %d of %d definitions valid (%v):\n%.3000s", strings.Count(string(out), "is valid"), len(cases), err, out)
	}

	// No expression holds a delimiter or a line break inside: however
	// Step Functions finds the ends of "{% ... %}", it finds these.
	for _, x := range all {
		walkStrings(x.def, func(s string) {
			if m := exprRE.FindStringSubmatch(s); m != nil && (strings.Contains(m[1], "{%") || strings.Contains(m[1], "%}") || strings.ContainsAny(s, "\n\r\u2028\u2029")) {
				t.Errorf("%s: expression %q holds a delimiter or a line break", x.c.name, s)
			}
		})
	}

	// Every static string reads back as written: the run's pipeline
	// record, each step's and branch's configuration, each failure
	// record's, the fan-out's list. Conditions compare with the literal
	// the author wrote, and with nothing else.
	run := &literalRun{index: map[string]int{}}
	type check struct {
		what       string
		got, want  any
		pipelineAt string
	}
	var checks []check
	type condCase struct {
		what  string
		expr  string
		doc   map[string]any
		want  bool
		where string
	}
	var conds []condCase
	for _, x := range all {
		states := x.def["States"].(map[string]any)
		l := &lowerer{f: x.f, p: x.f.Pipeline}
		start := states[StateStart].(map[string]any)["Assign"].(map[string]any)["pipeline"]
		run.collect(start)
		info := l.pipelineInfo()
		info.Config = x.f.Pipeline.Config // Lower stamps it
		checks = append(checks, check{"Start run pipeline", start, toPlain(info), x.c.name})
		for _, n := range x.f.Pipeline.Steps {
			switch n := n.(type) {
			case *pipeline.Step:
				want := toPlain(n).(map[string]any)
				delete(want, "when")
				got := payloadStep(states[n.Name])
				run.collect(got)
				checks = append(checks, check{"step " + n.Name, got, want, x.c.name})
				failed := payloadStep(states[n.Name+": failed"])
				run.collect(failed)
				checks = append(checks, check{"failure of " + n.Name, failed, toPlain(failureConfig(n)), x.c.name})
			case *pipeline.Parallel:
				par := states[n.Name].(map[string]any)
				for i, b := range n.Branches {
					br := par["Branches"].([]any)[i].(map[string]any)["States"].(map[string]any)
					got := payloadStep(br[n.Name+"/"+b.Name])
					run.collect(got)
					checks = append(checks, check{"branch " + b.Name, got, toPlain(b), x.c.name})
				}
			case *pipeline.FanOut:
				m := states[n.Name].(map[string]any)
				items := m["Items"].(string)
				run.collect(items)
				lit, _ := when0(n.Over)
				checks = append(checks, check{"fan_out items", items, lit, x.c.name})
				proc := m["ItemProcessor"].(map[string]any)["States"].(map[string]any)
				got := payloadStep(proc[n.Name+" item"])
				want := toPlain(n).(map[string]any)
				delete(want, "when")
				run.collect(got)
				checks = append(checks, check{"fan_out " + n.Name, got, want, x.c.name})
			}
		}
		for _, cd := range x.c.conds {
			ch := states[cd.state].(map[string]any)
			rule := ch["Choices"].([]any)[0].(map[string]any)
			m := exprRE.FindStringSubmatch(rule["Condition"].(string))
			if m == nil {
				t.Fatalf("%s: %s: condition %v is not an expression", x.c.name, cd.state, rule["Condition"])
			}
			doc := func(summary string) map[string]any {
				return map[string]any{
					"states":         map[string]any{"input": map[string]any{"status": "completed"}},
					stepVar(cd.prev): map[string]any{"summary": summary, "confidence": 1},
				}
			}
			conds = append(conds,
				condCase{"the literal", m[1], doc(cd.literal), true, x.c.name + ": " + cd.state},
				condCase{"the literal and one more character", m[1], doc(cd.literal + "~"), false, x.c.name + ": " + cd.state},
				condCase{"the literal less its last character", m[1], doc(string([]rune(cd.literal)[:len([]rune(cd.literal))-1])), false, x.c.name + ": " + cd.state})
		}
	}
	exprs := slices.Clone(run.exprs)
	bindings := make([]map[string]any, len(exprs))
	for _, c := range conds {
		exprs = append(exprs, c.expr)
		bindings = append(bindings, c.doc)
	}
	t.Logf("%d definitions, %d static expressions, %d condition evaluations", len(cases), len(run.exprs), len(conds))
	ref := referenceEval(t, exprs, bindings)

	// The Go evaluator of the local engine reads the same.
	goCells := make([]cell, len(exprs))
	for i, e := range exprs {
		goCells[i] = evalGoCell(e, bindings[i])
	}
	for i, e := range exprs {
		if !reflect.DeepEqual(goCells[i], ref[i]) {
			t.Errorf("%q: go %+v, reference %+v", e, goCells[i], ref[i])
		}
	}
	for _, c := range checks {
		if got := run.decode(c.got, ref); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s, %s: reads back as\n%#v\nwant\n%#v", c.pipelineAt, c.what, got, c.want)
		}
	}
	for i, c := range conds {
		if got := ref[len(run.exprs)+i]; got.Value != c.want {
			t.Errorf("%s, %s: condition %s is %+v, want %v", c.where, c.what, c.expr, got, c.want)
		}
	}
	if t.Failed() {
		t.Logf("generated pipelines are in %s", tmp)
	}
}

// payloadStep is the static step configuration of a Task that invokes
// the step function.
func payloadStep(state any) any {
	st, ok := state.(map[string]any)
	if !ok {
		return fmt.Sprintf("<no such state: %v>", state)
	}
	return st["Arguments"].(map[string]any)["Payload"].(map[string]any)["step"]
}

// when0 reads a fan_out's literal list as the list the author wrote.
func when0(over string) (any, error) {
	var out []any
	s := strings.Trim(over, "[]")
	for _, part := range splitQuoted(s) {
		v, err := strconv.Unquote(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// splitQuoted splits a comma-separated list of double-quoted strings.
func splitQuoted(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if s[i] != '"' {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		out = append(out, s[i:j+1])
		i = j + 1
	}
	return out
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}
