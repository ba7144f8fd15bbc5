package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/llmoutput"
)

// instantModel asks for one tool call per turn until its last turn,
// where it answers: no model time.
type instantModel struct {
	turns int
	call  ModelReply
	final ModelReply
}

func (m *instantModel) Turn(_ context.Context, req ModelRequest) (ModelReply, error) {
	if len(req.Messages)/2 >= m.turns-1 {
		return m.final, nil
	}
	return m.call, nil
}

// instantTools answers every call at once: no tool time.
type instantTools struct{}

func (instantTools) Tools(context.Context, Server) ([]Tool, error) {
	return []Tool{{Name: "query", Description: "Run a query.", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (instantTools) Call(context.Context, Server, string, json.RawMessage) (ToolOutput, error) {
	return ToolOutput{Content: `{"series": [{"value": 0.31, "labels": {"service": "checkout-api"}}]}`}, nil
}

// BenchmarkLoopIteration measures the loop's own work per iteration,
// outside model and tool time: a model and a toolbox that answer at once,
// ten turns that each call one tool (name resolution, policy decision,
// bounds, trace) and a final answer judged by the runner. It reports
// µs per iteration (the target is at most 50):
//
//	go test -run '^$' -bench LoopIteration ./shared/agent
func BenchmarkLoopIteration(b *testing.B) {
	const turns = 11
	a := testAgent("")
	a.Profile.MaxIterations = turns
	a.Policy.Rules = []Rule{{Effect: Deny, Server: "tools", Tool: "delete*", Reason: "read only"},
		{Effect: Deny, Tool: "execute_*", InputRegex: `(?i)\bdrop\b`}}
	m := &instantModel{turns: turns,
		call:  ModelReply{Model: "m", Provider: "p", Calls: []ToolCall{{ID: "c", Name: "tools__query", Arguments: json.RawMessage(`{"expr":"rate(http_errors_total{service=\"checkout-api\"}[5m])"}`)}}},
		final: ModelReply{Model: "m", Provider: "p", FinishReason: llmoutput.FinishStop, Text: `{"confidence": 0.8, "summary": "error rate doubled after the 17:30 deploy", "next_step_context": "roll back"}`},
	}
	l := &Loop{Agent: a, Model: m, Tools: instantTools{}, Runner: &llmoutput.Runner{}, Schema: llmoutput.ContractSchema()}
	l.Instruction = l.Schema.Instruction()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := l.Run(ctx, "investigate checkout-api", time.Now().Add(time.Minute))
		if err != nil || c.Iterations != turns {
			b.Fatalf("%v after %d iterations", err, c.Iterations)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns)/1e3, "µs/iteration")
}

func testAgent(url string) *Resolved {
	return &Resolved{
		Profile: Profile{Name: "sre", Version: "v1", Soul: "You are an SRE.", Tools: []ToolGrant{{Server: "tools"}}},
		Servers: map[string]Server{"tools": {Name: "tools", URL: url}},
		Policy:  Policy{Default: Allow},
	}
}
