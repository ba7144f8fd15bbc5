package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvEnabled(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		err     bool
	}{
		{"nothing set", nil, false, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, false},
		{"exporter otlp alone", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, false},
		{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, false},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
		{"grpc protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, true},
		{"http/protobuf protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, true},
		{"traces protocol overrides", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, true, false},
		{"malformed endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := FromEnv(env(tc.env), "svc")
			if c.Enabled() != tc.enabled {
				t.Errorf("Enabled() = %v, want %v (%+v)", c.Enabled(), tc.enabled, c)
			}
			if !tc.err {
				return
			}
			p, err := Setup(context.Background(), c)
			if err == nil || p != nil {
				t.Errorf("Setup: %v, %v; want an error and no provider", p, err)
			}
			if _, ok := otel.GetTracerProvider().(noop.TracerProvider); !ok {
				t.Errorf("global provider %T after a refused configuration, want the no-op one", otel.GetTracerProvider())
			}
		})
	}
}

// TestSetupOffIsNoop: without configuration the global provider is the
// no-op one, whose spans record nothing, and Inject writes no header.
func TestSetupOffIsNoop(t *testing.T) {
	p, err := Setup(context.Background(), FromEnv(env(nil), "svc"))
	if p != nil || err != nil {
		t.Fatalf("Setup: %v, %v", p, err)
	}
	if _, ok := otel.GetTracerProvider().(noop.TracerProvider); !ok {
		t.Errorf("global provider %T after Setup without configuration, want the no-op one", otel.GetTracerProvider())
	}
	ctx, span := Start(context.Background(), "x", trace.SpanKindInternal)
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("span records with tracing off")
	}
	h := http.Header{}
	Inject(ctx, h)
	End(span, errors.New("boom"))
	if len(h) != 0 {
		t.Errorf("headers %v with tracing off", h)
	}
	// The nil provider's methods do nothing.
	if err := p.Flush(context.Background()); err != nil {
		t.Error(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestSetupOnExports: an endpoint set, spans go to it over OTLP/HTTP.
func TestSetupOnExports(t *testing.T) {
	got := make(chan request, 4)
	srv := newCollector(t, got)
	t.Setenv("OTEL_SERVICE_NAME", "stepline-test")
	p, err := Setup(context.Background(), FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}), "svc"))
	if err != nil || p == nil {
		t.Fatalf("Setup: %v, %v", p, err)
	}
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	_, span := Start(context.Background(), "step triage", trace.SpanKindInternal)
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.path != "/v1/traces" || r.contentType != "application/json" {
			t.Errorf("export %s %s", r.path, r.contentType)
		}
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string
						Value struct{ StringValue string }
					}
				}
				ScopeSpans []struct {
					Scope struct{ Name string }
					Spans []struct{ Name string }
				}
			}
		}
		if err := json.Unmarshal(r.body, &req); err != nil || len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
			t.Fatalf("body %s: %v", r.body, err)
		}
		ss := req.ResourceSpans[0].ScopeSpans[0]
		if ss.Scope.Name != Instrumentation || len(ss.Spans) != 1 || ss.Spans[0].Name != "step triage" {
			t.Errorf("scope spans %+v", ss)
		}
		service := ""
		for _, a := range req.ResourceSpans[0].Resource.Attributes {
			if a.Key == "service.name" {
				service = a.Value.StringValue
			}
		}
		if service != "stepline-test" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", service)
		}
	default:
		t.Fatal("nothing exported")
	}
}

// TestSetupLeftOut: malformed exporter settings beside a good endpoint
// leave tracing on, and Setup names them (never a header's value);
// SetupCLI warns without saying tracing is off.
func TestSetupLeftOut(t *testing.T) {
	got := make(chan request, 4)
	srv := newCollector(t, got)
	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-key=good,sk-leaked-value",
		"OTEL_EXPORTER_OTLP_TIMEOUT":  "soon",
	}
	p, err := Setup(context.Background(), FromEnv(env(vars), "svc"))
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	if p == nil || err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_HEADERS: entry 2") ||
		!strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TIMEOUT") || strings.Contains(err.Error(), "sk-leaked") {
		t.Fatalf("Setup: %v, %v", p, err)
	}
	_, span := Start(context.Background(), "step triage", trace.SpanKindInternal)
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.key != "good" {
		t.Errorf("x-key %q sent", r.key)
	}

	var warn strings.Builder
	stop := SetupCLI(context.Background(), env(vars), &warn, func() {})
	stop()
	if w := warn.String(); !strings.HasPrefix(w, "stepline: tracing: OTLP exporter settings left out") || strings.Contains(w, "sk-leaked") {
		t.Errorf("warning %q", w)
	}
	warn.Reset()
	SetupCLI(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}), &warn, func() {})()
	if w := warn.String(); !strings.Contains(w, "tracing is off") || !strings.Contains(w, "http/json") {
		t.Errorf("warning %q", w)
	}
}

