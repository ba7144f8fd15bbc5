package local

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/store"
)

// TestLaterStepsView pins what later steps read of an earlier step:
// steps.x.confidence is the confidence the gate used (after the verifier:
// 0.5 here, where the agent said 0.9), a deliberate difference from the
// reference runner, whose context holds the agent's own; an extra field
// the answer gave as null is there and is none, while one it never gave
// is not (the reference's Jinja2 rule).
func TestLaterStepsView(t *testing.T) {
	p := `name: p
steps:
  - {name: a, executor: scripted, confidence_threshold: 0.4, verifier: {executor: scripted}}
  - {name: gate-used, executor: scripted, when: 'steps.a.confidence == 0.5', prompt_template: 'saw {{ steps.a.confidence }}'}
  - {name: agent-own, executor: scripted, when: 'steps.a.confidence == 0.9'}
  - {name: null-is-none, executor: scripted, when: 'steps.a.ticket is none'}
  - {name: null-is-defined, executor: scripted, when: 'steps.a.ticket is defined'}
  - {name: missing-is-none, executor: scripted, when: 'steps.a.missing is none'}
`
	responses := "a: [" + reply(0.9, "primary", `, "ticket": null`) + "]\na:verifier: [" + reply(0.5, "doubtful", "") + "]\n" +
		"gate-used: [" + reply(0.9, "ok", "") + "]\nagent-own: [" + reply(0.9, "ok", "") + "]\n" +
		"null-is-none: [" + reply(0.9, "ok", "") + "]\nnull-is-defined: [" + reply(0.9, "ok", "") + "]\nmissing-is-none: [" + reply(0.9, "ok", "") + "]\n"
	o, steps, _ := runScenario(t, p, responses, `{}`)
	if o.Status != store.RunCompleted {
		t.Fatalf("run %s (%s)", o.Status, o.Reason)
	}
	got := finals(steps)
	want := map[string]string{"a": "completed 0.5", "gate-used": "completed 0.9", "null-is-none": "completed 0.9", "null-is-defined": "completed 0.9"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("step %q: %q, want %q (all %v)", name, got[name], w, got)
		}
	}
	for _, skipped := range []string{"agent-own", "missing-is-none"} {
		if g, ok := got[skipped]; ok && g != "skipped" {
			t.Errorf("step %q ran (%q), want it skipped", skipped, g)
		}
	}
	for _, s := range steps {
		switch s.Name {
		case "a":
			if s.PrimaryConfidence == nil || *s.PrimaryConfidence != 0.9 {
				t.Errorf("a's record keeps the agent's own confidence: %v", s.PrimaryConfidence)
			}
			if !strings.Contains(string(s.Output), `"ticket":null`) {
				t.Errorf("a's output drops the null field: %s", s.Output)
			}
		case "gate-used":
			if s.Prompt != "saw 0.5" {
				t.Errorf("gate-used prompt %q, want %q", s.Prompt, "saw 0.5")
			}
		}
	}
}

// TestRunConfigFingerprint: a run records the fingerprint of the
// definition it ran (compiler.ConfigOf), whether a step created its
// record or, every step skipped, the runner did.
func TestRunConfigFingerprint(t *testing.T) {
	for _, c := range []struct{ name, pipeline, responses string }{
		{"a step ran", "name: p\nsteps:\n  - {name: a, executor: scripted}\n", "a: [" + reply(0.9, "ok", "") + "]\n"},
		{"every step skipped", "name: p\nvars: {mode: dry}\nsteps:\n  - {name: a, executor: scripted, when: 'vars.mode == \"live\"'}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, dir, _ := openScenario(t, map[string]string{"p.yaml": c.pipeline}, c.responses)
			path := filepath.Join(dir, "p.yaml")
			sm, _, _, err := r.Compile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := compiler.ConfigOf(sm)
			o, err := r.Run(context.Background(), path, json.RawMessage(`{}`), "")
			if err != nil || o.Status != store.RunCompleted {
				t.Fatalf("run %+v, %v", o, err)
			}
			run, err := r.Store.GetRun(context.Background(), o.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != 12 || run.ConfigFingerprint != want {
				t.Errorf("run records config %q, want %q", run.ConfigFingerprint, want)
			}
		})
	}
}
