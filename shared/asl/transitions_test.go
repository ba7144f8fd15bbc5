package asl

import (
	"reflect"
	"testing"
)

// TestTransitions pins the ways out of each kind of state and their
// order: what both graph drawers (stepline graph, the web UI) rely on.
func TestTransitions(t *testing.T) {
	tests := []struct {
		name string
		st   State
		want []Transition
	}{
		{"pass", &Pass{Next: "b"}, []Transition{{To: "b"}}},
		{"end", &Pass{End: true}, nil},
		{"task", &Task{Next: "b", Catch: []Catcher{{ErrorEquals: []string{"States.ALL"}, Next: "f"}}},
			[]Transition{{To: "b"}, {To: "f", Kind: KindCatch, Errors: []string{"States.ALL"}}}},
		{"choice", &Choice{Choices: []ChoiceRule{{Condition: "{% a %}", Next: "x"}, {Condition: "{% b %}", Next: "y"}}, Default: "z"},
			[]Transition{{To: "x", Kind: KindChoice, Condition: "{% a %}"}, {To: "y", Kind: KindChoice, Condition: "{% b %}"}, {To: "z", Kind: KindDefault}}},
		{"choice without default", &Choice{Choices: []ChoiceRule{{Condition: "{% a %}", Next: "x"}}},
			[]Transition{{To: "x", Kind: KindChoice, Condition: "{% a %}"}}},
		{"wait", &Wait{Next: "b"}, []Transition{{To: "b"}}},
		{"parallel", &Parallel{Branches: []Branch{{StartAt: "p"}, {StartAt: "q"}}, Next: "n", Catch: []Catcher{{ErrorEquals: []string{"X"}, Next: "f"}}},
			[]Transition{{To: "p", Kind: KindBranch}, {To: "q", Kind: KindBranch, Branch: 1}, {To: "n"}, {To: "f", Kind: KindCatch, Errors: []string{"X"}}}},
		{"map", &Map{ItemProcessor: ItemProcessor{StartAt: "i"}, Next: "n"},
			[]Transition{{To: "i", Kind: KindItem}, {To: "n"}}},
		{"succeed", &Succeed{}, nil},
	}
	for _, tt := range tests {
		if got := Transitions(tt.st); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
