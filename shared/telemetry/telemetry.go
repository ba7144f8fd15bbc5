package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stepline/stepline/shared/telemetry/otlpjson"
)

// Instrumentation is the name of Stepline's tracer.
const Instrumentation = "github.com/stepline/stepline"

// DefaultShutdownTimeout bounds Shutdown's last export.
const DefaultShutdownTimeout = 5 * time.Second

// Attribute keys of Stepline's spans.
const (
	Pipeline   = attribute.Key("stepline.pipeline")
	RunID      = attribute.Key("stepline.run.id")
	Step       = attribute.Key("stepline.step")
	Status     = attribute.Key("stepline.status")
	Confidence = attribute.Key("stepline.confidence")
	Mode       = attribute.Key("stepline.task.mode")
	Attempt    = attribute.Key("stepline.attempt")
	Executor   = attribute.Key("stepline.executor")
	Iteration  = attribute.Key("stepline.agent.iteration")
	Item       = attribute.Key("stepline.item.index") // a fan-out item's 0-based index
	ErrorType  = attribute.Key("error.type")
)

// GenAI semantic-convention attribute keys and values.
const (
	GenAIOperation     = attribute.Key("gen_ai.operation.name")
	GenAISystem        = attribute.Key("gen_ai.system") // the name before gen_ai.provider.name; both are set
	GenAIProvider      = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel  = attribute.Key("gen_ai.request.model")
	GenAIResponseModel = attribute.Key("gen_ai.response.model")
	GenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	GenAIFinish        = attribute.Key("gen_ai.response.finish_reasons")
	GenAIAgentName     = attribute.Key("gen_ai.agent.name")
	GenAIToolName      = attribute.Key("gen_ai.tool.name")
	GenAIToolCallID    = attribute.Key("gen_ai.tool.call.id")

	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
	OpInvokeAgent = "invoke_agent"
)

// Chat names a model call's span "chat <model>" ("chat" without a
// model) and sets its GenAI attributes: the operation, the provider
// (under both its names), the requested model, the token usage, and the
// answering model when it says one.
func Chat(span trace.Span, provider, model, answered string, in, out int64) {
	if model != "" {
		span.SetName(OpChat + " " + model)
	} else {
		span.SetName(OpChat)
	}
	span.SetAttributes(
		GenAIOperation.String(OpChat),
		GenAISystem.String(provider),
		GenAIProvider.String(provider),
		GenAIRequestModel.String(model),
		GenAIInputTokens.Int64(in),
		GenAIOutputTokens.Int64(out),
	)
	if answered != "" {
		span.SetAttributes(GenAIResponseModel.String(answered))
	}
}

// cachedTracer is Stepline's tracer of one global provider.
type cachedTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

var current atomic.Pointer[cachedTracer]

// tracer is Stepline's tracer from the global provider now: looked up
// again when the provider changes (a tracer of OpenTelemetry's global
// delegate would stay bound to the first provider installed).
func tracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if c := current.Load(); c != nil && c.tp == tp {
		return c.t
	}
	t := tp.Tracer(Instrumentation)
	current.Store(&cachedTracer{tp: tp, t: t})
	return t
}

// Start starts a span named name, a child of ctx's span (a root when ctx
// has none). Set attributes only when the span IsRecording: then a trace
// that is not exported costs no more than the no-op span.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if int(kind) < len(kinds) {
		return tracer().Start(ctx, name, kinds[kind])
	}
	return tracer().Start(ctx, name, trace.WithSpanKind(kind))
}

// kinds are the span kind options, made once (an option built per span
// costs an allocation).
var kinds = [...]trace.SpanStartOption{
	trace.SpanKindUnspecified: trace.WithSpanKind(trace.SpanKindUnspecified),
	trace.SpanKindInternal:    trace.WithSpanKind(trace.SpanKindInternal),
	trace.SpanKindServer:      trace.WithSpanKind(trace.SpanKindServer),
	trace.SpanKindClient:      trace.WithSpanKind(trace.SpanKindClient),
	trace.SpanKindProducer:    trace.WithSpanKind(trace.SpanKindProducer),
	trace.SpanKindConsumer:    trace.WithSpanKind(trace.SpanKindConsumer),
}

// End ends span, marking it failed with err's message when err is not
// nil. The message is the error's text, which Stepline's errors keep free
// of secrets.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Inject writes ctx's trace context (W3C traceparent, tracestate and
// baggage when tracing is on) into the headers of an outbound request.
// With tracing off it writes nothing.
func Inject(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}

// Config is what Setup needs, as FromEnv reads it.
type Config struct {
	// Disabled is OTEL_SDK_DISABLED=true.
	Disabled bool
	// Exporter is OTEL_TRACES_EXPORTER: "" (otlp when an endpoint is
	// set), "otlp" or "none".
	Exporter string
	// Endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT, as written (OTLP.URL is where spans
	// go); Setup asks whether one is set.
	Endpoint string
	// Protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
	// OTEL_EXPORTER_OTLP_PROTOCOL; only "http/json" (the default here) is
	// supported.
	Protocol string
	// ServiceName is the service.name when OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES name none (resource.WithFromEnv reads them).
	ServiceName string
	// OTLP is the exporter's configuration from the
	// OTEL_EXPORTER_OTLP_* variables (otlpjson.FromEnv).
	OTLP otlpjson.Config
	// OTLPErr names the OTEL_EXPORTER_OTLP_* values FromEnv found
	// malformed and left out; Setup returns it.
	OTLPErr error
}

