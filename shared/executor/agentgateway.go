package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/fault"
)

// gatewayProto speaks the remote agent gateway's protocol (the reference
// gateway's WebSocket /rpc): a challenge event, connect with the operator
// token, one agent request answered by accepted, any number of
// trace_event frames, and the final ok (or an error) under the request's
// id. The gateway cancels the run when the client disconnects.
type gatewayProto struct {
	token string
}

// gatewayAgentParams are the agent request's params.
type gatewayAgentParams struct {
	AgentID            string `json:"agentId"`
	SessionKey         string `json:"sessionKey"`
	Message            string `json:"message"`
	Model              string `json:"model,omitempty"`
	ThinkingLevel      string `json:"thinkingLevel,omitempty"`
	TraceToolResultMax int    `json:"traceToolResultMax,omitempty"`
	TraceParent        string `json:"traceparent,omitempty"`
}

// gatewayRunPayload is the payload of an agent response frame.
type gatewayRunPayload struct {
	Status string          `json:"status"` // accepted, trace_event, ok
	RunID  string          `json:"runId"`
	Event  json.RawMessage `json:"event"`
	Result *struct {
		Payloads []payload `json:"payloads"`
		Meta     struct {
			AgentMeta struct {
				Provider     string          `json:"provider"`
				Model        string          `json:"model"`
				AgentVersion string          `json:"agentVersion"`
				Usage        json.RawMessage `json:"usage"`
			} `json:"agentMeta"`
		} `json:"meta"`
		Trace []json.RawMessage `json:"trace"`
	} `json:"result"`
}

func (p *gatewayProto) handshake(ctx context.Context, s *session) error {
	f, err := s.next(ctx, "waiting for the gateway's challenge")
	if err != nil {
		return err
	}
	if f.Type != "event" || (f.Event != "challenge" && f.Event != "connect.challenge") {
		return fault.Errorf[fault.ExecutorUnavailable]("%s: %s opened with a %q frame, not a challenge: is it an agent gateway's /rpc?", s.name, displayURL(s.url), clip(f.Type+" "+f.Event, 60))
	}
	id, err := s.send(ctx, "connect", map[string]any{"auth": map[string]string{"token": p.token}})
	if err != nil {
		return err
	}
	f, err = s.response(ctx, id, "connecting", nil)
	if err != nil {
		return err
	}
	if !f.OK {
		return fault.Errorf[fault.ConfigError]("%s: the gateway refused the token: %s", s.name, f.Error.text())
	}
	return nil
}

func (p *gatewayProto) run(ctx context.Context, s *session, rq remoteRequest) (remoteResult, error) {
	params := gatewayAgentParams{AgentID: rq.agentID, SessionKey: rq.sessionKey, Message: rq.message, Model: rq.model,
		ThinkingLevel: rq.thinkingLevel, TraceParent: rq.traceParent}
	if rq.traceMaxSent {
		params.TraceToolResultMax = rq.traceMax
	}
	id, err := s.send(ctx, "agent", params)
	if err != nil {
		return remoteResult{}, err
	}
	streamed := newTraceConverter(rq.traceMax)
	accepted := false
	for {
		f, err := s.response(ctx, id, "waiting for the agent's result", nil)
		if err != nil {
			return remoteResult{}, err
		}
		if !f.OK {
			return remoteResult{}, gatewayRunError(s.name, rq.agentID, f.Error, accepted)
		}
		var pl gatewayRunPayload
		if err := json.Unmarshal(f.Payload, &pl); err != nil {
			return remoteResult{}, fault.Errorf[fault.ExecutorUnavailable]("%s: agent %q: a malformed result frame", s.name, rq.agentID)
		}
		switch pl.Status {
		case "accepted":
			accepted = true
			continue
		case "trace_event":
			streamed.add(pl.Event)
			continue
		case "ok":
		default:
			return remoteResult{}, fault.Errorf[fault.ExecutorUnavailable]("%s: agent %q: unexpected result status %q", s.name, rq.agentID, clip(pl.Status, 40))
		}
		if pl.Result == nil {
			return remoteResult{}, fault.Errorf[fault.ExecutorUnavailable]("%s: agent %q: the final frame holds no result", s.name, rq.agentID)
		}
		meta := pl.Result.Meta.AgentMeta
		res := remoteResult{runID: pl.RunID, text: payloadText(pl.Result.Payloads), model: meta.Model, provider: meta.Provider,
			agentVersion: meta.AgentVersion, usage: usageOf(meta.Usage), trace: streamed.events}
		if pl.Result.Trace != nil {
			// The final frame's trace is the whole one, streamed or not.
			final := newTraceConverter(rq.traceMax)
			for _, ev := range pl.Result.Trace {
				final.add(ev)
			}
			res.trace = final.events
		}
		if res.trace == nil {
			res.trace = []agent.Event{}
		}
		// The audit copy leaves out the trace, which the record keeps.
		audit := *pl.Result
		audit.Trace = nil
		raw, _ := json.Marshal(audit)
		res.raw = auditRaw(raw, false)
		return res, nil
	}
}

