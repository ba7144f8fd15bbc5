package gate_test

import (
	"fmt"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
)

// Compile refuses what any path would refuse, with the executor checks the
// compiler alone does not run; the environment decides warnings only.
func ExampleCompile() {
	src := []byte(`name: triage
steps:
  - name: classify
    executor: gateway
    executor_config: {model: gpt-4o-mini, temperature: 7}
`)
	_, sm, ds := gate.Compile("triage.yaml", src, settings.Defaults{OpenAIBaseURL: "https://api.openai.com/v1"})
	fmt.Print(ds)
	fmt.Println(sm == nil)
	// Output:
	// triage.yaml:5:22: step "classify": executor_config.temperature: must be between 0 and 2, got 7
	// true
}

// Without OPENAI_BASE_URL where it is checked, a gateway step without
// base_url still compiles, with a warning.
func ExampleCompile_warning() {
	src := []byte(`name: triage
steps:
  - name: classify
    executor: gateway
    executor_config: {model: gpt-4o-mini}
`)
	_, sm, ds := gate.Compile("triage.yaml", src, settings.Defaults{})
	fmt.Print(ds)
	fmt.Println(sm != nil)
	// Output:
	// triage.yaml:5:22: warning: step "classify": executor_config.base_url: not set, and OPENAI_BASE_URL is not set here: the step fails unless OPENAI_BASE_URL is set where it runs
	// true
}
