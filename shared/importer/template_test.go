package importer

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/template"
)

// TestConvertTemplate pins the Liquid written for every conversion kind,
// and that Stepline's engine parses it.
func TestConvertTemplate(t *testing.T) {
	engine := template.New(template.Limits{})
	tests := []struct {
		name, in, want string
		kind           string
		level          Level
	}{
		{"round", `{{ x | round(2) }}`, `{{ x | round: 2 }}`, "filter round", Check},
		{"round without precision", `{{ x | round }}`, `{{ x | round }}`, "filter round", Check},
		{"default", `{{ x | default("y") }}`, `{{ x | default: "y" }}`, "filter default", Check},
		{"default boolean", `{{ x | default('y', true) }}`, `{{ x | default: "y" }}`, "filter default", Converted},
		{"is none", `{% if x is none %}a{% endif %}`, `{% if x == nil %}a{% endif %}`, "is none", Converted},
		{"is not none", `{% if x is not none %}a{% endif %}`, `{% if x != nil %}a{% endif %}`, "is none", Converted},
		{"is defined", `{% if x is defined %}a{% endif %}`, `{% if x != nil %}a{% endif %}`, "is defined", Check},
		{"is not defined", `{% if not x is defined %}a{% endif %}`, `{% if x == nil %}a{% endif %}`, "is defined", Check},
		{"conditional expression", `{{ "P1" if sev == "critical" else "P2" }}`, `{% if sev == "critical" %}{{ "P1" }}{% else %}{{ "P2" }}{% endif %}`, "a if c else b", Converted},
		{"conditional without else", `{{ x if ok == true }}`, `{% if ok == true %}{{ x }}{% endif %}`, "a if c else b", Converted},
		{"plus", `{{ fan_out_index + 1 }}`, `{{ fan_out_index | plus: 1 }}`, "arithmetic", Converted},
		{"plus, literal first", `{{ 1 + fan_out_index }}`, `{{ fan_out_index | plus: 1 }}`, "arithmetic", Converted},
		{"minus", `{{ total - 1 }}`, `{{ total | minus: 1 }}`, "arithmetic", Converted},
		{"times", `{{ c * 100 }}`, `{{ c | times: 100 }}`, "arithmetic", Converted},
		{"divide", `{{ c / 2 }}`, `{{ c | divided_by: 2.0 }}`, "arithmetic", Check},
		{"loop.index", `{% for s in xs %}{{ loop.index }}{% endfor %}`, `{% for s in xs %}{{ forloop.index }}{% endfor %}`, "loop.index", Converted},
		{"loop.revindex", `{% for s in xs %}{{ loop.revindex0 }}{% endfor %}`, `{% for s in xs %}{{ forloop.rindex0 }}{% endfor %}`, "loop.index", Converted},
		{"not loop.last", `{% for s in xs %}{% if not loop.last %},{% endif %}{% endfor %}`, `{% for s in xs %}{% if forloop.last == false %},{% endif %}{% endfor %}`, "loop.index", Converted},
		{"loop outside for is loop_until's", `{{ loop.iteration }}`, `{{ loop.iteration }}`, "", Converted},
		{"concatenation", `{{ a ~ "/" ~ b }}`, `{{ a }}{{ "/" }}{{ b }}`, "~ concatenation", Converted},
		{"concatenation in a value", `{% set u = base ~ path %}`, `{% assign u = base | append: path %}`, "~ concatenation", Converted},
		{"and", `{% if a == 1 and b == 2 %}x{% endif %}`, `{% if a == 1 and b == 2 %}x{% endif %}`, "and/or", Converted},
		{"and under or", `{% if a == 1 and b == 2 or c == 3 %}x{% endif %}`, `{% if (a == 1 and b == 2) or c == 3 %}x{% endif %}`, "and/or", Converted},
		{"or under and", `{% if a == 1 or b == 2 and c == 3 %}x{% endif %}`, `{% if a == 1 or (b == 2 and c == 3) %}x{% endif %}`, "and/or", Converted},
		{"not pushed down", `{% if not (a == 1 or b > 2) %}x{% endif %}`, `{% if a != 1 and b <= 2 %}x{% endif %}`, "and/or", Converted},
		{"truthiness", `{% if a %}x{% endif %}`, `{% if a %}x{% endif %}`, "truthiness", Check},
		{"in list", `{% if a in ["x", "y"] %}x{% endif %}`, `{% if (a == "x" or a == "y") %}x{% endif %}`, "in", Converted},
		{"in value", `{% if "err" in s %}x{% endif %}`, `{% if s contains "err" %}x{% endif %}`, "in", Converted},
		{"not in value", `{% if "err" not in s %}x{% endif %}`, `{% if (s contains "err") == false %}x{% endif %}`, "in", Converted},
		{"elif", `{% if a == 1 %}x{% elif a == 2 %}y{% else %}z{% endif %}`, `{% if a == 1 %}x{% elsif a == 2 %}y{% else %}z{% endif %}`, "", Converted},
		{"filter in comparison", `{% if xs | length > 0 %}x{% endif %}`, `{% if (xs | size) > 0 %}x{% endif %}`, "filter length", Converted},
		{"upper", `{{ s | upper }}`, `{{ s | upcase }}`, "filter upper", Converted},
		{"join", `{{ xs | join(", ") }}`, `{{ xs | join: ", " }}`, "filter join", Converted},
		{"tojson", `{{ x | tojson }}`, `{{ x | json }}`, "filter tojson", Check},
		{"safe", `{{ x | safe }}`, `{{ x }}`, "filter safe", Converted},
		{"whitespace control", `{{- x -}}`, `{{- x -}}`, "", Converted},
		{"bracket step", `{{ steps['first-line'].summary }}`, `{{ steps["first-line"].summary }}`, "", Converted},
		{"comment", `{# note {{ x }} #}`, `{% comment %} note { { x } } {% endcomment %}`, "comment", Converted},
		{"raw", `{% raw %}{{ x }}{% endraw %}`, `{% raw %}{{ x }}{% endraw %}`, "raw", Converted},
		{"set", `{% set n = xs | length %}{{ n }}`, `{% assign n = xs | size %}{{ n }}`, "set", Converted},
		{"set block", `{% set b %}hi{% endset %}`, `{% capture b %}hi{% endcapture %}`, "set", Converted},
		{"context", `{{ context.summary }}`, `{{ summary }}`, "context.X", Check},
		{"context labels", `{{ context.labels.service }}`, `{{ labels.service }}`, "context.X", Check},
		{"no template", `plain text`, `plain text`, "", Converted},

		{"unknown filter", `{{ x | title }}`, `{% vectorstep_unconverted %}{ { x | title } }`, "expression", Person},
		{"include", `{% include "f.j2" %}`, `{% vectorstep_unconverted %}{ % include "f.j2" % }`, "tag include", Person},
		{"macro", `{% macro m() %}x{% endmacro %}`, `{% vectorstep_unconverted %}{ % macro m() % }x{% vectorstep_unconverted %}{ % endmacro % }`, "tag macro", Person},
		{"floor division", `{{ n // 2 }}`, `{% vectorstep_unconverted %}{ { n // 2 } }`, "expression", Person},
		{"two values added", `{{ a + b }}`, `{% vectorstep_unconverted %}{ { a + b } }`, "expression", Person},
		{"method call", `{{ s.upper() }}`, `{% vectorstep_unconverted %}{ { s.upper() } }`, "expression", Person},
		{"for over items", `{% for k, v in d.items() %}{% endfor %}`, `{% vectorstep_unconverted %}{ % for k, v in d.items() % }{% endfor %}`, "expression", Person},
		{"unclosed", `{{ x`, `{% vectorstep_unconverted %}{ { x`, "syntax", Person},
		{"testing flag", `{% if _testing %}t{% endif %}`, `{% vectorstep_unconverted %}{ % if _testing % }t{% endif %}`, "expression", Person},
		{"delimiters in a string", `{{ "{{ x }}" }}`, `{% vectorstep_unconverted %}{ { "{ { x } }" } }`, "expression", Person},
		{"other test", `{% if n is divisibleby 3 %}x{% endif %}`, `{% vectorstep_unconverted %}{ % if n is divisibleby 3 % }x{% endif %}`, "expression", Person},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := convertTemplate(tt.in, &scope{})
			if got != tt.want {
				t.Fatalf("convert %q\n got %q\nwant %q", tt.in, got, tt.want)
			}
			_, err := engine.Parse(got)
			if tt.level == Person {
				if err == nil || !strings.Contains(err.Error(), Marker) && !strings.Contains(err.Error(), "endif") && !strings.Contains(err.Error(), "endfor") {
					t.Errorf("the unconverted output parses (%v): validate would accept it", err)
				}
			} else if err != nil {
				t.Errorf("the output does not parse: %v", err)
			}
			if tt.kind == "" {
				return
			}
			found := false
			for _, n := range notes {
				if n.kind == tt.kind && (n.level == tt.level || tt.level == Converted && n.level == Check) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s note of kind %q: %+v", tt.level, tt.kind, notes)
			}
		})
	}
}

