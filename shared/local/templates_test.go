package local

import (
	"slices"
	"testing"

	"github.com/stepline/stepline/shared/asl"
)

// TestPromptTemplates finds the prompt templates of Tasks at every depth
// of their arguments and in states nested in Parallel and Map states, and
// nothing else.
func TestPromptTemplates(t *testing.T) {
	task := func(args any) *asl.Task {
		return &asl.Task{Resource: asl.ResourceLambdaInvoke, Arguments: args, End: true}
	}
	var inner asl.States
	if err := inner.Add("Inner", task(map[string]any{"Payload": map[string]any{"step": map[string]any{"prompt_template": "map {{ x }}"}}})); err != nil {
		t.Fatal(err)
	}
	var branch asl.States
	if err := branch.Add("B", task(map[string]any{"Payload": map[string]any{"step": map[string]any{
		"prompt_template": "branch", "verifier": map[string]any{"prompt_template": "verify {{ y }}"}}}})); err != nil {
		t.Fatal(err)
	}
	var top asl.States
	for name, st := range map[string]asl.State{
		"T":    task(map[string]any{"Payload": map[string]any{"list": []any{map[string]any{"prompt_template": "in a list"}}, "other": "not a template {{ z }}"}}),
		"P":    &asl.Parallel{Branches: []asl.Branch{{StartAt: "B", States: branch}}, End: true},
		"M":    &asl.Map{ItemProcessor: asl.ItemProcessor{StartAt: "Inner", States: inner}, End: true},
		"Pass": &asl.Pass{Output: map[string]any{"prompt_template": "not a Task's"}, End: true},
	} {
		if err := top.Add(name, st); err != nil {
			t.Fatal(err)
		}
	}
	got := promptTemplates(top, nil)
	slices.Sort(got)
	want := []string{"branch", "in a list", "map {{ x }}", "verify {{ y }}"}
	if !slices.Equal(got, want) {
		t.Errorf("templates %q, want %q", got, want)
	}
}
