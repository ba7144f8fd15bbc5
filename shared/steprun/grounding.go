package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
)

// MaxJudgeTraceBytes bounds the transcript of a step's trace a grounding
// judge reads: events past it are left out, and the transcript says how
// many.
const MaxJudgeTraceBytes = 192 << 10

// NoteNothingToCheck is a grounding verdict's note when the step left no
// tool result: no evidence to weigh its claims against, so G is null.
const NoteNothingToCheck = "nothing to check: the step left no tool result in its trace"

// groundingKey is the executor key of a step's judge (its replies in a
// responses file).
func groundingKey(step string) string { return step + ":grounding" }

// ground runs a step's grounding judge over its answer and trace. The
// verdict's Score is G: nil when the step left no tool result (nothing to
// check) or the judge failed or ran out of time (soft: the failure is
// recorded, never the step's). What the judge spent is returned, to be
// added to the step's usage.
func (t *taskRun) ground(ctx context.Context, st *pipeline.Step, res *result, answer json.RawMessage, b map[string]any) (*store.GroundingResult, stepUsage) {
	g := st.Grounding
	v := &store.GroundingResult{Agent: g.Agent, Enforced: g.Enforce}
	var trace []agent.Event
	if res.agent != nil {
		trace = res.agent.trace
	}
	if !hasToolResult(trace) {
		v.Note = NoteNothingToCheck
		return v, stepUsage{}
	}
	var jres result
	fail := func(err error) (*store.GroundingResult, stepUsage) {
		t.h.log.Warn("grounding judge failed", "run", t.req.Run.ID, "step", st.Name, "agent", g.Agent, "error", err.Error())
		v.Error = err.Error()
		v.InputTokens, v.OutputTokens = jres.usage.in, jres.usage.out
		return v, jres.usage
	}
	if g.Judge == nil {
		return fail(fault.Errorf[fault.ConfigError]("step %q: grounding judge %q is not resolved: compile the pipeline with a Stepline that knows grounding", st.Name, g.Agent))
	}
	cfg, err := t.renderConfig(ctx, st.Name, "grounding.executor_config", g.ExecutorConfig, b)
	if err != nil {
		return fail(err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["agent"] = g.Agent
	timeout := g.TimeoutSeconds
	if timeout <= 0 {
		timeout = pipeline.DefaultGroundingTimeout
	}
	jctx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Second)
	defer cancel()
	u := unit{name: st.Name, key: groundingKey(st.Name), record: st.Name, executor: g.Executor, config: cfg,
		timeout: timeout, agent: g.Judge}
	prompt := judgePrompt(res.prompt, answer, trace, g.MaxTraceChars)
	out, err := t.agentCall(jctx, u, cfg, prompt, &jres)
	if err != nil {
		return fail(err)
	}
	score := out.Confidence
	v.Score = &score
	v.Model, v.Provider = out.Model, out.Provider
	v.InputTokens, v.OutputTokens = jres.usage.in, jres.usage.out
	v.Claims, v.Note = judgeClaims(out)
	return v, jres.usage
}

// hasToolResult reports whether a trace holds what the tools answered.
func hasToolResult(trace []agent.Event) bool {
	for _, ev := range trace {
		if ev.Type == agent.EventToolResult {
			return true
		}
	}
	return false
}

// judgeClaims reads the claims a judge weighed (reasoning.claims: a list
// of {claim, supported, evidence}), the first store.MaxTrustClaims of
// them, and a note counting them.
func judgeClaims(out *llmoutput.Output) ([]store.ClaimResult, string) {
	list, _ := out.Reasoning["claims"].([]any)
	var claims []store.ClaimResult
	supported, total := 0, 0
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		total++
		cr := store.ClaimResult{}
		cr.Claim, _ = m["claim"].(string)
		cr.Supported, _ = m["supported"].(bool)
		cr.Evidence, _ = m["evidence"].(string)
		if cr.Supported {
			supported++
		}
		if len(claims) < store.MaxTrustClaims {
			claims = append(claims, cr)
		}
	}
	if total == 0 {
		return nil, out.Summary
	}
	return claims, fmt.Sprintf("%d of %d claims supported: %s", supported, total, out.Summary)
}

// judgePrompt is what a grounding judge reads: the task the step was
// given, its answer (the compact output, without artifacts) and a
// transcript of its trace, each event cut to maxChars characters and the
// whole to MaxJudgeTraceBytes. Everything in it is data the judge
// weighs; nothing in it is rendered or expanded.
func judgePrompt(task string, answer json.RawMessage, trace []agent.Event, maxChars int) string {
	if maxChars <= 0 {
		maxChars = pipeline.DefaultGroundingMaxTraceChars
	}
	var b strings.Builder
	b.WriteString("Judge whether another agent's answer is grounded in the evidence its tools returned. ")
	b.WriteString("List its load-bearing claims in reasoning.claims as {\"claim\", \"supported\", \"evidence\"}; ")
	b.WriteString("your confidence is the share of those claims a tool result in the trace supports.\n\n")
	b.WriteString("## Task given to the agent\n\n")
	b.WriteString(task)
	b.WriteString("\n\n## The agent's answer\n\n")
	b.Write(withoutArtifacts(answer))
	b.WriteString("\n\n## The agent's tool trace\n\n")
	written := 0
	for i, ev := range trace {
		line := traceLine(ev, maxChars)
		if written+len(line) > MaxJudgeTraceBytes {
			fmt.Fprintf(&b, "[%d more events left out]\n", len(trace)-i)
			break
		}
		b.WriteString(line)
		written += len(line)
	}
	return b.String()
}

// withoutArtifacts is a compact output without its artifacts field.
func withoutArtifacts(answer json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(answer, &m) != nil {
		return answer
	}
	if _, ok := m["artifacts"]; !ok {
		return answer
	}
	delete(m, "artifacts")
	out, err := json.Marshal(m)
	if err != nil {
		return answer
	}
	return out
}

// traceLine writes one trace event for the judge, its text cut to
// maxChars characters.
func traceLine(ev agent.Event, maxChars int) string {
	cut := func(s string) string {
		if utf8.RuneCountInString(s) <= maxChars {
			return s
		}
		r := []rune(s)
		return string(r[:maxChars]) + fmt.Sprintf(" […cut at %d of %d characters]", maxChars, len(r))
	}
	switch ev.Type {
	case agent.EventToolCall:
		return fmt.Sprintf("[%d] tool_call %s %s\n", ev.Iteration, ev.Name, cut(string(ev.Arguments)))
	case agent.EventToolResult:
		mark := ""
		if ev.IsError {
			mark = " (error)"
		}
		if ev.Truncated {
			mark += fmt.Sprintf(" (cut in the trace: %d characters in all)", ev.Chars)
		}
		return fmt.Sprintf("[%d] tool_result %s%s:\n%s\n", ev.Iteration, ev.Name, mark, cut(ev.Content))
	case agent.EventToolDenied:
		return fmt.Sprintf("[%d] tool_denied %s: %s\n", ev.Iteration, ev.Name, cut(ev.Reason))
	}
	return fmt.Sprintf("[%d] %s: %s\n", ev.Iteration, ev.Type, cut(ev.Content))
}
