package when_test

import (
	"fmt"

	"github.com/stepline/stepline/compiler/when"
)

func ExampleCondition() {
	e, err := when.Parse(`steps['first-line-triage'].confidence > 0.8 and steps.triage.action != "ignore"`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range when.Paths(e) {
		fmt.Println(p.Root, p.Segments)
	}
	cond, err := when.Condition(e, when.Scope{"steps": {Expr: "$steps", Keyed: 2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cond)
	// Output:
	// steps [first-line-triage confidence]
	// steps [triage action]
	// {% ($type($steps.`first-line-triage`.confidence) = 'number' ? $steps.`first-line-triage`.confidence > 0.8 : false) and $not($steps.triage.action = 'ignore') %}
}

func ExampleParse_error() {
	_, err := when.Parse(`{{ steps.check.ok }}`)
	fmt.Println(err)
	_, err = when.Parse(`steps.first-line-triage.ok`)
	fmt.Println(err)
	// Output:
	// 1:1: write the bare expression "steps.check.ok", without {{ }}
	// 1:12: unexpected "-" in a name: write "steps['first-line-triage']" or "steps.first_line_triage"
}
