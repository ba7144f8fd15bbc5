package template

import (
	"context"
	"testing"
)

// BenchmarkRender renders a step's prompt as the step handler does: a
// short template over a step's eight bindings, with output markup only
// and with a tag.
func BenchmarkRender(b *testing.B) {
	bindings := map[string]any{
		"run_id": "run-1", "pipeline_name": "bench", "current_step": "s1", "testing": true,
		"labels": map[string]any{}, "steps": map[string]any{"s0": map[string]any{"summary": "done"}},
		"artifacts": map[string]any{},
	}
	for _, c := range []struct{ name, src string }{
		{"output", "{{ steps.s0.summary }}"},
		{"tag", "{% if testing %}{{ steps.s0.summary }}{% endif %}"},
	} {
		b.Run(c.name, func(b *testing.B) {
			tpl, err := New(Limits{}).Parse(c.src)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if out, err := tpl.Render(ctx, bindings); err != nil || out != "done" {
					b.Fatalf("%q %v", out, err)
				}
			}
		})
	}
}
