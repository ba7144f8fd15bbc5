package executor

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/telemetry"
)

// TestGatewayCallTraced: with tracing on, a gateway call is a client span
// "chat <model>" with the GenAI attributes, a child of the caller's span,
// and its HTTP request carries that span as traceparent; the API key is
// in no attribute.
func TestGatewayCallTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	defer telemetry.Install(telemetry.NewProvider("test", sdktrace.WithSyncer(exp)))()
	srv := newServer(t, answer(200, okChat))
	reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
	p := provider(t, reg, Call{Executor: Gateway, Step: "triage", Stage: StageProduction, Config: map[string]any{
		"base_url": srv.URL + "/v1/", "model": "gpt-4o", "api_key": "${API_KEY}",
	}})
	ctx, parent := telemetry.Start(context.Background(), "step triage", trace.SpanKindInternal)
	if _, err := p.Complete(ctx, request()); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	chat := spans[0]
	if chat.Name != "chat gpt-4o" || chat.SpanKind != trace.SpanKindClient || chat.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q kind %s parent %s", chat.Name, chat.SpanKind, chat.Parent.SpanID())
	}
	got := map[string]string{}
	for _, kv := range chat.Attributes {
		got[string(kv.Key)] = kv.Value.String()
		if strings.Contains(kv.Value.String(), testKey) {
			t.Errorf("attribute %s holds the API key", kv.Key)
		}
	}
	for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "stepline.step": "triage",
		"stepline.executor": "gateway"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got["gen_ai.provider.name"] == "" || got["gen_ai.usage.input_tokens"] == "" {
		t.Errorf("attributes %v lack the provider or the usage", got)
	}
	sc := chat.SpanContext
	if tp := srv.last(t).header.Get("traceparent"); tp != "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01" {
		t.Errorf("traceparent %q, want the chat span's", tp)
	}
}
