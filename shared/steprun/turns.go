package steprun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// Agent steps that outlive one invocation (agent_turns Tasks).
const (
	// DefaultAgentInvocationBudget is how long one agent_turns Task goes
	// on calling the model before it hands the conversation back to the
	// state machine: no model call starts after it (the first one of a
	// Task always does). Lambda stops an invocation at 900 s; what is
	// left is for the call in flight and the hand-back.
	DefaultAgentInvocationBudget = 800 * time.Second
	// handBackMargin is kept before the invocation's own deadline (the
	// Lambda's) to keep the conversation and answer: a model call still
	// running then is given up, and the next Task makes it again.
	handBackMargin = 10 * time.Second
	// MaxConversationBytes bounds the conversation an agent step keeps
	// between its Tasks, as JSON: what the S3 artifact store reads back of
	// one object.
	MaxConversationBytes = maxArtifactBytes
)

// Artifact keys of a kept conversation, under the step segment
// "<record>.agent".
const (
	// ConversationLatest is the conversation after the step's latest model
	// call, rewritten after each one.
	ConversationLatest = "latest.json"
	// conversationTurn is the conversation a Task handed back after n
	// model calls, written once per hand-back under its number.
	conversationTurn = "turn-%d.json"
)

// conversationSegment is the artifact step segment of a record's kept
// conversation.
func conversationSegment(record string) string { return record + ".agent" }

// keptLoop is a conversation as kept in the artifact store between the
// model calls of an agent step that outlives one invocation.
type keptLoop struct {
	// From is the turn (model calls) the conversation the Task that kept
	// it started from held: a Task that continues turn n goes on from
	// latest.json only when it continues n too.
	From int `json:"from"`
	// StartedAt is when the step's first Task started.
	StartedAt    time.Time           `json:"started_at"`
	Conversation *agent.Conversation `json:"conversation"`
}

func (h *Handler) invocationBudget() time.Duration {
	if h.AgentInvocationBudget > 0 {
		return h.AgentInvocationBudget
	}
	return DefaultAgentInvocationBudget
}

