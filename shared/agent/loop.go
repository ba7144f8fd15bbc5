package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/telemetry"
)

// Bounds of one agent step's loop. Each is checked where the value
// arrives; hitting one is reported to the model as a tool error (it can
// go on and answer) and, where it cuts, flagged on the step's record.
const (
	// MaxToolCallsPerTurn is how many of one reply's tool calls run; the
	// others are answered with an error.
	MaxToolCallsPerTurn = 16
	// MaxArgumentsBytes bounds one call's JSON arguments.
	MaxArgumentsBytes = 16 << 10
	// MaxToolResultBytes bounds what one tool answer sends back to the
	// model; the rest is cut, with a note saying how much was left out.
	MaxToolResultBytes = 32 << 10
	// MaxToolOutputBytes bounds the tool output one step sends the model
	// in all; past it, calls are answered with an error asking for the
	// answer.
	MaxToolOutputBytes = 1 << 20
	// MaxTurnTextBytes bounds the text of a turn with tool calls kept in
	// the conversation (a final answer is judged within the runner's own
	// limits).
	MaxTurnTextBytes = 64 << 10
	// MaxTools bounds the tools offered to the model (OpenAI takes 128).
	MaxTools = 128
	// MaxToolNameBytes bounds a granted tool's name (the MCP
	// specification's 128 characters).
	MaxToolNameBytes = 128
	// MaxToolDescriptionBytes bounds a tool's description as offered to
	// the model; the rest is cut.
	MaxToolDescriptionBytes = 4 << 10
	// MaxToolSchemaBytes bounds a granted tool's input schema (JSON).
	MaxToolSchemaBytes = 32 << 10
	// MaxToolSpecsBytes bounds the tools offered to the model in all, as
	// JSON (name, description, schema): they go with every model call
	// and are kept in the conversation.
	MaxToolSpecsBytes = 512 << 10
	// DefaultDeadline is the loop's time when neither the step nor the
	// caller's context sets one.
	DefaultDeadline = 10 * time.Minute
)

// Record flags of an agent step.
const (
	FlagToolDenied          = "tool_denied"           // the policy refused a call
	FlagToolResultTruncated = "tool_result_truncated" // a tool_result in the trace was cut to trace_tool_result_max_chars
	FlagToolOutputCut       = "tool_output_cut"       // a tool's answer to the model was cut to MaxToolResultBytes, or the step's MaxToolOutputBytes was spent
)

// Limits are a profile's limits with the defaults filled in.
type Limits struct {
	MaxIterations  int
	ToolTimeout    time.Duration
	TraceMaxChars  int
	ToolResultMax  int // bytes of one answer sent to the model
	ToolOutputMax  int // bytes of all answers sent to the model
	CallsPerTurn   int
	ArgumentsBytes int
}

// LimitsOf returns p's limits, defaults for what it leaves at zero.
func LimitsOf(p Profile) Limits {
	l := Limits{
		MaxIterations:  p.MaxIterations,
		ToolTimeout:    time.Duration(p.ToolTimeoutSeconds) * time.Second,
		TraceMaxChars:  p.TraceToolResultMaxChars,
		ToolResultMax:  MaxToolResultBytes,
		ToolOutputMax:  MaxToolOutputBytes,
		CallsPerTurn:   MaxToolCallsPerTurn,
		ArgumentsBytes: MaxArgumentsBytes,
	}
	if l.MaxIterations <= 0 {
		l.MaxIterations = DefaultMaxIterations
	}
	if l.ToolTimeout <= 0 {
		l.ToolTimeout = DefaultToolTimeoutSeconds * time.Second
	}
	if l.TraceMaxChars <= 0 {
		l.TraceMaxChars = DefaultTraceToolResultMaxChars
	}
	return l
}

