package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/yamldoc"
)

// Responses holds scripted replies: for each step key, the replies its
// executor gives, consumed in order, one per call (re-asks and retries
// consume the next one). Safe for concurrent use.
//
// The file is YAML mapping a step key to a list of replies:
//
//	triage:
//	  - "not json"                          # a raw model reply, parsed like any reply
//	  - {confidence: 0.9, summary: ok, next_step_context: ""}   # a mapping is sent as its JSON
//	  - {error: timeout}                    # the call fails: ExecutorTimeout
//	  - {error: "http 500"}                 # any other message: ExecutorUnavailable
//	triage:verifier: ['{"confidence": 0.8, "summary": "agrees", "next_step_context": ""}']
//	draft: [{reply: '{"confidence": 0.9, ...}', input_tokens: 1200, output_tokens: 300}]  # with usage
//	fan/0: [...]                            # fan-out item 0 of step "fan"
//	approve-deploy: [approve, {decision: reject, by: oncall-lead, comment: too risky}]
//
// Verifier calls use "<step>:verifier", fan-out items "<fan_out>/<i>",
// parallel branches their own names. A single reply may stand without the
// list. Human steps read decisions with [Responses.Decision].
//
// An agent step's replies script its tool loop: a turn that calls tools
// is {tool_calls: [{name, arguments}]} (name "server.tool"; arguments a
// mapping, {} when left out; text and input_tokens/output_tokens may go
// with it), and the loop goes on until a reply without tool calls, its
// final answer. The top-level key tool_results (which no step may use)
// scripts what the tools answer: for each "server.tool", its answers in
// order, one per call, across the run: a string, a mapping (sent as its
// JSON) or {error: message} (the tool reports an error):
//
//	investigate:
//	  - tool_calls: [{name: grafana.query, arguments: {expr: "rate(http_errors[5m])"}}]
//	  - tool_calls: [{name: runbooks.search, arguments: {q: checkout}}]
//	  - {confidence: 0.8, summary: "error rate doubled after the deploy", next_step_context: ""}
//	tool_results:
//	  grafana.query: ['{"value": 0.31}']
//	  runbooks.search: [{error: "index offline"}]
//
// Only the tools named under tool_results exist for a scripted agent, so
// a scripted run never reaches an MCP server.
type Responses struct {
	name string

	mu      sync.Mutex
	replies map[string][]scriptedReply
	tools   map[string][]scriptedReply // tool_results, by "server.tool"
	used    map[string]int             // by step key, and toolKey for tool answers
	changed map[string]int             // the counts of used that changed since TakeChanged
}

// ToolResultsKey is the top-level key of a responses file that scripts
// tool answers.
const ToolResultsKey = "tool_results"

// toolKey is the key a tool's consumed answers are counted under.
func toolKey(tool string) string { return ToolResultsKey + "/" + tool }

type replyKind int

const (
	replyText replyKind = iota
	replyError
	replyDecision
	replyToolCalls
)

type scriptedReply struct {
	kind      replyKind
	text      string // the reply, or the error message
	approved  bool
	by        string
	comment   string
	in, out   int64 // tokens the reply reports using
	calls     []agent.ToolCall
	line, col int
}

func (r scriptedReply) pos(name string) string {
	return fmt.Sprintf("%s:%d:%d", name, r.line, r.col)
}

// Decision is a human step's scripted decision.
type Decision struct {
	Approved bool
	By       string // who decided; "" when the file does not say
	Comment  string
}

// LoadResponses reads a responses file.
func LoadResponses(path string) (*Responses, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read responses: %w", err)
	}
	return ParseResponses(path, data)
}

