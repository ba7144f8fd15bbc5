package importer

import (
	"strings"
	"testing"
)

func TestConvertWhen(t *testing.T) {
	roots := map[string]bool{"steps": true, "vars": true, "labels": true, "severity": true}
	tests := []struct {
		name, in, want string
		level          Level
		include        string
	}{
		{"kept", `steps.triage.action == "restart"`, `steps.triage.action == "restart"`, Converted, ""},
		{"tests kept", `steps.triage.action is defined and steps.triage.x is not none`, `steps.triage.action is defined and steps.triage.x is not none`, Converted, ""},
		{"context", `context.severity == "critical"`, `severity == "critical"`, Check, "severity"},
		{"context labels", `context.labels.team == "sre"`, `labels.team == "sre"`, Check, ""},
		{"context summary adds include", `"db" in context.summary`, `"db" in summary`, Check, "summary"},
		{"filter", `steps.x.items | length > 0`, `steps.x.items | length > 0`, Person, ""},
		{"wrapped", `{{ steps.x.ok }}`, `{{ steps.x.ok }}`, Person, ""},
		{"unknown name", `team == "sre"`, `team == "sre"`, Person, ""},
		{"later step", `steps.later.ok`, `steps.later.ok`, Person, ""},
		{"unknown var", `vars.nope == 1`, `vars.nope == 1`, Person, ""},
		{"context raw", `context.raw == 1`, `context.raw == 1`, Person, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var added []string
			sc := &scope{stepKnown: func(n string) bool { return n == "triage" || n == "x" }, vars: map[string]bool{"known": true}, include: func(p string) { added = append(added, p) }}
			got, notes := convertWhen(tt.in, roots, sc)
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if len(notes) == 0 || notes[len(notes)-1].level != tt.level {
				t.Fatalf("notes %+v, want last of level %s", notes, tt.level)
			}
			if tt.include != "" && (len(added) != 1 || added[0] != tt.include) {
				t.Errorf("includes %v, want %s", added, tt.include)
			}
		})
	}
}

// TestWhenSkippedStep: a negated test over a step that may have been
// skipped is converted with a stated difference.
func TestWhenSkippedStep(t *testing.T) {
	sc := &scope{stepKnown: func(string) bool { return true }, mayBeAbsent: func(n string) bool { return n == "maybe" }}
	roots := map[string]bool{"steps": true}
	for in, check := range map[string]bool{
		`steps.maybe.action != "x"`:          true,
		`steps.maybe.action not in ["a"]`:    true,
		`not steps.maybe.ok`:                 true,
		`steps.maybe.action is not defined`:  true,
		`not steps.maybe.action == "x"`:      true,
		`steps.maybe.action == "x"`:          false,
		`steps.maybe.action is defined`:      false,
		`steps.always.action != "x"`:         false,
		`steps.triage.ok and steps.maybe.ok`: false,
	} {
		_, notes := convertWhen(in, roots, sc)
		got := false
		for _, n := range notes {
			if n.level == Check {
				got = true
			}
		}
		if got != check {
			t.Errorf("%s: difference noted %v, want %v (%+v)", in, got, check, notes)
		}
	}
}

// FuzzConvertWhen: no panic; a condition is either kept parseable or
// kept as written with a note that needs a person.
func FuzzConvertWhen(f *testing.F) {
	for _, s := range []string{`steps.a.b == "x"`, `context.severity in ["a"]`, `{{ x }}`, `not (a or b)`, `x | length > 0`, `context.`, `steps.maybe.x != 1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sc := &scope{stepKnown: func(string) bool { return true }, mayBeAbsent: func(string) bool { return true }, vars: map[string]bool{}}
		out, notes := convertWhen(src, map[string]bool{"steps": true, "severity": true}, sc)
		if len(notes) == 0 {
			t.Fatalf("no note for %q", src)
		}
		if notes[len(notes)-1].level == Person && out != src {
			t.Fatalf("not converted, yet changed: %q → %q", src, out)
		}
	})
}

// TestMalformed: truncated and malformed expressions are reported, in a
// template and in a condition, never a panic.
func TestMalformed(t *testing.T) {
	for _, src := range []string{"a.", "a|", "a|b.", "a|b.c.", "a[", "a[1", "a['k'", "not", "x not", "(", "[1,", "a if", "a if b else",
		"x is", "x is not", "f(", "a(b=", "'unterminated", "a =", "{", "1e", "a..b", "-", "a ~", "a and", "x in", "x not in", `"\q"`} {
		out, notes := convertTemplate("{{ "+src+" }}", &scope{})
		if len(notes) == 0 || notes[0].level != Person || !strings.Contains(out, Marker) {
			t.Errorf("template {{ %s }}: %q %+v", src, out, notes)
		}
		if src == `"\q"` {
			continue // Stepline's conditions read Python's escapes, unknown ones as written
		}
		_, wn := convertWhen(src, map[string]bool{"a": true, "x": true, "b": true}, &scope{})
		if len(wn) == 0 || wn[len(wn)-1].level != Person {
			t.Errorf("when %s: %+v", src, wn)
		}
	}
}
