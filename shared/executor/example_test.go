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
