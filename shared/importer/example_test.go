package importer_test

import (
	"fmt"

	"github.com/stepline/stepline/shared/importer"
)

func ExampleConvertTemplate() {
	out, notes := importer.ConvertTemplate(`{{ steps.triage.confidence | round(2) }} {{ "P1" if severity == "critical" else "P2" }} {{ summary | title }}`)
	fmt.Println(out)
	for _, n := range notes {
		fmt.Printf("%d:%d %s: %s\n", n.Line, n.Col, n.Level, n.Kind)
	}
	// Output:
	// {{ steps.triage.confidence | round: 2 }} {% if severity == "critical" %}{{ "P1" }}{% else %}{{ "P2" }}{% endif %} {% vectorstep_unconverted %}{ { summary | title } }
	// 1:4 check: filter round
	// 1:45 converted: a if c else b
	// 1:89 needs a person: expression
}