func TestTraceParentFromXRay(t *testing.T) {
	cases := []struct{ header, want string }{
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"},
		{"Root=1-5759E988-BD862E3FE1BE46A994272793;Parent=53995C3F42CD8AD8;Sampled=0", "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00"},
		{"Root=1-5759e988-bd862e3fe1be46a99427279;Parent=53995c3f42cd8ad8", ""}, // short root
		{"Root=2-5759e988-bd862e3fe1be46a994272793", ""},
		{"", ""},
	}
	for _, tc := range cases {
		if got := TraceParentFromXRay(tc.header); got != tc.want {
			t.Errorf("TraceParentFromXRay(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
	got := TraceParentFromXRay("Root=1-5759e988-bd862e3fe1be46a994272793")
	if !strings.HasPrefix(got, "00-5759e988bd862e3fe1be46a994272793-") || !strings.HasSuffix(got, "-00") || len(got) != 55 {
		t.Errorf("no Parent: %q, want the trace with a random parent, not sampled", got)
	}
	// A Lambda's own span is exported whatever Sampled says.
	if got := sampledParent("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"); got != "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01" {
		t.Errorf("sampledParent = %q", got)
	}
	if got := sampledParent("Root=2-x"); got != "" {
		t.Errorf("sampledParent of a bad header = %q", got)
	}
}

// TestLambdaJoinsXRayTrace: the invocation span is a child of the X-Ray
// trace the runtime gives, the handler's spans under it, all exported
// when the invocation returns.
func TestLambdaJoinsXRayTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p := NewProvider("fn", sdktrace.WithBatcher(exp))
	defer Install(p)()
	h := Lambda(p, "step", func(ctx context.Context, in string) (string, error) {
		_, span := Start(ctx, "step "+in, trace.SpanKindInternal)
		span.End()
		return "ok", errors.New("step failed")
	})
	//lint:ignore SA1029 the key aws-lambda-go puts the X-Ray header under
	ctx := context.WithValue(context.Background(), "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")
	if out, err := h(ctx, "triage"); out != "ok" || err == nil {
		t.Fatalf("handler: %q, %v", out, err)
	}
	spans := exp.GetSpans() // no Shutdown: Lambda flushed them
	if len(spans) != 2 {
		t.Fatalf("%d spans exported at the end of the invocation", len(spans))
	}
	inner, outer := spans[0], spans[1]
	if outer.Name != "step" || outer.SpanKind != trace.SpanKindServer || outer.Parent.SpanID().String() != "53995c3f42cd8ad8" ||
		outer.SpanContext.TraceID().String() != "5759e988bd862e3fe1be46a994272793" || outer.Status.Description != "step failed" {
		t.Errorf("invocation span %s kind %s parent %s trace %s status %v", outer.Name, outer.SpanKind, outer.Parent.SpanID(), outer.SpanContext.TraceID(), outer.Status)
	}
	if inner.Name != "step triage" || inner.Parent.SpanID() != outer.SpanContext.SpanID() {
		t.Errorf("handler span %q under %s", inner.Name, inner.Parent.SpanID())
	}
	// Tracing off: the handler itself.
	if got := Lambda[string, string](nil, "step", nil); got != nil {
		t.Error("Lambda(nil, …) wrapped a nil handler")
	}
}

// BenchmarkSpan is the cost of a span around some work: with
// OpenTelemetry's default global provider (nothing installed), off (the
// no-op provider Setup installs when nothing is configured), and recorded
// by the SDK (exported in batches to an exporter that drops them).
func BenchmarkSpan(b *testing.B) {
	work := func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, span := Start(ctx, "step", trace.SpanKindInternal)
			if span.IsRecording() {
				span.SetAttributes(Step.String("triage"), Confidence.Float64(0.9))
			}
			End(span, nil)
		}
	}
	b.Run("default-global", work)     // before anything is installed
	b.Run("off", func(b *testing.B) { // what Setup installs when nothing is configured
		if p, err := Setup(context.Background(), Config{}); p != nil || err != nil {
			b.Fatal(p, err)
		}
		work(b)
	})
	b.Run("on", func(b *testing.B) {
		defer Install(NewProvider("bench", sdktrace.WithBatcher(tracetest.NewNoopExporter())))()
		work(b)
	})
}