// FromEnv reads the OTEL_* variables Setup decides on.
func FromEnv(getenv func(string) string, serviceName string) Config {
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	c := Config{
		Disabled:    strings.EqualFold(first("OTEL_SDK_DISABLED"), "true"),
		Exporter:    strings.ToLower(first("OTEL_TRACES_EXPORTER")),
		Endpoint:    first("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
		Protocol:    strings.ToLower(first("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")),
		ServiceName: serviceName,
	}
	c.OTLP, c.OTLPErr = otlpjson.FromEnv(getenv)
	return c
}

// Enabled reports whether c asks for traces to be exported.
func (c Config) Enabled() bool {
	if c.Disabled {
		return false
	}
	switch c.Exporter {
	case "otlp":
		return true
	case "":
		return c.Endpoint != ""
	}
	return false
}

// ErrUnsupported is returned by Setup for an exporter or protocol it does
// not have; tracing stays off.
var ErrUnsupported = errors.New("unsupported")

// Provider is the tracer provider Setup installed; the zero value (and
// nil) is tracing off, whose methods do nothing.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// Setup installs the global tracer provider and propagators c asks for.
// When c does not enable tracing it installs OpenTelemetry's no-op
// provider (no exporter, no goroutine; its spans cost less than those of
// the default global provider) and returns a nil Provider and no error.
// An exporter or protocol it does not have is an error wrapping
// ErrUnsupported, and tracing stays off the same way; so does an
// endpoint it cannot use. When tracing is on and some OTEL_EXPORTER_OTLP_*
// values were malformed (left out, their defaults used), Setup returns
// the Provider and an error naming them, for the caller to warn about.
func Setup(ctx context.Context, c Config) (*Provider, error) {
	off := func(err error) (*Provider, error) {
		otel.SetTracerProvider(noop.NewTracerProvider())
		return nil, err
	}
	if c.Disabled || c.Exporter == "none" {
		return off(nil)
	}
	if c.Exporter != "" && c.Exporter != "otlp" {
		return off(fmt.Errorf("OTEL_TRACES_EXPORTER %q: %w (otlp or none)", c.Exporter, ErrUnsupported))
	}
	if !c.Enabled() {
		return off(nil)
	}
	if c.Protocol != "" && c.Protocol != "http/json" {
		return off(fmt.Errorf("OTLP protocol %q: %w: Stepline sends OTLP/HTTP JSON only; set OTEL_EXPORTER_OTLP_PROTOCOL=http/json or leave it unset (a collector's OTLP/HTTP port, 4318, takes both)", c.Protocol, ErrUnsupported))
	}
	if c.OTLP.URL == "" && c.OTLPErr != nil {
		return off(fmt.Errorf("OTLP exporter: %w", c.OTLPErr))
	}
	exp, err := otlpjson.New(c.OTLP)
	if err != nil {
		return off(fmt.Errorf("OTLP exporter: %w", err))
	}
	p := NewProvider(c.ServiceName, sdktrace.WithBatcher(exp))
	otel.SetTracerProvider(p.tp)
	otel.SetTextMapPropagator(Propagator())
	if c.OTLPErr != nil {
		return p, fmt.Errorf("OTLP exporter settings left out: %w", c.OTLPErr)
	}
	return p, nil
}

// Propagator is the propagator Setup installs: W3C trace context and
// baggage.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// NewProvider returns a tracer provider over opts (a span processor or
// exporter) with the service's resource: serviceName unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name another. Setup uses
// it; tests pass an in-memory exporter and install it with Install.
func NewProvider(serviceName string, opts ...sdktrace.TracerProviderOption) *Provider {
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithFromEnv()}
	if serviceName != "" {
		attrs = append([]resource.Option{resource.WithAttributes(attribute.String("service.name", serviceName))}, attrs...)
	}
	res, err := resource.New(context.Background(), attrs...)
	if err != nil {
		res = resource.Default() // a malformed OTEL_RESOURCE_ATTRIBUTES: keep what parsed
	}
	return &Provider{tp: sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, opts...)...)}
}

// Install makes p the global tracer provider and Propagator the global
// propagator, and returns a function that turns tracing off again (tests):
// no-op ones take their place (OpenTelemetry's global delegate, the
// state before anything was installed, cannot be put back).
func Install(p *Provider) (uninstall func()) {
	otel.SetTracerProvider(p.tp)
	otel.SetTextMapPropagator(Propagator())
	return func() {
		_ = p.Shutdown(context.Background())
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	}
}

// Flush exports the spans ended so far (a Lambda function calls it at the
// end of each invocation, before the runtime freezes it).
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// Shutdown exports what is left and stops the exporter, within
// DefaultShutdownTimeout.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer cancel()
	return p.tp.Shutdown(ctx)
}
