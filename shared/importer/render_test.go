package importer

import (
	"context"
	"testing"

	"github.com/stepline/stepline/shared/template"
)

// TestConvertedRenders renders converted templates with Stepline's engine
// and compares with what the reference's Jinja2 renders for the same data
// (worked out by hand from Jinja's semantics).
func TestConvertedRenders(t *testing.T) {
	engine := template.New(template.Limits{})
	data := map[string]any{
		"x": 0.8567, "n": 7, "s": "no error here", "name": "checkout", "empty": "",
		"xs":            []any{"a", "b", "c"},
		"none":          nil,
		"steps":         map[string]any{"triage": map[string]any{"action": "restart", "confidence": 0.9, "services": []any{"api", "db"}}},
		"fan_out_index": 2,
	}
	tests := []struct{ jinja, want string }{
		{`{{ x | round(2) }}`, "0.86"},
		{`{{ missing | default("n/a") }}`, "n/a"},
		{`{% if none is none %}yes{% endif %}`, "yes"},
		{`{% if x is not none %}yes{% endif %}`, "yes"},
		{`{% if missing is defined %}yes{% else %}no{% endif %}`, "no"},
		{`{{ "big" if n > 5 else "small" }}`, "big"},
		{`{{ "big" if n > 50 else "small" }}`, "small"},
		{`{{ fan_out_index + 1 }}`, "3"},
		{`{{ n - 2 }}`, "5"},
		{`{{ n * 3 }}`, "21"},
		{`{{ n / 2 }}`, "3.5"},
		{`{% for v in xs %}{{ loop.index }}{{ v }}{% if not loop.last %},{% endif %}{% endfor %}`, "1a,2b,3c"},
		{`{% for v in xs %}{{ loop.revindex }}{% endfor %}`, "321"},
		{`{{ name ~ "-" ~ n }}`, "checkout-7"},
		{`{% set id = name ~ "/" ~ n %}{{ id }}`, "checkout/7"},
		{`{% if n > 5 and name == "checkout" %}both{% endif %}`, "both"},
		{`{% if n > 50 and name == "checkout" or x > 0.5 %}yes{% endif %}`, "yes"},
		{`{% if n > 50 or name == "x" and x > 0.5 %}yes{% else %}no{% endif %}`, "no"},
		{`{% if not (n > 50 or name == "x") %}neither{% endif %}`, "neither"},
		{`{% if steps.triage.action in ["restart", "scale"] %}act{% endif %}`, "act"},
		{`{% if "error" in s %}has{% endif %}`, "has"},
		{`{% if "fatal" not in s %}clean{% endif %}`, "clean"},
		{`{% if "db" in steps.triage.services %}db{% endif %}`, "db"},
		{`{% if xs | length > 2 %}many{% endif %}`, "many"},
		{`{{ xs | join(", ") | upper }}`, "A, B, C"},
		{`{{ s | replace("error", "issue") }}`, "no issue here"},
		{`{% if steps.triage.confidence >= 0.9 %}sure{% elif steps.triage.confidence > 0.5 %}maybe{% else %}no{% endif %}`, "sure"},
		{`{{ steps['triage'].action | upper }}`, "RESTART"},
		{`a{# gone #}b`, "ab"},
		{`{% raw %}{{ kept }}{% endraw %}`, "{{ kept }}"},
	}
	for _, tt := range tests {
		out, notes := convertTemplate(tt.jinja, &scope{})
		for _, n := range notes {
			if n.level == Person {
				t.Fatalf("%s: not converted: %s", tt.jinja, n.msg)
			}
		}
		tpl, err := engine.Parse(out)
		if err != nil {
			t.Fatalf("%s → %s: %v", tt.jinja, out, err)
		}
		got, err := tpl.Render(context.Background(), data)
		if err != nil {
			t.Fatalf("%s → %s: render: %v", tt.jinja, out, err)
		}
		if got != tt.want {
			t.Errorf("%s → %s renders %q, Jinja renders %q", tt.jinja, out, got, tt.want)
		}
	}
}
