package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// BenchmarkAgentStep compares an agent step whose model answers at once
// (zero tool calls; one granted MCP server listed) with today's
// single-call step, both scripted, alternating so that both see the same
// machine, with 100 earlier steps in the context as BenchmarkStep's
// middle case. It reports the medians and their ratio (the target is at
// most 1.2):
//
//	go test -run '^$' -bench AgentStep ./shared/steprun
func BenchmarkAgentStep(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const answer = `'{"confidence": 0.9, "summary": "looks fine", "next_step_context": "ok", "service": "api"}'`
	rs, err := executor.ParseResponses("bench.yaml", []byte("single: ["+answer+"]\ninvestigate: ["+answer+"]\n"+
		"tool_results:\n  grafana.query: ['1']\n"))
	if err != nil {
		b.Fatal(err)
	}
	reg := executor.NewRegistry(executor.Deps{Responses: rs})
	h := &Handler{Store: st, Executors: reg}
	steps := make(map[string]json.RawMessage, 100)
	for i := range 100 {
		steps[fmt.Sprintf("step-%d", i)] = json.RawMessage(fmt.Sprintf(
			`{"confidence":0.8,"summary":"summary of step %d","next_step_context":"context %d","items":[1,2,3]}`, i, i))
	}
	const prompt = "Service {{ service }} ({{ severity }}): {{ steps.step_0.summary }} / {{ steps['step-5'].next_step_context }} / {{ steps.step_9.confidence }}"
	single := newRequest(b, task.ModeStep, seqStep("single", prompt))
	a := sreAgent("")
	a.Profile.Tools = a.Profile.Tools[:1]
	st2 := agentStep("investigate")
	st2.PromptTemplate = prompt
	agentReq := agentRequest(b, st2, a)
	for _, r := range []*task.Request{&single, &agentReq} {
		r.Pipeline.Include = []string{"severity", "labels.service"}
		r.Steps = steps
		r.Run.StartedAt = time.Now().UTC().Format(time.RFC3339Nano)
	}
	var singles, agents []time.Duration
	step := func(req *task.Request, i int, into *[]time.Duration) {
		req.Attempt = i + 1
		start := time.Now()
		resp, err := h.Respond(ctx, *req)
		*into = append(*into, time.Since(start))
		if err != nil || resp.Status != task.StatusCompleted {
			b.Fatalf("%s: %v %v", resp.Step, resp.Status, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = rs.Restore(nil)
		if i%2 == 0 {
			step(&single, i, &singles)
			step(&agentReq, i, &agents)
		} else {
			step(&agentReq, i, &agents)
			step(&single, i, &singles)
		}
	}
	b.StopTimer()
	slices.Sort(singles)
	slices.Sort(agents)
	s, ag := singles[len(singles)/2], agents[len(agents)/2]
	b.ReportMetric(float64(s.Microseconds()), "single-p50-µs")
	b.ReportMetric(float64(ag.Microseconds()), "agent-p50-µs")
	b.ReportMetric(float64(ag)/float64(s), "ratio")
}

// BenchmarkAgentTurns measures what an agent step that outlives one
// invocation costs on top of the same step run in one: a scripted loop
// of ten tool-calling model calls and an answer, run as one step Task and
// as agent_turns Tasks handing back after every call (eleven Tasks,
// each keeping the conversation in the artifact directory), on SQLite.
// It reports the medians and the extra time per model call:
//
//	go test -run '^$' -bench AgentTurns -benchtime 200x ./shared/steprun
func BenchmarkAgentTurns(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const calls = 11
	var script strings.Builder
	script.WriteString("investigate:\n")
	for i := range calls - 1 {
		fmt.Fprintf(&script, "  - {tool_calls: [{name: grafana.query, arguments: {expr: \"q%d\"}}], input_tokens: 1000, output_tokens: 100}\n", i)
	}
	script.WriteString("  - {reply: '{\"confidence\": 0.9, \"summary\": \"found\", \"next_step_context\": \"\"}', input_tokens: 1000, output_tokens: 100}\n")
	script.WriteString("tool_results:\n  grafana.query: [")
	for i := range calls - 1 {
		if i > 0 {
			script.WriteString(", ")
		}
		fmt.Fprintf(&script, `'{"value": %d, "series": "%s"}'`, i, strings.Repeat("x", 500))
	}
	script.WriteString("]\n")
	rs, err := executor.ParseResponses("bench.yaml", []byte(script.String()))
	if err != nil {
		b.Fatal(err)
	}
	reg := executor.NewRegistry(executor.Deps{Responses: rs})
	h := &Handler{Store: st, Executors: reg, Artifacts: Dir{Root: filepath.Join(dir, "artifacts")}, AgentInvocationBudget: time.Nanosecond}
	a := sreAgent("")
	a.Profile.Tools = a.Profile.Tools[:1]
	single := agentRequest(b, agentStep("investigate"), a)
	long := agentStep("investigate")
	long.TimeoutSeconds = 3600
	turns := agentRequest(b, long, a)
	turns.Mode = task.ModeAgentTurns
	var singles, longs []time.Duration
	run := func(req task.Request, i int, into *[]time.Duration) {
		_ = rs.Restore(nil)
		req.Run.ID = fmt.Sprintf("run-%s-%d", req.Mode, i)
		req.Run.StartedAt = time.Now().UTC().Format(time.RFC3339Nano)
		start := time.Now()
		for range calls + 1 {
			resp, err := h.Respond(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if resp.Status != task.StatusContinue {
				*into = append(*into, time.Since(start))
				if resp.Status != task.StatusCompleted || resp.Agent.Iterations != calls {
					b.Fatalf("%s after %+v", resp.Status, resp.Agent)
				}
				return
			}
			req.AgentLoop = resp.AgentLoop
		}
		b.Fatal("the step did not end")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			run(single, i, &singles)
			run(turns, i, &longs)
		} else {
			run(turns, i, &longs)
			run(single, i, &singles)
		}
	}
	b.StopTimer()
	slices.Sort(singles)
	slices.Sort(longs)
	s, l := singles[len(singles)/2], longs[len(longs)/2]
	b.ReportMetric(float64(s.Microseconds()), "one-task-p50-µs")
	b.ReportMetric(float64(l.Microseconds()), "eleven-tasks-p50-µs")
	b.ReportMetric(float64((l-s).Microseconds())/calls, "extra-µs/call")
}
