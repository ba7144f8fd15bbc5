package asl

import (
	"strings"
	"testing"
)

// TestCheckValueFields: a JSONata string's problems are reported at the
// field that holds it, however deep it sits; an Assign member's at
// Assign.<name>; a string that is not JSONata, and a reference where it is
// available, are no problem.
func TestCheckValueFields(t *testing.T) {
	const head = `{"QueryLanguage":"JSONata","StartAt":"X","States":{"X":`
	for _, c := range []struct {
		name, state string
		want        []string // the problems, each a substring; none: no problem
	}{
		{"assign member", `{"Type":"Pass","End":true,"Assign":{"a":"{% $states.result %}"}}`,
			[]string{`Assign.a: $states.result is not available here`}},
		{"assign member, nested", `{"Type":"Pass","End":true,"Assign":{"a":{"b":["{% $states.errorOutput %}"]}}}`,
			[]string{`Assign.a: $states.errorOutput is not available here`}},
		{"empty in an array", `{"Type":"Pass","End":true,"Output":[1,{"x":"{%  %}"}]}`,
			[]string{`Output: empty JSONata expression`}},
		{"both references", `{"Type":"Pass","End":true,"Output":"{% $states.result & $states.errorOutput %}"}`,
			[]string{`Output: $states.result is not available here`, `Output: $states.errorOutput is not available here`}},
		{"result in a Task's Output", `{"Type":"Task","Resource":"r","End":true,"Output":{"r":"{% $states.result %}"},"Assign":{"r":"{% $states.result %}"}}`, nil},
		{"errorOutput in a Catcher", `{"Type":"Task","Resource":"r","End":true,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"X","Output":"{% $states.errorOutput %}","Assign":{"e":"{% $states.errorOutput %}"}}]}`, nil},
		{"not JSONata", `{"Type":"Pass","End":true,"Output":"$states.result","Assign":{"a":"{% x"}}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(head + c.state + `}}`))
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}