// TestNotePositions checks that an unconverted construct is reported at
// its line and column, with its original text.
func TestNotePositions(t *testing.T) {
	_, notes := ConvertTemplate("line one\n  two {{ x | title }}\n")
	if len(notes) != 1 {
		t.Fatalf("notes: %+v", notes)
	}
	n := notes[0]
	if n.Line != 2 || n.Col != 7 || n.Level != Person || n.Original != "{{ x | title }}" {
		t.Errorf("note %+v, want 2:7 needs a person with the original", n)
	}
}

// TestTemplateStepReferences: a step that does not run before is not
// converted (the reference fails rendering it; validate refuses it).
func TestTemplateStepReferences(t *testing.T) {
	sc := &scope{stepKnown: func(n string) bool { return n == "triage" }}
	for in, person := range map[string]bool{
		`{{ steps.triage.summary }}`:      false,
		`{{ steps['triage/0'].summary }}`: false,
		`{{ steps.later.summary }}`:       true,
	} {
		out, notes := convertTemplate(in, sc)
		got := len(notes) > 0 && notes[0].level == Person
		if got != person || strings.Contains(out, Marker) != person {
			t.Errorf("%s: needs a person %v, want %v (%q)", in, got, person, out)
		}
	}
}

var includeRE = regexp.MustCompile(`\{%-?\s*(include|render)\b`)

