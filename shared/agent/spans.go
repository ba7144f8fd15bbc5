package agent

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/telemetry"
)

// endIteration names a turn's span "agent_iteration <agent>" and sets
// which turn it was; an unrecorded span (tracing off) is left as it is.
func endIteration(span trace.Span, c *Conversation) {
	if !span.IsRecording() || c == nil {
		return
	}
	span.SetName("agent_iteration " + c.Agent)
	span.SetAttributes(telemetry.GenAIAgentName.String(c.Agent), telemetry.Iteration.Int(c.Iterations))
}

// endModelCall names a model call's span "chat <model>" and sets its GenAI
// attributes from the reply (never its text or tool arguments), then
// ends it.
func endModelCall(span trace.Span, a *Resolved, reply ModelReply, err error) {
	if span.IsRecording() {
		// The model asked for is the agent's first (a fallback answers
		// under its own name: gen_ai.response.model).
		model, provider := reply.Model, reply.Provider
		if a != nil && len(a.Models) > 0 {
			model = a.Models[0].Model
			if provider == "" {
				provider = a.Models[0].Provider
			}
		}
		if a != nil && a.Remote != nil && provider == "" {
			provider = a.Remote.Runtime
		}
		telemetry.Chat(span, provider, model, reply.Model, int64(reply.Usage.InputTokens), int64(reply.Usage.OutputTokens))
		if a != nil {
			span.SetAttributes(telemetry.GenAIAgentName.String(a.Profile.Name))
		}
	}
	telemetry.End(span, err)
}

// endToolCall names a tool call's span "execute_tool <server.tool>" and
// ends it: failed when the call failed, and with error.type "tool_error"
// when the tool answered with an error. Its arguments and output stay
// out of it.
func endToolCall(span trace.Span, n ToolName, id string, out ToolOutput, err error) {
	if span.IsRecording() {
		span.SetName(telemetry.OpExecuteTool + " " + n.String())
		span.SetAttributes(
			telemetry.GenAIOperation.String(telemetry.OpExecuteTool),
			telemetry.GenAIToolName.String(n.String()),
			telemetry.GenAIToolCallID.String(id),
		)
		if err == nil && out.IsError {
			span.SetAttributes(telemetry.ErrorType.String("tool_error"))
		}
	}
	telemetry.End(span, err)
}