// agentTurns runs one Task of a sequential agent step that outlives one
// invocation: it takes up the conversation the step's previous Task kept
// (or starts it), makes model calls (each one with the tool calls it asks
// for, and kept at once) while the invocation's budget lasts, and hands
// back with StatusContinue; once the agent has answered, it verifies,
// gates and records the step as a step Task does.
func (t *taskRun) agentTurns(ctx context.Context) (task.Response, error) {
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return task.Response{}, err
	}
	switch {
	case st.Name == "":
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: step config has no name")
	case st.Agent == nil:
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: an %s Task needs a step that runs a resolved agent", st.Name, task.ModeAgentTurns)
	case st.LoopUntil != nil:
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: loop_until cannot repeat an agent step that outlives one invocation", st.Name)
	case t.h.Artifacts == nil:
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: agent %q runs past one invocation and keeps its conversation in the artifact store, which this step function does not have", st.Name, st.Agent.Profile.Name)
	}
	agents, ok := t.h.agents()
	if !ok {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: agent %q: this step function has no agent runtime", st.Name, st.Agent.Profile.Name)
	}
	u := stepUnit(st)
	invStart := t.h.now()
	first := t.req.AgentLoop == nil
	ls := task.AgentLoop{}
	if !first {
		ls = *t.req.AgentLoop
	}
	started, deadline := invStart, agent.Deadline(invStart, time.Duration(u.timeout)*time.Second, time.Time{}, false)
	if !first {
		if started, err = time.Parse(time.RFC3339Nano, ls.StartedAt); err != nil {
			return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: agent_loop.started_at %q: %v", st.Name, ls.StartedAt, err)
		}
		if deadline, err = time.Parse(time.RFC3339Nano, ls.Deadline); err != nil {
			return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: agent_loop.deadline %q: %v", st.Name, ls.Deadline, err)
		}
	}
	attempt := ls.Retries + max(t.req.Attempt, 1)
	res := result{promptHash: promptHash(u.prompt)}
	kept, err := t.keptLoop(ctx, u, ls.Turn, first)
	if err != nil {
		return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
	}
	if first && kept != nil {
		// A retried first Task: the step started with the attempt that
		// kept the conversation.
		started, deadline = kept.StartedAt, kept.Conversation.Deadline
	}

	b := t.h.bindings(ctx, t.req, t.trig, scope{current: u.name})
	rctx := ctx // rendering stops at the step's timeout too
	if u.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, time.Duration(u.timeout)*time.Second)
		defer cancel()
	}
	prompt, err := t.h.render.render(rctx, u.name, "prompt_template", u.prompt, b)
	if err != nil {
		return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
	}
	res.prompt = prompt
	cfg, err := t.renderConfig(rctx, u.name, "executor_config", u.config, b)
	if err != nil {
		return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
	}
	model, tools, err := agents.Agent(pipeline.ExecutorCall{
		Executor: u.executor, Step: u.key, Config: cfg,
		Stage: string(t.req.Pipeline.Stage), Timeout: time.Duration(u.timeout) * time.Second,
	}, u.agent)
	if err != nil {
		return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
	}
	loop := &agent.Loop{Agent: u.agent, Model: model, Tools: tools, Runner: t.h.runner, Schema: t.h.schema, Instruction: t.h.schema.Instruction(), Now: t.h.Now}

	lt := loopTask{t: t, u: u, ls: ls, started: started, deadline: deadline}
	var conv *agent.Conversation
	if kept != nil {
		conv = kept.Conversation
		conv.Deadline = deadline // fixed at the step's start, carried
	} else {
		conv, err = loop.Start(ctx, prompt, deadline)
		if err == nil {
			err = lt.keep(ctx, conv)
		}
		if err != nil {
			t.absorb(&res, u.agent, conv)
			return t.stepFailed(ctx, st, attempt, started, &res, err, res.usage)
		}
	}

	// Model calls while the invocation's budget lasts: past soft, no call
	// starts; at hard (the invocation's own deadline, less the margin to
	// hand back), a call in flight is given up.
	soft := invStart.Add(t.h.invocationBudget())
	hard, bounded := ctx.Deadline()
	if bounded {
		hard = hard.Add(-handBackMargin)
		if hard.Before(soft) {
			soft = hard
		}
	}
	ran := 0
	// handBack hands kept back (nil: the conversation last kept); a
	// failure to keep it fails the Task with the loop so far, conv.
	handBack := func(kept *agent.Conversation) (task.Response, error) {
		resp, err := lt.handBack(ctx, kept)
		if err != nil {
			t.absorb(&res, u.agent, conv)
			return t.stepFailed(ctx, st, attempt, started, &res, err, stepUsage{})
		}
		return resp, nil
	}
	for !conv.Done {
		before := slices.Clone(conv.Usage)
		tctx, stop := ctx, context.CancelFunc(func() {})
		if bounded {
			tctx, stop = context.WithDeadline(ctx, hard)
		}
		err := loop.Turn(tctx, conv)
		cut := err != nil && tctx.Err() != nil && ctx.Err() == nil
		stop()
		// What the call spent counts once, under its turn and the Task
		// attempt that made it.
		if uerr := t.addUsage(ctx, lt.usageKey(conv.Iterations), t.spent(before, conv.Usage)); uerr != nil {
			return task.Response{}, uerr
		}
		if err != nil {
			if cut && ran > 0 {
				return handBack(nil)
			}
			if cut {
				err = fault.Errorf[fault.ExecutorTimeout]("step %q: agent %q: model call %d and its tool calls did not finish within one invocation; each must", st.Name, conv.Agent, conv.Iterations)
			}
			t.absorb(&res, u.agent, conv)
			return t.stepFailed(ctx, st, attempt, started, &res, err, stepUsage{})
		}
		ran++
		if !conv.Done && !t.h.now().Before(soft) {
			return handBack(conv) // keeps the conversation, under its turn too
		}
		if err := lt.keep(ctx, conv); err != nil {
			t.absorb(&res, u.agent, conv)
			return t.stepFailed(ctx, st, attempt, started, &res, err, stepUsage{})
		}
	}
	if ran > 0 && (u.verifier != nil || settleSeconds(st) > 0) && !t.h.now().Before(soft) {
		return handBack(conv) // the next Task verifies, grounds and checks
	}
	if need := time.Duration(settleSeconds(st)) * time.Second; ran > 0 && need > 0 && bounded && hard.Sub(t.h.now()) < need {
		return handBack(conv) // the judge and the checks need a fresh invocation
	}

	// The agent has answered: judged by the runner already, now verified,
	// gated and recorded as a single-invocation agent step is.
	t.absorb(&res, u.agent, conv)
	out := *conv.Output
	res.out, res.primary, res.effective = &out, out.Confidence, out.Confidence
	res.raw, res.model, res.provider = out.RawResponse, out.Model, out.Provider
	stored := stepUsage{} // the model calls' usage is added already
	if u.verifier != nil {
		vres := res
		vres.usage = stepUsage{}
		vres.flags = slices.Clone(res.flags)
		t.verify(ctx, u, b, &vres)
		spent := vres.usage
		vres.usage = res.usage
		if spent.calls > 0 {
			vres.usage.addCalls(spent.calls, spent.in, spent.out, costOf(spent), spent.cost != nil)
			stored = spent
		}
		res = vres
	}
	resp, err := t.stepDone(ctx, st, attempt, started, &res, &stored)
	if err != nil {
		return resp, err
	}
	resp.Agent.Tasks = ls.Tasks + 1
	return resp, nil
}