// ParseResponses reads responses from data; name (a file path) prefixes
// positions in errors, "name:line:col: message" (syntax errors, for which
// the YAML parser gives no column, read "name:line: message"). data is
// read within package yamldoc's bounds (size, aliases expanded, depth).
func ParseResponses(name string, data []byte) (*Responses, error) {
	r := &Responses{name: name, replies: map[string][]scriptedReply{}, tools: map[string][]scriptedReply{}, used: map[string]int{}}
	doc, err := yamldoc.Parse(data)
	if err != nil {
		if be := (*yamldoc.Error)(nil); errors.As(err, &be) {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, tail, ok := strings.Cut(rest, ": "); ok {
				return nil, fmt.Errorf("%s:%s: %s", name, n, tail)
			}
		}
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	if len(doc.Content) == 0 {
		return r, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: want a mapping from step names to lists of replies", name, root.Line, root.Column)
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			return nil, fmt.Errorf("%s:%d:%d: want a step name", name, k.Line, k.Column)
		}
		if prev, dup := seen[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d:%d: step %q already listed at line %d", name, k.Line, k.Column, k.Value, prev.Line)
		}
		seen[k.Value] = k
		if k.Value == ToolResultsKey {
			if err := r.parseToolResults(v); err != nil {
				return nil, err
			}
			continue
		}
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		list := make([]scriptedReply, 0, len(items))
		for _, it := range items {
			rep, err := parseReply(name, it)
			if err != nil {
				return nil, err
			}
			list = append(list, rep)
		}
		r.replies[k.Value] = list
	}
	return r, nil
}

func parseReply(name string, n *yaml.Node) (scriptedReply, error) {
	rep := scriptedReply{line: n.Line, col: n.Column}
	fail := func(node *yaml.Node, format string, args ...any) (scriptedReply, error) {
		return scriptedReply{}, fmt.Errorf("%s:%d:%d: %s", name, node.Line, node.Column, fmt.Sprintf(format, args...))
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			rep.text = n.Value
		}
		return rep, nil
	case yaml.SequenceNode:
		return fail(n, "want a reply (a string or a mapping), got a list")
	case yaml.MappingNode:
	default:
		return fail(n, "want a reply (a string or a mapping)")
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		fields[n.Content[i].Value] = n.Content[i+1]
	}
	if ev, ok := fields["error"]; ok {
		if len(fields) != 1 {
			return fail(n, "an error reply has only the key error")
		}
		if ev.Kind != yaml.ScalarNode || strings.TrimSpace(ev.Value) == "" {
			return fail(ev, "error: want a message such as timeout or \"http 500\"")
		}
		rep.kind, rep.text = replyError, ev.Value
		return rep, nil
	}
	if tv, ok := fields["tool_calls"]; ok {
		return parseToolCalls(name, n, tv, fields)
	}
	if rv, ok := fields["reply"]; ok {
		for k, v := range fields {
			switch k {
			case "reply":
				if v.Kind != yaml.ScalarNode {
					return fail(v, "reply: want the model's raw reply as a string")
				}
			case "input_tokens", "output_tokens":
				var n int64
				if v.Kind != yaml.ScalarNode || v.Decode(&n) != nil || n < 0 || n > MaxReportedTokens {
					return fail(v, "%s: want a whole number of tokens from 0 to %d", k, int64(MaxReportedTokens))
				}
				if k == "input_tokens" {
					rep.in = n
				} else {
					rep.out = n
				}
			default:
				return fail(n, "unknown key %q in a reply (want reply, input_tokens, output_tokens)", k)
			}
		}
		rep.text = rv.Value
		return rep, nil
	}
	if dv, ok := fields["decision"]; ok {
		for k, v := range fields {
			if k != "decision" && k != "by" && k != "comment" {
				return fail(n, "unknown key %q in a decision (want decision, by, comment)", k)
			}
			if v.Kind != yaml.ScalarNode {
				return fail(v, "%s: want a string", k)
			}
		}
		approved, ok := decisionWord(dv.Value)
		if !ok {
			return fail(dv, "decision: want approve or reject, got %q", dv.Value)
		}
		rep.kind, rep.approved = replyDecision, approved
		if by := fields["by"]; by != nil {
			rep.by = by.Value
		}
		if c := fields["comment"]; c != nil {
			rep.comment = c.Value
		}
		return rep, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return fail(n, "cannot read the reply: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fail(n, "the reply cannot be written as JSON (keys must be strings)")
	}
	rep.text = string(b)
	return rep, nil
}