// FuzzConvertTemplate: the converter never panics, never writes an
// include or render tag, and whatever it does not convert is reported
// and marked.
func FuzzConvertTemplate(f *testing.F) {
	for _, s := range []string{
		`{{ x | round(2) }}`, `{% if a and not b %}x{% elif c is none %}y{% endif %}`, `{% include "x" %}`,
		`{% raw %}{% include 'x' %}{% endraw %}`, `{# {% render 'y' %} #}`, `{{ "{% include" }}`, `{{ a if b else c ~ d }}`,
		`{% for x in y %}{{ loop.index }}{% endfor %}`, `{{ ((((((x)))))) }}`, `{% set a = b ~ c %}`, `{{ x`, `{%- include -%}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, notes := convertTemplate(src, &scope{})
		if includeRE.MatchString(out) {
			t.Fatalf("output holds an include or render tag: %q → %q", src, out)
		}
		person := false
		for _, n := range notes {
			if n.off < 0 || n.off > len(src) {
				t.Fatalf("note offset %d outside the template (%d bytes)", n.off, len(src))
			}
			if n.level == Person {
				person = true
			}
		}
		if person != strings.Contains(out, "{% "+Marker+" %}") && !strings.Contains(src, Marker) {
			t.Fatalf("needs a person %v but marker present %v: %q → %q", person, !person, src, out)
		}
	})
}
