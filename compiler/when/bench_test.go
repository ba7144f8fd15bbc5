package when

import "testing"

var benchConditions = []string{
	`steps.triage.action == "restart"`,
	`steps['first-line-triage'].confidence > 0.8 and steps.triage.action not in ["ignore", "noop"]`,
	`(steps.check.ok or steps.retry.summary is defined) and not steps.triage.tags.flaky and service == "api"`,
}

func BenchmarkParse(b *testing.B) {
	for _, src := range benchConditions {
		b.Run(src[:12], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSONata(b *testing.B) {
	for _, src := range benchConditions {
		e, err := Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(src[:12], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := JSONata(e, testScope); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