// parseToolCalls reads a {tool_calls: [...]} turn.
func parseToolCalls(name string, n, tv *yaml.Node, fields map[string]*yaml.Node) (scriptedReply, error) {
	rep := scriptedReply{kind: replyToolCalls, line: n.Line, col: n.Column}
	fail := func(node *yaml.Node, format string, args ...any) (scriptedReply, error) {
		return scriptedReply{}, fmt.Errorf("%s:%d:%d: %s", name, node.Line, node.Column, fmt.Sprintf(format, args...))
	}
	for k, v := range fields {
		switch k {
		case "tool_calls":
		case "text":
			if v.Kind != yaml.ScalarNode {
				return fail(v, "text: want the model's text as a string")
			}
			rep.text = v.Value
		case "input_tokens", "output_tokens":
			var t int64
			if v.Kind != yaml.ScalarNode || v.Decode(&t) != nil || t < 0 || t > MaxReportedTokens {
				return fail(v, "%s: want a whole number of tokens from 0 to %d", k, int64(MaxReportedTokens))
			}
			if k == "input_tokens" {
				rep.in = t
			} else {
				rep.out = t
			}
		default:
			return fail(n, "unknown key %q in a tool-calling turn (want tool_calls, text, input_tokens, output_tokens)", k)
		}
	}
	if tv.Kind != yaml.SequenceNode || len(tv.Content) == 0 {
		return fail(tv, "tool_calls: want a list of calls, each {name: server.tool, arguments: {...}}")
	}
	for i, c := range tv.Content {
		if c.Kind != yaml.MappingNode {
			return fail(c, "tool_calls[%d]: want {name: server.tool, arguments: {...}}", i)
		}
		call := agent.ToolCall{Arguments: json.RawMessage("{}")}
		for j := 0; j+1 < len(c.Content); j += 2 {
			k, v := c.Content[j], c.Content[j+1]
			switch k.Value {
			case "name":
				server, tool, ok := strings.Cut(v.Value, ".")
				if v.Kind != yaml.ScalarNode || !ok || server == "" || tool == "" {
					return fail(v, "tool_calls[%d].name: want server.tool, got %q", i, v.Value)
				}
				call.Name = v.Value
			case "id":
				call.ID = v.Value
			case "arguments":
				var a any
				if v.Kind != yaml.MappingNode || v.Decode(&a) != nil {
					return fail(v, "tool_calls[%d].arguments: want a mapping", i)
				}
				b, err := json.Marshal(a)
				if err != nil {
					return fail(v, "tool_calls[%d].arguments: cannot be written as JSON (keys must be strings)", i)
				}
				call.Arguments = b
			default:
				return fail(k, "tool_calls[%d]: unknown key %q (want name, arguments, id)", i, k.Value)
			}
		}
		if call.Name == "" {
			return fail(c, "tool_calls[%d]: name is required", i)
		}
		rep.calls = append(rep.calls, call)
	}
	return rep, nil
}

// parseToolResults reads the tool_results mapping.
func (r *Responses) parseToolResults(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d:%d: %s: want a mapping from server.tool to lists of answers", r.name, n.Line, n.Column, ToolResultsKey)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		server, tool, ok := strings.Cut(k.Value, ".")
		if k.Kind != yaml.ScalarNode || !ok || server == "" || tool == "" {
			return fmt.Errorf("%s:%d:%d: %s: want server.tool, got %q", r.name, k.Line, k.Column, ToolResultsKey, k.Value)
		}
		if _, dup := r.tools[k.Value]; dup {
			return fmt.Errorf("%s:%d:%d: %s: %q listed twice", r.name, k.Line, k.Column, ToolResultsKey, k.Value)
		}
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		list := make([]scriptedReply, 0, len(items))
		for _, it := range items {
			rep, err := parseReply(r.name, it)
			if err != nil {
				return err
			}
			if rep.kind != replyText && rep.kind != replyError {
				return fmt.Errorf("%s:%d:%d: %s.%s: want a tool's answer (a string, a mapping or {error: message})", r.name, it.Line, it.Column, ToolResultsKey, k.Value)
			}
			list = append(list, rep)
		}
		r.tools[k.Value] = list
	}
	return nil
}

// decisionWord reads approve/approved or reject/rejected, in any case.
func decisionWord(s string) (approved, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "approve", "approved":
		return true, true
	case "reject", "rejected":
		return false, true
	}
	return false, false
}

// Name returns the file name the responses were read from.
func (r *Responses) Name() string { return r.name }