// gatewayRunError maps an agent request's error frame. Before the run was
// accepted it is a refusal (an unknown agent, a session key of another
// agent): ExecutorRejected, or ConfigError when the connection is not
// authenticated. After it, the run's own failure, an executor error with
// the gateway's message: its iteration limit is AgentIterationsExhausted,
// an internal error or every model failing ExecutorUnavailable (a retry
// may find them back), anything else ExecutorRejected.
func gatewayRunError(name, agentID string, e *frameError, accepted bool) error {
	msg := e.text()
	raw := ""
	if e != nil {
		raw = strings.ToLower(e.Message)
	}
	if !accepted {
		text := fmt.Sprintf("%s: agent %q: the gateway refused the request: %s", name, agentID, msg)
		if strings.Contains(raw, "not authenticated") {
			return &fault.ConfigError{Msg: text}
		}
		return &fault.ExecutorRejected{Msg: text}
	}
	text := fmt.Sprintf("%s: agent %q failed: %s", name, agentID, msg)
	switch {
	case strings.Contains(raw, "max iterations"):
		return &fault.AgentIterationsExhausted{Msg: text}
	case strings.HasPrefix(raw, "internal error"), strings.Contains(raw, "models exhausted"):
		return &fault.ExecutorUnavailable{Msg: text}
	}
	return &fault.ExecutorRejected{Msg: text}
}

func (p *gatewayProto) abort(*session, remoteRequest) {
	// The gateway cancels a run when its client disconnects, which
	// closing the session does.
}

// traceConverter turns the gateway's trace events into Stepline's trace
// shape (package agent's Event): llm_call events number the iterations,
// text, tool_call, tool_result and tool_denied become the same events
// (tool names "server__tool" written "server.tool", calls given ids a
// result or denial shares, a tool result the gateway cut marked
// truncated), and thinking, llm_retry and model_fallback are left out.
// Contents are cut to max characters; at most MaxRemoteTraceEvents are
// kept.
type traceConverter struct {
	max       int
	events    []agent.Event
	iteration int
	calls     int
	pending   []agent.Event // tool calls not yet answered, oldest first
}

func newTraceConverter(max int) *traceConverter {
	if max <= 0 {
		max = agent.DefaultTraceToolResultMaxChars
	}
	return &traceConverter{max: max, events: []agent.Event{}}
}

// gatewayCutMark ends a tool result the gateway cut to its trace limit.
const gatewayCutMark = "… [truncated]"

func (t *traceConverter) add(raw json.RawMessage) {
	var ev struct {
		Type      string          `json:"type"`
		Iteration int             `json:"iteration"`
		Content   string          `json:"content"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		IsError   bool            `json:"is_error"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return
	}
	if ev.Type == "llm_call" {
		if ev.Iteration > 0 {
			t.iteration = ev.Iteration
		} else {
			t.iteration++
		}
		return
	}
	if len(t.events) >= MaxRemoteTraceEvents {
		return
	}
	it := max(t.iteration, 1)
	switch ev.Type {
	case agent.EventText:
		if strings.TrimSpace(ev.Content) == "" {
			return
		}
		text, cut, chars := cutText(ev.Content, t.max)
		t.events = append(t.events, agent.Event{Type: agent.EventText, Iteration: it, Content: text, Truncated: cut, Chars: chars})
	case agent.EventToolCall:
		t.calls++
		call := agent.Event{Type: agent.EventToolCall, Iteration: it, ID: "call_" + strconv.Itoa(it) + "_" + strconv.Itoa(t.calls), Name: traceToolName(ev.Name), Arguments: arguments(ev.Input)}
		if text, cut, chars := cutText(string(call.Arguments), t.max); cut {
			call.Arguments, _ = json.Marshal(text)
			call.Truncated, call.Chars = true, chars
		}
		t.events = append(t.events, call)
		t.pending = append(t.pending, call)
	case agent.EventToolResult:
		content := ev.Content
		remoteCut := strings.HasSuffix(content, gatewayCutMark)
		text, cut, chars := cutText(content, t.max)
		t.events = append(t.events, agent.Event{Type: agent.EventToolResult, Iteration: it, ID: t.answer(ev.Name), Name: traceToolName(ev.Name),
			Content: text, IsError: ev.IsError, Truncated: cut || remoteCut, Chars: chars})
	case agent.EventToolDenied:
		t.events = append(t.events, agent.Event{Type: agent.EventToolDenied, Iteration: it, ID: t.answer(ev.Name), Name: traceToolName(ev.Name),
			Reason: clip(ev.Reason, t.max)})
	}
}

// answer returns the id of the oldest unanswered call of tool and marks
// it answered; "" when there is none.
func (t *traceConverter) answer(tool string) string {
	want := traceToolName(tool)
	for i, c := range t.pending {
		if c.Name == want {
			t.pending = append(t.pending[:i:i], t.pending[i+1:]...)
			return c.ID
		}
	}
	return ""
}

// traceToolName writes the gateway's "server__tool" as "server.tool".
func traceToolName(wire string) string {
	if srv, tool, ok := strings.Cut(wire, "__"); ok && srv != "" && tool != "" {
		return srv + "." + tool
	}
	return wire
}

// arguments is a tool call's input as JSON ({} when absent).
func arguments(in json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(in))
	if t == "" || t == "null" || !json.Valid(in) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(t)
}

// cutText cuts s to n characters: the text, whether it was cut, and its
// full length in characters when it was (0 otherwise).
func cutText(s string, n int) (string, bool, int) {
	r := []rune(s)
	if len(r) <= n {
		return s, false, 0
	}
	return string(r[:n]), true, len(r)
}
