package when

import (
	"errors"
	"strings"
	"testing"
)

// TestJSONataForms pins the JSONata of the common forms: what an operator
// reads in the Step Functions console. Their behaviour is checked by the
// differential tests.
func TestJSONataForms(t *testing.T) {
	tests := []struct{ name, when, want string }{
		{"string equality", `steps.triage.action == "restart"`, `$steps.triage.action = 'restart'`},
		{"inequality escapes quote and delimiter", `steps.triage.action != "it's {%x%}"`,
			`$not($steps.triage.action = 'it\u0027s {\u0025x\u0025}')`},
		{"ordering", `steps.triage.confidence >= 0.8`,
			`$type($steps.triage.confidence) = 'number' ? $steps.triage.confidence >= 0.8 : false`},
		{"ordering with the literal first", `0.8 < steps.triage.confidence`,
			`$type($steps.triage.confidence) = 'number' ? 0.8 < $steps.triage.confidence : false`},
		{"negated ordering", `not steps.triage.confidence >= 0.8`,
			`$type($steps.triage.confidence) = 'number' ? $steps.triage.confidence < 0.8 : false`},
		{"truthiness", `steps.triage.proceed`,
			`($v := $steps.triage.proceed; $type($v) = 'array' ? $count($v) > 0 : $v ? true : false)`},
		{"hyphenated step", `steps["first-line-triage"].summary is defined`, "'summary' in $keys($steps.`first-line-triage`)"},
		{"guarded defined", `steps.triage.meta.owner is not defined`,
			`$not($type($steps.triage.meta) = 'object' and 'owner' in $keys($steps.triage.meta))`},
		{"none", `steps.triage.summary is none`, `$type($steps.triage.summary) = 'null'`},
		{"empty list", `steps.triage.tags == []`,
			`($p := $steps.triage; $exists($p.tags) ? $p.tags : 'tags' in $keys($p) ? []) = []`},
		{"membership in a literal list", `steps.triage.action in ["restart", "reboot"]`,
			`$steps.triage.action in ['restart', 'reboot']`},
		{"membership with none and a list", `steps.triage.action not in ["a", none, [1]]`,
			`$not(($v := $steps.triage.action; $v in ['a'] or $type($v) = 'null' or $v = [1]))`},
		{"substring of a literal", `steps.triage.code in "ABC"`,
			`$type($steps.triage.code) = 'string' ? $contains('ABC', $steps.triage.code) : false`},
		{"needle in a value", `"api" in steps.triage.services`,
			`($c := $steps.triage.services; $t := $type($c); $exists($c) ? ($t = 'array' ? 'api' in $c : ` +
				`$t = 'string' ? $contains($c, 'api') : $t = 'object' ? 'api' in $keys($c) : false) : false)`},
		{"two paths ordered", `steps.triage.a < steps.triage.b`,
			`($a := $steps.triage.a; $b := $steps.triage.b; $type($a) = $type($b) and $type($a) in ['number', 'string'] ? $a < $b : false)`},
		{"or after an error-prone side", `steps.b.score > 0.5 or steps.a.ok == true`,
			`($r := $type($steps.b.score) = 'number' ? $steps.b.score > 0.5; $r = false ? $steps.a.ok = true : $r = true)`},
		{"not pushed down", `not (steps.b.score > 0.5 or steps.a.ok == true)`,
			`($type($steps.b.score) = 'number' ? $steps.b.score <= 0.5 : false) and $not($steps.a.ok = true)`},
		{"context names", `service == "api" and severity == "critical" and labels.team == "sre" and region == "eu"`,
			`$trigger.labels.service = 'api' and $trigger.severity = 'critical' and $trigger.labels.team = 'sre' and $vars.region = 'eu'`},
		{"keywords and spaces quoted", `steps.x.and != steps.x["with space"]`,
			"$not(($p := $steps.x; $exists($p.`and`) ? $p.`and` : 'and' in $keys($p) ? []) = " +
				"($p := $steps.x; $exists($p.`with space`) ? $p.`with space` : 'with space' in $keys($p) ? []))"},
		{"constant", `1 < 2 and "a" in ["a"]`, `true and true`},
		{"constant false", `none`, `false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.when)
			if err != nil {
				t.Fatal(err)
			}
			got, err := JSONata(e, testScope)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("JSONata(%s)\n got %s\nwant %s", tt.when, got, tt.want)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	e, err := Parse(`steps.triage.action == "restart"`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Condition(e, testScope)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{% $steps.triage.action = 'restart' %}`; got != want {
		t.Errorf("Condition = %s, want %s", got, want)
	}
}

func TestJSONataErrors(t *testing.T) {
	tests := []struct {
		name  string
		expr  func(t *testing.T) Expr
		scope Scope
		off   int // -1: not a positioned *Error
		msg   string
	}{
		{"unknown root", parsed(`steps.a.ok and service == "x"`), Scope{"steps": {Expr: "$steps", Keyed: 2}}, 15,
			`offset 15: unknown name "service"; known: steps`},
		{"unknown root, empty scope", parsed(`x`), nil, 0, `offset 0: unknown name "x"`},
		{"backtick key", parsed("steps.triage[\"a`b\"] == 1"), testScope, 0,
			"offset 0: key \"a`b\" cannot be addressed in JSONata: it is empty or holds a backtick, a control character or {% %}"},
		{"delimiter in key", parsed(`steps.x is defined or steps.triage["%}"]`), testScope, 22,
			`offset 22: key "%}" cannot be addressed in JSONata: it is empty or holds a backtick, a control character or {% %}`},
		{"empty key", parsed(`steps[""].x`), testScope, 0,
			`offset 0: key "" cannot be addressed in JSONata: it is empty or holds a backtick, a control character or {% %}`},
		{"root is not a path", parsed(`x`), Scope{"x": {Expr: "$w + 1"}}, -1,
			`when: scope root "x": expression "$w + 1" is not a variable followed by field names`},
		{"root uses a reserved local", parsed(`x`), Scope{"x": {Expr: "$v.x"}}, -1,
			`when: scope root "x": variable $v is reserved for the lowering's own locals`},
		{"root field with a backtick quoted", parsed(`x`), Scope{"x": {Expr: "$w.`b c`.d"}}, -1, ""},
		{"nil", func(*testing.T) Expr { return nil }, testScope, -1, "when: nil expression"},
		{"comparison of a group", func(*testing.T) Expr {
			return &Binary{Op: OpEq, X: &Not{X: &Path{Root: "x"}}, Y: &Literal{Value: 1.0}, OpOffset: 8}
		}, Scope{"x": {Expr: "$x"}}, 0, "offset 0: the left side of == must be a path or a literal"},
		{"invalid literal", func(*testing.T) Expr { return &Literal{Value: 1} }, testScope, -1, "when: invalid literal value"},
		{"invalid test", func(*testing.T) Expr { return &Test{X: &Literal{Value: true}, Name: "odd"} }, testScope, -1,
			`when: invalid test "odd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := JSONata(tt.expr(t), tt.scope)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("JSONata: %v", err)
				}
				if want := "$w.`b c`.d"; !strings.Contains(out, want) {
					t.Errorf("JSONata = %s, want it to read %s", out, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("JSONata = %s, want error %q", out, tt.msg)
			}
			if err.Error() != tt.msg {
				t.Errorf("error = %q, want %q", err.Error(), tt.msg)
			}
			var perr *Error
			if isPos := errors.As(err, &perr); isPos != (tt.off >= 0) || isPos && perr.Offset != tt.off {
				t.Errorf("error %#v, want offset %d", err, tt.off)
			}
		})
	}
}

func parsed(src string) func(t *testing.T) Expr {
	return func(t *testing.T) Expr {
		t.Helper()
		e, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		return e
	}
}