// Steps returns the step keys that have replies, sorted.
func (r *Responses) Steps() []string {
	keys := make([]string, 0, len(r.replies))
	for k := range r.replies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// take consumes the next reply of step.
func (r *Responses) take(step string) (scriptedReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.replies[step]
	if !ok {
		return scriptedReply{}, fault.Errorf[fault.ConfigError]("%s: no scripted replies for step %q", r.name, step)
	}
	i := r.used[step]
	if i >= len(list) {
		return scriptedReply{}, fault.Errorf[fault.ConfigError]("%s: step %q has no scripted reply left (all %d used)", r.name, step, len(list))
	}
	r.setUsed(step, i+1)
	return list[i], nil
}

// failure is the error a scripted {error: ...} reply makes a call fail
// with: ExecutorTimeout for "timeout…", ExecutorUnavailable otherwise.
func (r *Responses) failure(step string, rep scriptedReply) error {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(rep.text)), "timeout") {
		return fault.Errorf[fault.ExecutorTimeout]("step %q: scripted %s (%s)", step, rep.text, rep.pos(r.name))
	}
	return fault.Errorf[fault.ExecutorUnavailable]("step %q: scripted error %q (%s)", step, rep.text, rep.pos(r.name))
}

// Next consumes step's next reply and returns its text, or the error it
// scripts. A step with no reply left, or whose next reply is a human
// decision, is a ConfigError naming the step.
func (r *Responses) Next(step string) (string, error) {
	text, _, err := r.next(step)
	return text, err
}

// next is Next with the usage the reply reports.
func (r *Responses) next(step string) (string, llmoutput.Usage, error) {
	rep, err := r.take(step)
	if err != nil {
		return "", llmoutput.Usage{}, err
	}
	text, err := r.reply(step, rep)
	return text, llmoutput.Usage{InputTokens: rep.in, OutputTokens: rep.out}, err
}

// reply is the text of a taken reply, or the error it scripts.
func (r *Responses) reply(step string, rep scriptedReply) (string, error) {
	switch rep.kind {
	case replyError:
		return "", r.failure(step, rep)
	case replyDecision:
		return "", fault.Errorf[fault.ConfigError]("%s: step %q: a decision is not a model reply", rep.pos(r.name), step)
	case replyToolCalls:
		return "", fault.Errorf[fault.ConfigError]("%s: step %q: a tool-calling turn is for a step that runs an agent (executor_config.agent)", rep.pos(r.name), step)
	}
	return rep.text, nil
}

// Decision consumes step's next reply as a human decision: approve,
// reject, or {decision, by, comment}. An {error: ...} reply fails as in
// Next.
func (r *Responses) Decision(step string) (Decision, error) {
	rep, err := r.take(step)
	if err != nil {
		return Decision{}, err
	}
	switch rep.kind {
	case replyError:
		return Decision{}, r.failure(step, rep)
	case replyDecision:
		return Decision{Approved: rep.approved, By: rep.by, Comment: rep.comment}, nil
	case replyToolCalls:
		return Decision{}, fault.Errorf[fault.ConfigError]("%s: step %q: want a decision (approve or reject), not tool calls", rep.pos(r.name), step)
	}
	approved, ok := decisionWord(rep.text)
	if !ok {
		return Decision{}, fault.Errorf[fault.ConfigError]("%s: step %q: want a decision (approve or reject)", rep.pos(r.name), step)
	}
	return Decision{Approved: approved}, nil
}

// Remaining returns how many replies step has left.
func (r *Responses) Remaining(step string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(len(r.replies[step])-r.used[step], 0)
}

// Tools returns the tools tool_results scripts, "server.tool", sorted.
func (r *Responses) Tools() []string {
	keys := make([]string, 0, len(r.tools))
	for k := range r.tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Consumed returns how many replies each step has used, for steps that
// used any. A resumed run passes it to Restore so answers are not replayed.
func (r *Responses) Consumed() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.used))
	for k, n := range r.used {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// setUsed records that k's first n replies are used (r.mu held).
func (r *Responses) setUsed(k string, n int) {
	r.used[k] = n
	if r.changed == nil {
		r.changed = map[string]int{}
	}
	r.changed[k] = n
}

// TakeChanged returns the consumed counts that changed since the last
// call (or since Restore, or since r was loaded), nil when none did, and
// forgets them: a run records only what its last step used, not every
// count again at every step.
func (r *Responses) TakeChanged() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.changed
	r.changed = nil
	return c
}

