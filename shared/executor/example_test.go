package executor_test

import (
	"context"
	"fmt"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// A registry answering from scripted replies, as `stepline run
// --responses` does: no network, and no secret is needed.
func ExampleRegistry_Provider() {
	replies, err := executor.ParseResponses("responses.yaml", []byte(`
triage:
  - {error: "http 503"}
  - '{"confidence": 0.92, "summary": "disk full on db-1", "next_step_context": "clean /var/log"}'
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := executor.NewRegistry(executor.Deps{
		Secrets:   secret.Env(func(string) string { return "" }),
		Responses: replies,
	})
	p, err := reg.Provider(executor.Call{
		Executor: executor.Gateway,
		Step:     "triage",
		Config:   map[string]any{"base_url": "https://api.openai.com/v1", "model": "gpt-4o", "api_key": "${OPENAI_API_KEY}"},
		Stage:    executor.StageTesting,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := llmoutput.Request{Messages: []llmoutput.Message{{Role: llmoutput.RoleUser, Content: "Triage: disk full on db-1"}}}
	for i := 0; i < 2; i++ {
		c, err := p.Complete(context.Background(), req)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(c.Provider, c.Content)
	}
	fmt.Println(replies.Consumed())
	// Output:
	// error: step "triage": scripted error "http 503" (responses.yaml:3:5)
	// scripted {"confidence": 0.92, "summary": "disk full on db-1", "next_step_context": "clean /var/log"}
	// map[triage:2]
}

// CheckConfig validates an executor_config at compile time, offline.
func ExampleCheckConfig() {
	for _, err := range executor.CheckConfig("gateway", map[string]any{
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
	d := executor.DefaultsFromEnv(func(name string) string {
		return map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}[name]
	})
	fmt.Println(len(d.CheckConfig("gateway", map[string]any{"model": "gpt-4o"})))
	// Output:
	// 0
}