// settleSeconds is how long a step's grounding judge and its webhook and
// shell checks may take after its answer, at most: the sum of their
// timeouts (human checks wait in Tasks of their own).
func settleSeconds(st *pipeline.Step) int {
	n := 0
	if g := st.Grounding; g != nil {
		n += max(g.TimeoutSeconds, 0)
		if g.TimeoutSeconds <= 0 {
			n += pipeline.DefaultGroundingTimeout
		}
	}
	for _, c := range st.Checks {
		if c.Type == pipeline.CheckHuman {
			continue
		}
		if c.TimeoutSeconds > 0 {
			n += c.TimeoutSeconds
		} else {
			n += pipeline.DefaultCheckTimeout
		}
	}
	return n
}

func costOf(u stepUsage) float64 {
	if u.cost == nil {
		return 0
	}
	return *u.cost
}

// spent is the usage of the model calls made between two states of a
// conversation's per-model usage, priced.
func (t *taskRun) spent(before, after []agent.CallUsage) stepUsage {
	var u stepUsage
	for _, a := range after {
		d := a
		for _, b := range before {
			if b.Provider == a.Provider && b.Model == a.Model {
				d.Calls -= b.Calls
				d.InputTokens -= b.InputTokens
				d.OutputTokens -= b.OutputTokens
			}
		}
		if d.Calls == 0 && d.InputTokens == 0 && d.OutputTokens == 0 {
			continue
		}
		cost, priced := t.h.price(d.Provider, d.Model, llmoutput.Usage{InputTokens: d.InputTokens, OutputTokens: d.OutputTokens})
		u.addCalls(d.Calls, d.InputTokens, d.OutputTokens, cost, priced)
	}
	return u
}

// loopTask is what one agent_turns Task keeps and hands back.
type loopTask struct {
	t        *taskRun
	u        unit
	ls       task.AgentLoop // as the Task received it
	started  time.Time
	deadline time.Time
	last     []byte // the conversation last kept, as kept
}

// usageKey names the usage of model call n made by this Task's attempt:
// a call made again (by a retry, or by the next Task after a call was
// given up) counts again, one added twice (a write retried) does not.
func (lt *loopTask) usageKey(n int) string {
	return fmt.Sprintf("%s#turn%d.task%d.%d", lt.u.record, n, lt.ls.Tasks+1, max(lt.t.req.Attempt, 1))
}

// keep writes conv as the step's latest conversation.
func (lt *loopTask) keep(ctx context.Context, conv *agent.Conversation) error {
	b, err := lt.encode(conv, lt.ls.Turn)
	if err != nil {
		return err
	}
	if _, err := lt.t.h.Artifacts.Put(ctx, lt.t.req.Run.ID, conversationSegment(lt.u.record), ConversationLatest, string(b)); err != nil {
		return fmt.Errorf("keep the conversation of %q: %w", lt.u.record, err)
	}
	lt.last = b
	return nil
}

func (lt *loopTask) encode(conv *agent.Conversation, from int) ([]byte, error) {
	b, err := json.Marshal(keptLoop{From: from, StartedAt: lt.started.UTC(), Conversation: conv})
	if err != nil {
		return nil, fmt.Errorf("encode the conversation of %q: %w", lt.u.record, err)
	}
	limit := lt.t.h.maxConversation
	if limit <= 0 {
		limit = MaxConversationBytes
	}
	if len(b) > limit {
		return nil, fault.Errorf[fault.ConfigError]("step %q: agent %q: the conversation is %d bytes after %d model calls, over the %d bytes kept between invocations; lower the agent's max_iterations or trace_tool_result_max_chars",
			lt.u.name, conv.Agent, len(b), conv.Iterations, limit)
	}
	return b, nil
}