// Restore sets the consumed counts to counts (steps absent from it start
// from their first reply).
func (r *Responses) Restore(counts map[string]int) error {
	for k, n := range counts {
		if n < 0 {
			return fmt.Errorf("restore scripted replies: step %q: negative count %d", k, n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.used = make(map[string]int, len(counts))
	for k, n := range counts {
		r.used[k] = n
	}
	r.changed = nil
	return nil
}

// scripted answers a call from Responses, in place of the executor the
// step names: a model reply for model executors, the response body of a
// 200 for webhook and notify (a notify outside production is muted and
// consumes nothing).
type scripted struct {
	reg     *Registry
	call    Call
	replies *Responses
}

// Complete returns the step's next scripted reply.
func (s *scripted) Complete(ctx context.Context, _ llmoutput.Request) (llmoutput.Completion, error) {
	if err := ctx.Err(); err != nil {
		return llmoutput.Completion{}, fmt.Errorf("%s: step %q: %w", s.call.Executor, s.call.Step, err)
	}
	if s.call.Executor == Notify && s.call.Stage != StageProduction {
		return mutedAnswer(), nil
	}
	if s.call.Step == "" {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("%s: scripted replies need the step's key", s.call.Executor)
	}
	text, usage, err := s.replies.next(s.call.Step)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	switch s.call.Executor {
	case Webhook:
		return webhookAnswer(200, []byte(text), false), nil
	case Notify:
		return notifyAnswer(200, []byte(text), false), nil
	}
	raw, _ := json.Marshal(text)
	return llmoutput.Completion{
		Content:      text,
		FinishReason: llmoutput.FinishStop,
		Model:        Scripted,
		Provider:     Scripted,
		Usage:        usage,
		Raw:          auditRaw(raw, false),
	}, nil
}

// scriptedModel answers an agent step's turns from its scripted replies:
// a tool_calls turn, or a final reply.
type scriptedModel struct {
	call    Call
	replies *Responses
}

// Turn implements agent.Model.
func (s *scriptedModel) Turn(ctx context.Context, _ agent.ModelRequest) (agent.ModelReply, error) {
	if err := ctx.Err(); err != nil {
		return agent.ModelReply{}, fmt.Errorf("%s: step %q: %w", s.call.Executor, s.call.Step, err)
	}
	rep, err := s.replies.take(s.call.Step)
	if err != nil {
		return agent.ModelReply{}, err
	}
	out := agent.ModelReply{Model: Scripted, Provider: Scripted, FinishReason: llmoutput.FinishStop,
		Usage: llmoutput.Usage{InputTokens: rep.in, OutputTokens: rep.out}}
	if rep.kind == replyToolCalls {
		out.Text = rep.text
		out.Calls = append([]agent.ToolCall(nil), rep.calls...)
	} else if out.Text, err = s.replies.reply(s.call.Step, rep); err != nil {
		return agent.ModelReply{}, err
	}
	raw, _ := json.Marshal(out.Text)
	out.Raw = auditRaw(raw, false)
	return out, nil
}

// Toolbox returns the tools tool_results scripts, as an agent.Toolbox.
func (r *Responses) Toolbox() agent.Toolbox { return scriptedTools{r} }

type scriptedTools struct{ r *Responses }

// Tools lists the tools tool_results scripts for server.
func (t scriptedTools) Tools(ctx context.Context, server agent.Server) ([]agent.Tool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []agent.Tool
	for _, k := range t.r.Tools() {
		if s, tool, _ := strings.Cut(k, "."); s == server.Name {
			out = append(out, agent.Tool{Name: tool, Description: "scripted by " + t.r.name, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
	}
	return out, nil
}

// Call consumes tool's next scripted answer. A tool with no answer left
// is a ConfigError naming it.
func (t scriptedTools) Call(ctx context.Context, server agent.Server, tool string, _ json.RawMessage) (agent.ToolOutput, error) {
	if err := ctx.Err(); err != nil {
		return agent.ToolOutput{}, err
	}
	name := server.Name + "." + tool
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	list, ok := t.r.tools[name]
	if !ok {
		return agent.ToolOutput{}, fault.Errorf[fault.ConfigError]("%s: no scripted answers for tool %q under %s", t.r.name, name, ToolResultsKey)
	}
	k := toolKey(name)
	i := t.r.used[k]
	if i >= len(list) {
		return agent.ToolOutput{}, fault.Errorf[fault.ConfigError]("%s: tool %q has no scripted answer left (all %d used)", t.r.name, name, len(list))
	}
	t.r.setUsed(k, i+1)
	if list[i].kind == replyError {
		return agent.ToolOutput{Content: list[i].text, IsError: true}, nil
	}
	return agent.ToolOutput{Content: list[i].text}, nil
}
