package compiler

import (
	"strings"
	"testing"
)

// TestRerunStates: the rerun path loads every step's variable from the
// input's rerun block, goes on at from_step through the step's when:
// check, and refuses a from_step that is not a sequential step.
func TestRerunStates(t *testing.T) {
	_, states := compileString(t, `
name: p
steps:
  - {name: a, executor: scripted}
  - parallel:
      name: g
      steps: [{name: b1, executor: scripted}, {name: b-2, executor: scripted}]
  - fan_out: {name: f, over: "[1]", executor: scripted}
  - {name: c, executor: scripted, when: "steps.a.confidence > 0.5"}
  - {name: d, executor: scripted}
`)
	start := states[StateStart].(map[string]any)
	rules := asMaps(start["Choices"])
	if len(rules) != 1 || rules[0]["Next"] != StateRerunLoad || rules[0]["Condition"] != "{% $exists($states.input.rerun) %}" ||
		start["Default"] != "a" || start["Assign"].(map[string]any)["pipeline"] == nil {
		t.Fatalf("Start run = %v", start)
	}
	load := states[StateRerunLoad].(map[string]any)
	assign := load["Assign"].(map[string]any)
	for v, src := range map[string]string{
		"step_a":   "$states.input.rerun.steps.a",
		"step_g":   "$states.input.rerun.steps.g",
		"step_b1":  "$states.input.rerun.steps.b1",
		"step_b_2": "$states.input.rerun.steps.`b-2`",
		"step_f":   "$states.input.rerun.steps.f",
		"step_c":   "$states.input.rerun.steps.c",
	} {
		if got := assign[v]; got != "{% $exists("+src+") ? "+src+" : null %}" {
			t.Errorf("%s = %v", v, got)
		}
	}
	if got := assign["items_f"]; got != "{% $exists($states.input.rerun.items.f) ? $states.input.rerun.items.f : {} %}" {
		t.Errorf("items_f = %v", got)
	}
	if assign["pipeline"] == nil || assign["run"] == nil || assign["trigger"] == nil || load["Next"] != StateRerunFrom {
		t.Errorf("load = %v", load)
	}
	from := states[StateRerunFrom].(map[string]any)
	var got []string
	for _, r := range asMaps(from["Choices"]) {
		got = append(got, r["Condition"].(string)+" -> "+r["Next"].(string))
	}
	want := []string{
		"{% $states.input.rerun.from_step = 'a' %} -> a",
		"{% $states.input.rerun.from_step = 'c' %} -> Check c",
		"{% $states.input.rerun.from_step = 'd' %} -> d",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || from["Default"] != StateRerunUnknown {
		t.Errorf("rerun rules:\n%s\nwant:\n%s (default %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), from["Default"])
	}
	fail := states[StateRerunUnknown].(map[string]any)
	if fail["Error"] != ErrorRerunUnknownStep {
		t.Errorf("unknown step state %v", fail)
	}
}

// A pipeline of groups only has no step to rerun from: the rerun path
// goes straight to the refusal.
func TestRerunWithoutSequentialSteps(t *testing.T) {
	_, states := compileString(t, "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: b, executor: scripted}]}\n")
	if _, ok := states[StateRerunFrom]; ok {
		t.Error("a Choice with no rule was emitted")
	}
	if states[StateRerunLoad].(map[string]any)["Next"] != StateRerunUnknown {
		t.Errorf("load = %v", states[StateRerunLoad])
	}
}
