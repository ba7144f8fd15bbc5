package steprun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/task"
)

// TestTemplatesCannotReadFiles: a step whose template includes a file
// (one validate would refuse, reaching the handler some other way) fails
// with a TemplateError; the file never reaches the executor.
func TestTemplatesCannotReadFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("FILE-CONTENT"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tmpl := range []string{`{% include "secret.txt" %}`, `{% include summary %}`, `{% render "secret.txt" %}`} {
		e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
		req := newRequest(t, task.ModeStep, seqStep("triage", tmpl))
		req.Trigger = json.RawMessage(`{"summary":"secret.txt"}`)
		req.Pipeline.Include = []string{"summary"}
		_, err := e.h.Respond(context.Background(), req)
		if fault.Name(err) != fault.NameTemplateError || !strings.Contains(err.Error(), "not allowed: templates cannot read files") {
			t.Errorf("%s: err = %v, want a TemplateError", tmpl, err)
		}
		if n := len(e.prov.Calls()); n != 0 {
			t.Errorf("%s: the executor was called %d times", tmpl, n)
		}
	}
}

// TestRenderingIsBounded: a prompt looping over (1..2000000000) fails the
// step with a TemplateError at the iteration cap, quickly.
func TestRenderingIsBounded(t *testing.T) {
	e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
	start := time.Now()
	_, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, seqStep("triage", "{% for i in (1..2000000000) %}{{ i }}{% endfor %}")))
	if fault.Name(err) != fault.NameTemplateError || !strings.Contains(err.Error(), `step "triage": prompt_template: line 1: loops run more than 100000 iterations (the template limit)`) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestStepTimeoutStopsRendering: a render that would take minutes stops
// at the step's timeout_seconds.
func TestStepTimeoutStopsRendering(t *testing.T) {
	e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
	st := seqStep("triage", "{% for i in (1..300) %}{% for j in (1..300) %}{{ summary | upcase | size }}{% endfor %}{% endfor %}")
	st.TimeoutSeconds = 1
	req := newRequest(t, task.ModeStep, st)
	big, _ := json.Marshal(map[string]string{"summary": strings.Repeat("x", 1<<20)})
	req.Trigger = big
	req.Pipeline.Include = []string{"summary"}
	start := time.Now()
	_, err := e.h.Respond(context.Background(), req)
	d := time.Since(start)
	if fault.Name(err) != fault.NameTemplateError || !strings.Contains(err.Error(), "rendering stopped: context deadline exceeded") {
		t.Fatalf("err = %v", err)
	}
	if d < time.Second || d > 4*time.Second {
		t.Errorf("stopped after %v, want about the 1 s timeout", d)
	}
}

// TestValuesCannotMoveSecretReferences: text from an event that ends or
// starts with "$" never switches a reference the pipeline wrote off, nor
// makes one out of the template's own text.
func TestValuesCannotMoveSecretReferences(t *testing.T) {
	resolver := secret.ResolverFunc(func(_ context.Context, name string) (string, error) {
		if name == "MY_SECRET" {
			return "s3cr3t", nil
		}
		return "", secret.Missing(name)
	})
	cases := []struct {
		name, summary, value, want string
	}{
		{"event $ before the pipeline's reference", "cost $", "{{ summary }}${MY_SECRET}", "cost $s3cr3t"},
		{"event $ before the template's literal brace", "cost $", "{{ summary }}{MY_SECRET}", "cost ${MY_SECRET}"},
		{"event brace after the template's $", "{MY_SECRET}", "${{ summary }}", "${MY_SECRET}"},
		{"event reference", "${MY_SECRET}", "x {{ summary }}", "x ${MY_SECRET}"},
		{"event escape", "$$", "{{ summary }}${MY_SECRET}", "$$s3cr3t"},
		{"pipeline escape kept", "v", "{{ summary }} $${MY_SECRET}", "v ${MY_SECRET}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, `triage: [{confidence: 0.9, summary: ok, next_step_context: ""}]`)
			st := seqStep("triage", "hi")
			st.ExecutorConfig = map[string]any{"url": c.value}
			req := newRequest(t, task.ModeStep, st)
			req.Trigger, _ = json.Marshal(map[string]string{"summary": c.summary})
			req.Pipeline.Include = []string{"summary"}
			if _, err := e.h.Respond(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			rendered := e.prov.Calls()[0].Config["url"].(string)
			got, err := secret.Expand(context.Background(), resolver, rendered)
			if err != nil || got != c.want {
				t.Errorf("rendered %q expands to %q (%v), want %q", rendered, got, err, c.want)
			}
		})
	}
}
