package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// Agents hands out the model and the toolbox of an agent step (satisfied
// by *executor.Registry).
type Agents interface {
	Agent(call pipeline.ExecutorCall, a *agent.Resolved) (agent.Model, agent.Toolbox, error)
}

// Record flags of agent steps.
const (
	// FlagTraceCut: the trace did not fit its record and there was no
	// artifact store to keep it whole; its last events were left out.
	FlagTraceCut = "trace_cut"
)

// TraceArtifact is the artifact key of a trace too large for its record,
// stored under the step segment "<record>.trace".
const TraceArtifact = "trace.json"

// agentRun is what an agent step's loops spent and recorded.
type agentRun struct {
	name, version string
	iterations    int
	trace         []agent.Event
}

func (h *Handler) agents() (Agents, bool) {
	if h.Agents != nil {
		return h.Agents, true
	}
	a, ok := h.Executors.(Agents)
	return a, ok
}

// agentCall runs a unit's agent: its tool loop with the rendered prompt,
// within the step's timeout. What it spent (tokens, cost, iterations, the
// trace) goes into res also when it fails.
func (t *taskRun) agentCall(ctx context.Context, u unit, cfg map[string]any, prompt string, res *result) (*llmoutput.Output, error) {
	agents, ok := t.h.agents()
	if !ok {
		return nil, fault.Errorf[fault.ConfigError]("step %q: agent %q: this step function has no agent runtime", u.name, u.agent.Profile.Name)
	}
	timeout := time.Duration(u.timeout) * time.Second
	model, tools, err := agents.Agent(pipeline.ExecutorCall{
		Executor: u.executor, Step: u.key, Config: cfg,
		Stage: string(t.req.Pipeline.Stage), Timeout: timeout,
	}, u.agent)
	if err != nil {
		return nil, err
	}
	loop := &agent.Loop{Agent: u.agent, Model: model, Tools: tools, Runner: t.h.runner, Schema: t.h.schema, Instruction: t.h.schema.Instruction(), Now: t.h.Now}
	dl, hasDL := ctx.Deadline()
	conv, err := loop.Run(ctx, prompt, agent.Deadline(t.h.now(), timeout, dl, hasDL))
	t.absorb(res, u.agent, conv)
	if err != nil {
		return nil, err
	}
	out := *conv.Output
	return &out, nil
}

// absorb adds what a loop's conversation spent and recorded to res: its
// usage (each model's calls priced by their own provider and model), its
// iterations, trace and flags, and the raw text of its accepted answer.
// conv may be nil (a loop that could not start): res still names the
// agent.
func (t *taskRun) absorb(res *result, a *agent.Resolved, conv *agent.Conversation) {
	if res.agent == nil {
		res.agent = &agentRun{name: a.Profile.Name, version: a.Profile.Version}
	}
	if conv == nil {
		return
	}
	if conv.Version != "" {
		res.agent.version = conv.Version // a remote runtime's agent version; equal to the profile's in-process
	}
	for _, cu := range conv.Usage {
		cost, priced := t.h.price(cu.Provider, cu.Model, llmoutput.Usage{InputTokens: cu.InputTokens, OutputTokens: cu.OutputTokens})
		res.usage.addCalls(cu.Calls, cu.InputTokens, cu.OutputTokens, cost, priced)
	}
	res.agent.iterations += conv.Iterations
	res.agent.trace = append(res.agent.trace, conv.Trace...)
	for _, f := range conv.Flags {
		if !slices.Contains(res.flags, f) {
			res.flags = append(res.flags, f)
		}
	}
	if c := conv.Completion; c != nil {
		res.raw = c.Content
	}
}

// summary is what a Response reports of an agent step's loops; nil for a
// step without an agent.
func (a *agentRun) summary() *task.AgentSummary {
	if a == nil {
		return nil
	}
	s := &task.AgentSummary{Agent: a.name, Iterations: a.iterations}
	for _, ev := range a.trace {
		if ev.Type == agent.EventToolCall {
			s.ToolCalls++
		}
	}
	return s
}

// attachAgent fills an agent step's record: the agent, its version, the
// loop's iterations, and the trace: in the record when it fits
// store.MaxTraceBytes, else in the artifact store with its reference in
// TraceRef, else (no artifact store) cut to fit and flagged.
func (t *taskRun) attachAgent(ctx context.Context, rec *store.StepRecord, res *result) error {
	a := res.agent
	if a == nil {
		return nil
	}
	rec.Agent, rec.AgentVersion, rec.Iterations = a.name, a.version, a.iterations
	trace := a.trace
	if trace == nil {
		trace = []agent.Event{}
	}
	b, err := json.Marshal(trace)
	if err != nil {
		return fmt.Errorf("encode the trace of %q: %w", rec.Name, err)
	}
	if len(b) <= store.MaxTraceBytes {
		rec.Trace = b
		return nil
	}
	if t.h.Artifacts != nil {
		ref, err := t.h.Artifacts.Put(ctx, t.req.Run.ID, rec.Name+".trace", TraceArtifact, string(b))
		if err != nil {
			return fmt.Errorf("store the trace of %q: %w", rec.Name, err)
		}
		rec.TraceRef = ref
		return nil
	}
	for len(trace) > 0 && len(b) > store.MaxTraceBytes {
		trace = trace[:len(trace)*3/4]
		b, _ = json.Marshal(trace)
	}
	rec.Trace = b
	rec.Flags = append(rec.Flags, FlagTraceCut)
	return nil
}
