package template

import (
	"context"
	"testing"

	"github.com/osteele/liquid"
)

// TestSameAsLibrary renders a corpus through this engine and through the
// library's own standard engine: the tags implemented here must behave
// as the library's (outputs equal, and an error exactly where it errs).
// Map iteration is left out: the library's order is random.
func TestSameAsLibrary(t *testing.T) {
	ours := New(Limits{})
	theirs := liquid.NewEngine()
	bindings := []map[string]any{
		{},
		{"xs": []any{"a", "b", "c"}, "n": 2, "s": "Hello, World", "t": true, "f": false, "nested": map[string]any{"k": []any{1, 2}}},
		{"xs": []any{}, "n": 0, "s": "", "t": nil, "f": 0.5},
		{"xs": []any{1, 2.5, "x", nil, true, []any{"in"}}, "n": -1, "s": "a$b{{c}}", "t": "true"},
		{"xs": []string{"p", "q"}, "n": 10, "s": "ünïcödé", "t": []any{}},
	}
	templates := []string{
		"plain",
		"{{ s }}|{{ n }}|{{ t }}|{{ f }}|{{ missing }}|{{ xs }}",
		"{{ s | upcase }} {{ s | downcase | capitalize }} {{ s | size }} {{ s | slice: 1, 3 }}",
		"{{ xs | join: ',' }} {{ xs | first }} {{ xs | last }} {{ xs | size }} {{ xs | reverse | join }}",
		"{{ n | plus: 1 }} {{ n | times: 3 }} {{ n | minus: 4 }} {{ n | modulo: 3 }}",
		"{{ s | replace: 'l', 'L' }} {{ s | remove: 'o' }} {{ s | truncate: 5 }} {{ s | split: ',' | join: ';' }}",
		"{{ s | default: 'd' }} {{ missing | default: 'd' }} {{ xs | compact | size }}",
		"{{ nested.k[1] }} {{ nested.k.size }} {{ nested.k | join }}",
		"{% for x in xs %}[{{ x }}]{% endfor %}",
		"{% for x in xs %}{{ forloop.index }}{{ forloop.index0 }}{{ forloop.rindex }}{{ forloop.rindex0 }}/{{ forloop.length }}{% if forloop.first %}^{% endif %}{% if forloop.last %}${% endif %}{% endfor %}",
		"{% for x in xs reversed %}{{ x }}{% endfor %}",
		"{% for x in xs limit: 2 %}{{ x }}{% endfor %}|{% for x in xs offset: 1 %}{{ x }}{% endfor %}",
		"{% for x in xs reversed limit: 1 offset: 1 %}{{ x }}{% endfor %}",
		"{% for x in xs %}{{ x }}{% else %}empty{% endfor %}",
		"{% for x in missing %}{{ x }}{% else %}empty{% endfor %}",
		"{% for x in s %}{{ x }}{% else %}empty{% endfor %}",
		"{% for i in (1..n) %}{{ i }}{% endfor %}",
		"{% for i in (n..3) %}{{ i }}{% else %}e{% endfor %}",
		"{% for i in (1..3) %}{% for j in (1..i) %}{{ j }}{% endfor %};{% endfor %}",
		"{% for x in xs %}{% if forloop.index == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
		"{% for x in xs %}{% if forloop.index == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}",
		"{% for x in xs %}{% cycle 'a', 'b' %}{% cycle 'x': 1, 2, 3 %}{% endfor %}",
		"{% assign x = 'before' %}{% for x in xs %}{% endfor %}{{ x }}",
		"{% for x in xs %}{% assign last = x %}{% endfor %}{{ last }}",
		"{% if t %}T{% elsif f %}F{% else %}E{% endif %}",
		"{% if n > 1 and s contains 'o' %}A{% elsif n == 0 or t %}B{% endif %}",
		"{% if xs contains 'a' %}has{% endif %}{% if s == 'Hello, World' %}eq{% endif %}{% if n != 2 %}ne{% endif %}",
		"{% unless t %}not{% else %}is{% endunless %}",
		"{% case n %}{% when 0 %}zero{% when 1, 2 %}small{% else %}big{% endcase %}",
		"{% case s %}{% when 'x' or '' %}x-or-empty{% endcase %}",
		"{% assign y = xs | join: '+' | append: '!' %}{{ y }}",
		"{% capture c %}{{ s }}-{{ n }}{% endcapture %}{{ c | upcase }}",
		"{% comment %}{{ s }}{% endcomment %}{% raw %}{{ s }}{% endraw %}",
		"  {{- s -}}  |{%- if t -%}  x  {%- endif -%}|",
		"{% if %}",
		"{% for %}{% endfor %}",
		"{{ s | no_such_filter }}",
		"{{ n | divided_by: 0 }}",
		"{% cycle 'a' %}",
		"{% for x in xs limit: s %}{% endfor %}",
		"{% break %}",
	}
	for _, src := range templates {
		ot, oerr := ours.Parse(src)
		tt, terr := theirs.ParseString(src)
		if (oerr == nil) != (terr == nil) {
			// One deliberate difference: unknown filters are parse errors here.
			if oerr != nil && terr == nil && limitOf(oerr) == nil && src == "{{ s | no_such_filter }}" {
				continue
			}
			t.Errorf("%q: parse: ours %v, library %v", src, oerr, terr)
			continue
		}
		if oerr != nil {
			continue
		}
		for i, b := range bindings {
			got, gerr := ot.Render(context.Background(), b)
			want, werr := tt.RenderString(b)
			if (gerr == nil) != (werr == nil) || got != want {
				t.Errorf("%q with bindings %d: ours %q (%v), library %q (%v)", src, i, got, gerr, want, werr)
			}
		}
	}
}