// handBack keeps the conversation under its turn number and answers
// StatusContinue: the state machine invokes the step's Task again with
// the AgentLoop it returns. conv nil hands back the conversation last
// kept (a model call was given up half-way).
func (lt *loopTask) handBack(ctx context.Context, conv *agent.Conversation) (task.Response, error) {
	t := lt.t
	if conv == nil {
		var k keptLoop
		if err := json.Unmarshal(lt.last, &k); err != nil || k.Conversation == nil {
			return task.Response{}, fmt.Errorf("hand back the conversation of %q: %v", lt.u.record, err)
		}
		conv = k.Conversation
	}
	b, err := lt.encode(conv, conv.Iterations)
	if err != nil {
		return task.Response{}, err
	}
	seg := conversationSegment(lt.u.record)
	if _, err := t.h.Artifacts.Put(ctx, t.req.Run.ID, seg, fmt.Sprintf(conversationTurn, conv.Iterations), string(b)); err != nil {
		return task.Response{}, fmt.Errorf("keep the conversation of %q: %w", lt.u.record, err)
	}
	if _, err := t.h.Artifacts.Put(ctx, t.req.Run.ID, seg, ConversationLatest, string(b)); err != nil {
		return task.Response{}, fmt.Errorf("keep the conversation of %q: %w", lt.u.record, err)
	}
	next := &task.AgentLoop{
		Turn: conv.Iterations, Tasks: lt.ls.Tasks + 1, Retries: lt.ls.Retries + max(t.req.Attempt, 1) - 1,
		StartedAt: lt.started.UTC().Format(time.RFC3339Nano), Deadline: lt.deadline.UTC().Format(time.RFC3339Nano),
	}
	run := &agentRun{name: conv.Agent, iterations: conv.Iterations, trace: conv.Trace}
	sum := run.summary()
	sum.Tasks = next.Tasks
	return task.Response{Status: task.StatusContinue, Step: lt.u.name, Output: json.RawMessage("null"),
		Usage: t.req.Usage, AgentLoop: next, Agent: sum}, nil
}

// keptLoop reads the conversation a Task that continues turn takes up:
// the step's latest one when the Task that kept it continued turn or a
// later one (so that a retried Task goes on from the model calls its
// failed attempt kept, and one whose answer was lost from the turn it
// handed back), else the one handed back at turn (the latest was kept by
// an attempt the state machine gave up on earlier). The step's first
// Task has none, unless it is retried and its failed attempt kept one;
// an error reading it then starts the conversation afresh (on S3 without
// list permission a missing object reads as access denied).
func (t *taskRun) keptLoop(ctx context.Context, u unit, turn int, first bool) (*keptLoop, error) {
	if first && t.req.Attempt <= 1 {
		return nil, nil
	}
	seg := conversationSegment(u.record)
	k, err := t.readKept(ctx, seg, ConversationLatest, u)
	switch {
	case first && err != nil:
		if !errors.Is(err, ErrArtifactNotFound) {
			t.h.log.Warn("a retried agent step starts its conversation afresh", "run", t.req.Run.ID, "step", u.record, "err", err.Error())
		}
		return nil, nil
	case first:
		return k, nil
	case err == nil && k.From >= turn && k.Conversation.Iterations >= turn:
		return k, nil
	case err != nil && !errors.Is(err, ErrArtifactNotFound):
		return nil, err
	}
	k, err = t.readKept(ctx, seg, fmt.Sprintf(conversationTurn, turn), u)
	if err != nil {
		return nil, err
	}
	if k.Conversation.Iterations != turn {
		return nil, fault.Errorf[fault.ConfigError]("step %q: the conversation kept at turn %d holds %d model calls", u.name, turn, k.Conversation.Iterations)
	}
	return k, nil
}

// readKept reads one kept conversation and checks that it is the step's
// agent's.
func (t *taskRun) readKept(ctx context.Context, seg, key string, u unit) (*keptLoop, error) {
	ref, err := t.h.Artifacts.Ref(t.req.Run.ID, seg, key)
	if err != nil {
		return nil, fmt.Errorf("read the conversation of %q: %w", u.record, err)
	}
	s, err := t.h.Artifacts.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("read the conversation of %q: %w", u.record, err)
	}
	if len(s) > MaxConversationBytes {
		return nil, fault.Errorf[fault.ConfigError]("step %q: the kept conversation %s is %d bytes, over %d", u.name, key, len(s), MaxConversationBytes)
	}
	var k keptLoop
	if err := json.Unmarshal([]byte(s), &k); err != nil || k.Conversation == nil {
		return nil, fault.Errorf[fault.ConfigError]("step %q: the kept conversation %s does not read: %v", u.name, key, err)
	}
	if name := u.agent.Profile.Name; k.Conversation.Agent != name {
		return nil, fault.Errorf[fault.ConfigError]("step %q: the kept conversation %s is agent %q's, not %q's", u.name, key, k.Conversation.Agent, name)
	}
	return &k, nil
}
