package asl

import (
	"strings"
	"testing"
)

// TestCheckStatesLeavesTheSize: Check reports a definition over
// MaxDefinitionBytes; CheckStates, for callers with a limit of their own,
// does not, and reports everything else alike.
func TestCheckStatesLeavesTheSize(t *testing.T) {
	big := func(next string) *StateMachine {
		m := &StateMachine{QueryLanguage: JSONata, StartAt: "Big", States: States{}}
		if err := m.States.Add("Big", &Pass{Output: map[string]any{"pad": strings.Repeat("x", MaxDefinitionBytes)}, Next: next}); err != nil {
			t.Fatal(err)
		}
		if err := m.States.Add("Done", &Succeed{}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := big("Done")
	if ps := m.Check(); len(ps) != 1 || !strings.Contains(ps[0].Msg, "over the 1048576-byte limit") {
		t.Errorf("Check: %v, want the size alone", ps)
	}
	if ps := m.CheckStates(); len(ps) != 0 {
		t.Errorf("CheckStates: %v, want nothing", ps)
	}
	bad := big("Nowhere")
	if a, b := bad.Check(), bad.CheckStates(); len(a) == 0 || len(a) != len(b) || a[0] != b[0] {
		t.Errorf("a broken large definition: Check %v, CheckStates %v, want the same problems", a, b)
	}
}
