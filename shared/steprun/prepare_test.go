package steprun

import (
	"context"
	"testing"
)

// TestPrepareTemplates parses templates ahead: each template is parsed
// once and found by a renderer; text without markup, repeats and a
// template that does not parse are left out (the step reports the last
// when it renders it, with its line).
func TestPrepareTemplates(t *testing.T) {
	good := []string{"{{ a }} prepared 1", "{% if a %}x{% endif %} prepared 2"}
	bad := "{% if a %} prepared, never closed"
	plain := "no markup, prepared"
	PrepareTemplates(append([]string{plain, good[0], bad, good[1], good[0]}, plain))
	parsed.mu.RLock()
	for _, src := range good {
		if parsed.cache[src] == nil {
			t.Errorf("%q was not parsed ahead", src)
		}
	}
	_, badKept := parsed.cache[bad]
	_, plainKept := parsed.cache[plain]
	ga := parsed.cache[good[0]]
	parsed.mu.RUnlock()
	if badKept || plainKept {
		t.Errorf("kept a template that does not parse (%v) or plain text (%v)", badKept, plainKept)
	}
	r := newRenderer("n")
	if got, err := r.parse(good[0]); err != nil || got != ga {
		t.Errorf("the renderer parsed %q again: %p, %v", good[0], got, err)
	}
	out, err := r.render(context.Background(), "s", "prompt_template", good[0], map[string]any{"a": "A"})
	if err != nil || out != "A prepared 1" {
		t.Errorf("render: %q, %v", out, err)
	}
	if _, err := r.render(context.Background(), "s", "prompt_template", bad, nil); err == nil {
		t.Error("a template that does not parse rendered")
	}
}
