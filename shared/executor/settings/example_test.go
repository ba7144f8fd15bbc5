package settings_test

import (
	"fmt"

	"github.com/stepline/stepline/shared/executor/settings"
)

// CheckConfig validates an executor_config at compile time, offline.
func ExampleCheckConfig() {
	for _, err := range settings.CheckConfig("gateway", map[string]any{
		"model":       "{{ vars.model }}",
		"temperature": 7,
		"agent":       "triage",
	}) {
		fmt.Println(err)
	}
	// Output:
	// executor_config.temperature: must be between 0 and 2, got 7
	// executor_config.agent: unknown key, ignored
	// executor_config.base_url: not set, and OPENAI_BASE_URL is not set here: the step fails unless OPENAI_BASE_URL is set where it runs
}

// The environment's OPENAI_BASE_URL stands in for a step's base_url: main
// reads it and passes it in, to the checks as to the Registry.
func ExampleDefaults_CheckConfig() {
	d := settings.DefaultsFromEnv(func(name string) string {
		return map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}[name]
	})
	fmt.Println(len(d.CheckConfig("gateway", map[string]any{"model": "gpt-4o"})))
	// Output:
	// 0
}
