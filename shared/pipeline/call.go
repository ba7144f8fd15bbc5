package pipeline

import "time"

// ExecutorCall is one step's use of an executor, as the step runner
// (package shared/steprun) asks the executors (package shared/executor,
// whose Call it is) for a provider or an agent. It lives here, beside the
// steps, so that a runner need not link the executors and their
// dependencies (the MCP SDK) to name a call: the approval function runs
// the step runner but no executor.
type ExecutorCall struct {
	Executor string         // executor name
	Step     string         // the step's key: "triage", "triage:verifier", "fan/0"
	Config   map[string]any // executor_config, Liquid rendered, ${NAME} unresolved
	Stage    string         // StageProduction, or StageTesting (the default: any other value counts as testing)
	Timeout  time.Duration  // the step's timeout; 0: none
}