// Deadline is when a loop that starts at now must have its answer: the
// step's timeout (0: none) and the caller's deadline (ok false: none),
// the earlier, less a margin to record the step in (a twentieth, between
// 1 and 10 seconds); DefaultDeadline from now when neither is set.
func Deadline(now time.Time, stepTimeout time.Duration, ctxDeadline time.Time, ok bool) time.Time {
	var end time.Time
	if stepTimeout > 0 {
		end = now.Add(stepTimeout)
	}
	if ok && (end.IsZero() || ctxDeadline.Before(end)) {
		end = ctxDeadline
	}
	if end.IsZero() {
		return now.Add(DefaultDeadline)
	}
	margin := min(max(end.Sub(now)/20, time.Second), 10*time.Second)
	return end.Add(-margin)
}

// CallUsage is what the calls to one model used.
type CallUsage struct {
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

// Conversation is a loop's state between turns. It encodes to JSON and
// back without loss, so a loop can stop after any Turn and go on
// elsewhere (another invocation, another process) from the stored value.
//
// Its size is bounded: the tools offered, at most MaxToolSpecsBytes;
// at most Limits.MaxIterations model turns, each
// holding at most MaxTurnTextBytes of text and MaxToolCallsPerTurn calls
// of MaxArgumentsBytes (about 320 KiB, twice that with a provider's
// native copy), at most MaxToolOutputBytes of tool output in all, each
// rejected final answer within the runner's reply limit, and the trace,
// whose tool results are cut to the profile's trace_tool_result_max_chars.
// With the defaults (20 iterations) that is at most about 15 MiB, and
// typically a few tens of KiB; Size measures it.
type Conversation struct {
	Agent    string     `json:"agent"`
	Version  string     `json:"version"`
	System   string     `json:"system"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// Names maps each wire name the model sees to the tool it stands for.
	Names map[string]ToolName `json:"names,omitempty"`
	// Iterations counts the model calls made: turns with tool calls,
	// final answers and re-asks alike.
	Iterations int `json:"iterations"`
	// Answers counts the final answers judged (the runner's attempts).
	Answers int `json:"answers"`
	// ToolBytes is the tool output sent to the model so far.
	ToolBytes int       `json:"tool_bytes"`
	Deadline  time.Time `json:"deadline"`
	Trace     []Event   `json:"trace"`
	// Usage is per model, in the order first called.
	Usage []CallUsage `json:"usage,omitempty"`
	Flags []string    `json:"flags,omitempty"`
	// Done is set once a final answer was accepted: Output holds it,
	// Completion the call that gave it.
	Done       bool                  `json:"done,omitempty"`
	Output     *llmoutput.Output     `json:"output,omitempty"`
	Completion *llmoutput.Completion `json:"completion,omitempty"`
}

// Size is the length of c encoded as JSON.
func (c *Conversation) Size() int {
	b, _ := json.Marshal(c)
	return len(b)
}

// Tokens sums Usage.
func (c *Conversation) Tokens() llmoutput.Usage {
	var u llmoutput.Usage
	for _, cu := range c.Usage {
		u.InputTokens += cu.InputTokens
		u.OutputTokens += cu.OutputTokens
	}
	return u
}

func (c *Conversation) flag(f string) {
	if !slices.Contains(c.Flags, f) {
		c.Flags = append(c.Flags, f)
	}
}

func (c *Conversation) addUsage(r ModelReply) {
	for i := range c.Usage {
		if c.Usage[i].Provider == r.Provider && c.Usage[i].Model == r.Model {
			c.Usage[i].Calls++
			c.Usage[i].InputTokens += r.Usage.InputTokens
			c.Usage[i].OutputTokens += r.Usage.OutputTokens
			return
		}
	}
	c.Usage = append(c.Usage, CallUsage{Provider: r.Provider, Model: r.Model, Calls: 1, InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens})
}

// Loop runs an agent's tool loop: call the model with the profile's soul
// as system prompt, the step's prompt and the granted tools; run the
// calls it asks for, each decided by the policy first; feed the results
// back; until its final answer (a turn without tool calls) is a valid
// LLMOutput, judged by the structured-output runner (Runner.Judge: a
// rejected answer is re-asked with feedback, and each re-ask is an
// iteration like any other model call).
//
// Only the model's final answer is parsed. Tool output is text handed to
// the model and recorded in the trace; it never reaches the step's
// output, its name, the runner's reserved fields or another step.
//
// Start and Turn are the loop's two halves, so that a caller can run it
// a turn at a time and keep the Conversation between turns; Run runs it
// whole in-process. A Loop holds no state of its own and may run any
// number of conversations at once.
type Loop struct {
	Agent  *Resolved
	Model  Model
	Tools  Toolbox
	Runner *llmoutput.Runner
	Schema *llmoutput.OutputSchema
	// Instruction is Schema's instruction when the caller keeps it
	// computed (it is the same for every step); "": Start asks the
	// Runner for it.
	Instruction string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loop) check() error {
	switch {
	case l.Agent == nil:
		return fault.Errorf[fault.ConfigError]("agent: the step carries no agent")
	case l.Model == nil:
		return fault.Errorf[fault.ConfigError]("agent %q: no model", l.Agent.Profile.Name)
	case l.Runner == nil || l.Schema == nil:
		return fault.Errorf[fault.ConfigError]("agent %q: no structured-output runner", l.Agent.Profile.Name)
	case len(l.Agent.Profile.Tools) > 0 && l.Tools == nil:
		return fault.Errorf[fault.ConfigError]("agent %q: no toolbox for its tools", l.Agent.Profile.Name)
	}
	return nil
}

// Run starts a conversation on prompt and runs turns until the model's
// answer is accepted. The Conversation is returned also with an error,
// for the record: its trace, iterations and usage say what was spent.
func (l *Loop) Run(ctx context.Context, prompt string, deadline time.Time) (*Conversation, error) {
	c, err := l.Start(ctx, prompt, deadline)
	if err != nil {
		return c, err
	}
	for !c.Done {
		if err := l.Turn(ctx, c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Start lists the granted tools of every server the profile names and
// returns the conversation's first state: the system prompt (the soul,
// then the answer's instruction), the prompt as the first user message,
// the tools by their wire names. A server that cannot be reached is a
// *fault.ExecutorUnavailable; a profile that names a server the step
// does not carry, a *fault.ConfigError.
func (l *Loop) Start(ctx context.Context, prompt string, deadline time.Time) (*Conversation, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	p := l.Agent.Profile
	c := &Conversation{Agent: p.Name, Version: p.Version, Deadline: deadline, Names: map[string]ToolName{}, Trace: []Event{}}
	if l.Instruction != "" && !l.Runner.SkipInstruction {
		// As Runner.Instruct writes it: the soul, a blank line, the instruction.
		c.System = strings.TrimRight(p.Soul, "\n")
		if c.System != "" {
			c.System += "\n\n"
		}
		c.System += l.Instruction
	} else {
		msgs, err := l.Runner.Instruct([]llmoutput.Message{{Role: llmoutput.RoleSystem, Content: p.Soul}}, l.Schema)
		if err != nil {
			return c, err
		}
		c.System = msgs[0].Content
	}
	c.Messages = []Message{{Role: RoleUser, Text: prompt}}
	sctx, cancel := context.WithTimeout(ctx, deadline.Sub(l.now()))
	defer cancel()
	specs := 0 // bytes of c.Tools as JSON
	for _, g := range p.Tools {
		srv, ok := l.Agent.Servers[g.Server]
		if !ok {
			return c, fault.Errorf[fault.ConfigError]("agent %q: tools name MCP server %q, which the step does not carry", p.Name, g.Server)
		}
		if srv.Name == "" {
			srv.Name = g.Server
		}
		tools, err := l.Tools.Tools(sctx, srv)
		if err != nil {
			if deadlineHit(ctx, sctx) {
				return c, l.deadlineErr(c, fmt.Sprintf("listing the tools of MCP server %q", g.Server))
			}
			return c, fmt.Errorf("agent %q: %w", p.Name, err)
		}
		for _, t := range tools {
			if !granted(g, t.Name) {
				continue
			}
			n := ToolName{Server: g.Server, Tool: t.Name}
			if slices.ContainsFunc(c.Tools, func(s ToolSpec) bool { return c.Names[s.Name] == n }) {
				continue // granted twice
			}
			if len(c.Tools) == MaxTools {
				return c, fault.Errorf[fault.ConfigError]("agent %q: its servers offer more than %d granted tools; narrow its tools with globs", p.Name, MaxTools)
			}
			if len(t.Name) > MaxToolNameBytes {
				head, _ := cutBytes(t.Name, 32)
				return c, fault.Errorf[fault.ConfigError]("agent %q: MCP server %q offers a tool whose name is %d bytes, over the %d a tool's may be (%q); leave it out of the agent's tools with globs",
					p.Name, g.Server, len(t.Name), MaxToolNameBytes, head+"…")
			}
			schema := t.InputSchema
			if len(schema) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			if len(schema) > MaxToolSchemaBytes {
				return c, fault.Errorf[fault.ConfigError]("agent %q: MCP server %q tool %q: its input schema is %d bytes, over the %d a tool's may be; leave it out of the agent's tools with globs",
					p.Name, g.Server, t.Name, len(schema), MaxToolSchemaBytes)
			}
			desc, _ := cutBytes(t.Description, MaxToolDescriptionBytes)
			wire := wireName(n, c.Names)
			spec := ToolSpec{Name: wire, Description: desc, InputSchema: schema}
			b, err := json.Marshal(spec)
			if err != nil {
				return c, fault.Errorf[fault.ConfigError]("agent %q: MCP server %q tool %q: its input schema is not JSON: %v", p.Name, g.Server, t.Name, err)
			}
			if specs += len(b); specs > MaxToolSpecsBytes {
				return c, fault.Errorf[fault.ConfigError]("agent %q: the granted tools' names, descriptions and schemas are over %d bytes (at %s, %d bytes); narrow the agent's tools with globs",
					p.Name, MaxToolSpecsBytes, n, specs)
			}
			c.Names[wire] = n
			c.Tools = append(c.Tools, spec)
		}
	}
	return c, nil
}

// granted reports whether a grant covers tool: every tool without globs,
// else those a glob matches.
func granted(g ToolGrant, tool string) bool {
	if len(g.Tools) == 0 {
		return true
	}
	for _, pat := range g.Tools {
		if MatchGlob(pat, tool) {
			return true
		}
	}
	return false
}

func deadlineHit(parent, bounded context.Context) bool {
	return parent.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded)
}

func (l *Loop) deadlineErr(c *Conversation, doing string) error {
	return fault.Errorf[fault.AgentDeadlineExceeded]("agent %q: no valid answer by the step's deadline (%s), after %d iterations; it ran out while %s",
		c.Agent, c.Deadline.UTC().Format(time.RFC3339), c.Iterations, doing)
}

// Turn makes one model call from c and acts on the reply: runs the tool
// calls it asks for and appends their results, or judges its final
// answer (accepted: c.Done; rejected with re-asks left: the feedback is
// appended). Errors: *fault.AgentIterationsExhausted when c has made
// max_iterations calls without an accepted answer,
// *fault.AgentDeadlineExceeded when c.Deadline passes, the runner's
// *fault.InvalidOutput or *fault.ModelRefused when the answer stays
// invalid or is refused, the model's and the toolbox's typed faults, and
// ctx's error.
func (l *Loop) Turn(ctx context.Context, c *Conversation) error {
	ctx, span := telemetry.Start(ctx, "agent_iteration", trace.SpanKindInternal)
	err := l.turn(ctx, c)
	endIteration(span, c)
	telemetry.End(span, err)
	return err
}

func (l *Loop) turn(ctx context.Context, c *Conversation) error {
	if err := l.check(); err != nil {
		return err
	}
	if c.Done {
		return nil
	}
	lim := LimitsOf(l.Agent.Profile)
	if c.Iterations >= lim.MaxIterations {
		return fault.Errorf[fault.AgentIterationsExhausted]("agent %q: no valid answer within max_iterations %d", c.Agent, lim.MaxIterations)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !l.now().Before(c.Deadline) {
		return l.deadlineErr(c, "waiting to call the model")
	}
	// The time left by the loop's clock (Now), as a timeout: the clock may
	// be a test's, the context's deadlines are the real one's.
	tctx, cancel := context.WithTimeout(ctx, c.Deadline.Sub(l.now()))
	defer cancel()
	p := l.Agent.Profile
	spec := l.Schema.Spec()
	c.Iterations++
	mctx, span := telemetry.Start(tctx, telemetry.OpChat, trace.SpanKindClient)
	reply, err := l.Model.Turn(mctx, ModelRequest{
		System: c.System, Messages: c.Messages[:len(c.Messages):len(c.Messages)], Tools: c.Tools, Schema: &spec,
		MaxTokens: p.MaxTokens, Temperature: p.Temperature, ThinkingLevel: l.Agent.ThinkingLevel,
	})
	endModelCall(span, l.Agent, reply, err)
	if err != nil {
		if deadlineHit(ctx, tctx) {
			return l.deadlineErr(c, "waiting for the model")
		}
		return err
	}
	c.addUsage(reply)
	if reply.AgentVersion != "" {
		c.Version = reply.AgentVersion
	}
	turn := Message{Role: RoleAssistant, Text: reply.Text, Native: reply.Native, NativeFormat: reply.NativeFormat}
	switch {
	case reply.Trace != nil:
		c.remoteTrace(reply.Trace)
	case strings.TrimSpace(reply.Text) != "":
		text, cut, chars := cutChars(reply.Text, lim.TraceMaxChars)
		c.Trace = append(c.Trace, Event{Type: EventText, Iteration: c.Iterations, Content: text, Truncated: cut, Chars: charsIf(cut, chars)})
	}
	if len(reply.Calls) == 0 {
		return l.judge(c, turn, reply)
	}
	turn.Text, _ = cutBytes(turn.Text, MaxTurnTextBytes)
	turn.Calls = make([]ToolCall, len(reply.Calls))
	for i, call := range reply.Calls {
		if call.ID == "" {
			call.ID = "call_" + strconv.Itoa(c.Iterations) + "_" + strconv.Itoa(i+1)
		}
		if len(call.Arguments) > lim.ArgumentsBytes {
			// Kept as a short JSON string: the conversation stays bounded,
			// and the call is refused below for its size.
			head, _ := cutBytes(string(call.Arguments), 256)
			call.Arguments, _ = json.Marshal(head + "…")
		}
		call.Arguments = jsonOrText(call.Arguments)
		turn.Calls[i] = call
	}
	c.Messages = append(c.Messages, turn)
	if c.Iterations >= lim.MaxIterations {
		for _, call := range turn.Calls {
			c.Trace = append(c.Trace, l.callEvent(c, call, lim))
		}
		return fault.Errorf[fault.AgentIterationsExhausted]("agent %q: no valid answer within max_iterations %d (the last reply asked for %d more tool calls)", c.Agent, lim.MaxIterations, len(turn.Calls))
	}
	results := make([]ToolResult, 0, len(turn.Calls))
	for i, call := range turn.Calls {
		r, err := l.runCall(ctx, tctx, c, call, i, lim)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	c.Messages = append(c.Messages, Message{Role: RoleUser, Results: results})
	return nil
}

// remoteTrace appends the events a remote runtime recorded for one call,
// their iterations numbered after those already in the trace, and flags
// what they report (a denied call, a cut result).
func (c *Conversation) remoteTrace(events []Event) {
	base := 0
	for _, ev := range c.Trace {
		base = max(base, ev.Iteration)
	}
	for _, ev := range events {
		ev.Iteration = base + max(ev.Iteration, 1)
		ev.Arguments = jsonOrText(ev.Arguments)
		switch {
		case ev.Type == EventToolDenied:
			c.flag(FlagToolDenied)
		case ev.Type == EventToolResult && ev.Truncated:
			c.flag(FlagToolResultTruncated)
		}
		c.Trace = append(c.Trace, ev)
	}
}

// jsonOrText returns raw when it is JSON (or empty), else raw's text as a
// JSON string (the form ToolCall.Arguments documents), so that the trace
// and the conversation always encode.
func jsonOrText(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func charsIf(cut bool, n int) int {
	if cut {
		return n
	}
	return 0
}

// judge hands a final answer to the runner.
func (l *Loop) judge(c *Conversation, turn Message, reply ModelReply) error {
	c.Answers++
	comp := llmoutput.Completion{Content: reply.Text, FinishReason: reply.FinishReason, Refusal: reply.Refusal,
		Model: reply.Model, Provider: reply.Provider, Usage: reply.Usage, Raw: reply.Raw}
	j, err := l.Runner.Judge(l.Schema, comp, c.Answers)
	if err != nil {
		return err
	}
	if j.OK {
		out := j.Data
		c.Done, c.Output, c.Completion = true, &out, &comp
		for _, f := range j.Flags {
			if f == llmoutput.FlagReservedFieldIgnored || f == llmoutput.FlagExecutorFieldIgnored {
				c.flag(f)
			}
		}
		c.Messages = append(c.Messages, turn)
		return nil
	}
	if !j.Again {
		c.Messages = append(c.Messages, turn)
		return j.Err(c.Answers)
	}
	if j.Replay != turn.Text {
		turn.Text, turn.Native, turn.NativeFormat = j.Replay, nil, ""
	}
	c.Messages = append(c.Messages, turn, Message{Role: RoleUser, Text: j.Feedback})
	return nil
}

// callEvent is the trace's tool_call event for call.
func (l *Loop) callEvent(c *Conversation, call ToolCall, lim Limits) Event {
	name := call.Name
	if n, ok := l.resolve(c, call.Name); ok {
		name = n.String()
	}
	ev := Event{Type: EventToolCall, Iteration: c.Iterations, ID: call.ID, Name: name, Arguments: call.Arguments}
	if text, cut, chars := cutChars(string(call.Arguments), lim.TraceMaxChars); cut {
		ev.Arguments, _ = json.Marshal(text)
		ev.Truncated, ev.Chars = true, chars
	}
	if len(ev.Arguments) == 0 {
		ev.Arguments = json.RawMessage("{}")
	}
	return ev
}

// resolve finds the tool a call names: by the wire name the model was
// given, or by its qualified name "server.tool" (scripted replies).
func (l *Loop) resolve(c *Conversation, name string) (ToolName, bool) {
	if n, ok := c.Names[name]; ok {
		return n, true
	}
	for _, n := range c.Names {
		if n.String() == name {
			return n, true
		}
	}
	return ToolName{}, false
}

// runCall decides and runs one call, appending its events to the trace,
// and returns what goes back to the model. Only a server that cannot be
// reached, the deadline and ctx end the turn with an error; everything
// else the tool or the policy says goes back to the model.
func (l *Loop) runCall(ctx, tctx context.Context, c *Conversation, call ToolCall, i int, lim Limits) (ToolResult, error) {
	c.Trace = append(c.Trace, l.callEvent(c, call, lim))
	res := ToolResult{CallID: call.ID, Name: call.Name, IsError: true}
	answer := func(out ToolOutput) (ToolResult, error) {
		res.Content, res.IsError = l.toModel(c, out.Content, lim), out.IsError
		text, cut, chars := cutChars(out.Content, lim.TraceMaxChars)
		if cut {
			c.flag(FlagToolResultTruncated)
		}
		c.Trace = append(c.Trace, Event{Type: EventToolResult, Iteration: c.Iterations, ID: call.ID, Name: c.Trace[len(c.Trace)-1].Name,
			Content: text, IsError: out.IsError, Truncated: cut, Chars: charsIf(cut, chars)})
		return res, nil
	}
	if i >= lim.CallsPerTurn {
		return answer(ToolOutput{IsError: true, Content: fmt.Sprintf("not run: at most %d tool calls run per turn; call it again in the next turn", lim.CallsPerTurn)})
	}
	n, ok := l.resolve(c, call.Name)
	if !ok {
		return answer(ToolOutput{IsError: true, Content: fmt.Sprintf("unknown tool %q: call one of the tools you were given", call.Name)})
	}
	args, err := objectArgs(call.Arguments, lim.ArgumentsBytes)
	if err != nil {
		return answer(ToolOutput{IsError: true, Content: err.Error()})
	}
	if allow, reason := l.Agent.Policy.Decide(c.Agent, n.Server, n.Tool, args); !allow {
		c.flag(FlagToolDenied)
		c.Trace = append(c.Trace, Event{Type: EventToolDenied, Iteration: c.Iterations, ID: call.ID, Name: n.String(), Reason: reason})
		res.Content = fmt.Sprintf("denied by the tool policy: %s. The call was not run; do not retry it.", reason)
		return res, nil
	}
	if c.ToolBytes >= lim.ToolOutputMax {
		c.flag(FlagToolOutputCut)
		return answer(ToolOutput{IsError: true, Content: fmt.Sprintf("not run: this step's tool output budget (%d bytes) is spent; answer with what you have", lim.ToolOutputMax)})
	}
	srv := l.Agent.Servers[n.Server]
	if srv.Name == "" {
		srv.Name = n.Server
	}
	cctx, cancel := context.WithTimeout(tctx, lim.ToolTimeout)
	cctx, span := telemetry.Start(cctx, telemetry.OpExecuteTool, trace.SpanKindInternal)
	out, err := l.Tools.Call(cctx, srv, n.Tool, args)
	endToolCall(span, n, call.ID, out, err)
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
	cancel()
	switch {
	case err == nil:
		return answer(out)
	case deadlineHit(ctx, tctx):
		return res, l.deadlineErr(c, fmt.Sprintf("tool %s ran", n))
	case ctx.Err() != nil:
		return res, fmt.Errorf("agent %q: tool %s: %w", c.Agent, n, ctx.Err())
	case timedOut:
		return answer(ToolOutput{IsError: true, Content: fmt.Sprintf("tool %s timed out after %s", n, lim.ToolTimeout)})
	}
	return res, fmt.Errorf("agent %q: tool %s: %w", c.Agent, n, err)
}

// toModel bounds a tool answer for the model: cut to the per-answer cap
// and to what is left of the step's budget, with a note of what was
// left out.
func (l *Loop) toModel(c *Conversation, s string, lim Limits) string {
	room := min(lim.ToolResultMax, lim.ToolOutputMax-c.ToolBytes)
	out, cut := cutBytes(s, max(room, 0))
	if cut {
		c.flag(FlagToolOutputCut)
		out += fmt.Sprintf("\n[output cut: the first %d of %d bytes are shown]", len(out), len(s))
	}
	c.ToolBytes += len(out)
	return out
}

// objectArgs checks that a call's arguments are a JSON object within
// limit (empty arguments are {}) and returns them in canonical form (see
// canonicalArgs): what the tool policy reads is what the tool is sent.
func objectArgs(raw json.RawMessage, limit int) (json.RawMessage, error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return json.RawMessage("{}"), nil
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("arguments refused: over %d bytes", limit)
	}
	if c, ok := canonicalArgs(raw); ok {
		return c, nil
	}
	// A model that sends its arguments as a JSON string holding the
	// object (some do) is read once more.
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if c, ok := canonicalArgs([]byte(s)); ok {
			return c, nil
		}
	}
	return nil, fmt.Errorf("arguments refused: want a JSON object")
}

// canonicalArgs decodes a JSON object and encodes it again: keys sorted,
// a repeated key once (its last value, as Go and most servers read it),
// numbers as written, strings with only the escapes JSON requires
// (quote, backslash, control characters, U+2028 and U+2029), no HTML
// escaping, invalid UTF-8 as U+FFFD. A model cannot then hide a word from
// an input_regex behind an escape ("\u0064rop") or a repeated key.
func canonicalArgs(raw []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // something after the object
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, false
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), true
}
