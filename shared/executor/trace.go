package executor

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/telemetry"
)

// traced is a Provider whose every Complete is a client span: "chat
// <model>" with the GenAI attributes for the model executors (and their
// scripted stand-ins), "<executor>" for a webhook or notify call. Its
// outbound HTTP request carries the span as traceparent (roundTrip).
type traced struct {
	p    llmoutput.Provider
	call Call
}

func (t traced) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	ctx, span := telemetry.Start(ctx, t.call.Executor, trace.SpanKindClient)
	c, err := t.p.Complete(ctx, req)
	if span.IsRecording() {
		t.describe(span, c)
	}
	telemetry.End(span, err)
	return c, err
}

// model reports whether the executor calls a model.
func (t traced) model() bool {
	switch t.call.Executor {
	case Gateway, Anthropic, Bedrock, Scripted:
		return true
	}
	return false
}

// describe names a recorded span and sets its attributes from the call
// and its completion (never the prompt or the reply).
func (t traced) describe(span trace.Span, c llmoutput.Completion) {
	span.SetAttributes(telemetry.Executor.String(t.call.Executor), telemetry.Step.String(t.call.Step))
	if !t.model() {
		return
	}
	model, _ := t.call.Config["model"].(string)
	if model == "" || strings.Contains(model, "${") {
		model = c.Model
	}
	provider := c.Provider
	if provider == "" {
		provider = t.call.Executor
	}
	telemetry.Chat(span, provider, model, c.Model, int64(c.Usage.InputTokens), int64(c.Usage.OutputTokens))
	if c.FinishReason != "" {
		span.SetAttributes(telemetry.GenAIFinish.StringSlice([]string{c.FinishReason}))
	}
}
