package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// SetupCLI sets up tracing for a command from its environment (FromEnv,
// service "stepline") and returns stop followed by the provider's Shutdown,
// which exports the spans left: the command calls it once, before it exits.
// A configuration Setup refuses is reported on warn and tracing stays off;
// the command goes on. Settings Setup left out are reported there too.
func SetupCLI(ctx context.Context, getenv func(string) string, warn io.Writer, stop func()) func() {
	p, err := Setup(ctx, FromEnv(getenv, "stepline"))
	switch {
	case err != nil && p == nil:
		fmt.Fprintf(warn, "stepline: tracing is off: %v\n", err)
	case err != nil:
		fmt.Fprintf(warn, "stepline: tracing: %v\n", err)
	}
	if p == nil {
		return stop
	}
	return func() {
		stop()
		_ = p.Shutdown(ctx)
	}
}

// Lambda wraps a Lambda function's handler: each invocation is a server
// span named name, a child of the invocation's X-Ray trace when the
// runtime gives one (so that the Tasks of a run traced by Step Functions
// share its trace), and the spans are exported before the invocation
// returns (the runtime may freeze the process right after). With p nil
// (tracing off) it returns h itself.
func Lambda[In, Out any](p *Provider, name string, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if p == nil {
		return h
	}
	return func(ctx context.Context, in In) (Out, error) {
		if tp := sampledParent(lambdaTraceHeader(ctx)); tp != "" && !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = Propagator().Extract(ctx, propagation.MapCarrier{"traceparent": tp})
		}
		ctx, span := Start(ctx, name, trace.SpanKindServer)
		out, err := h(ctx, in)
		End(span, err)
		_ = p.Flush(ctx)
		return out, err
	}
}

// lambdaTraceHeader is the invocation's X-Ray trace header, which the Lambda
// runtime (aws-lambda-go) puts in the context under this string key.
func lambdaTraceHeader(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string)
	return h
}

// TraceParentFromXRay turns an X-Ray trace header (a Lambda invocation's
// "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
// into a W3C traceparent on the same trace (X-Ray accepts W3C trace IDs):
// the root's two parts as the trace ID, Parent (a random one when missing)
// as the parent span, the sampled flag as Sampled says. A malformed header
// gives "".
func TraceParentFromXRay(header string) string {
	var root, parent, sampled string
	for _, part := range strings.Split(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v
		}
	}
	f := strings.Split(root, "-")
	if len(f) != 3 || f[0] != "1" || len(f[1]) != 8 || len(f[2]) != 24 || !isHex(f[1]+f[2]) {
		return ""
	}
	if len(parent) != 16 || !isHex(parent) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		parent = hex.EncodeToString(b[:])
	}
	flags := "00"
	if sampled == "1" {
		flags = "01"
	}
	return "00-" + strings.ToLower(f[1]+f[2]) + "-" + strings.ToLower(parent) + "-" + flags
}

// sampledParent is the invocation's X-Ray parent as a traceparent whose
// flags say "sampled" whatever Sampled said: a Lambda without active
// tracing gets Sampled=0, and exporting was asked for by configuring it.
func sampledParent(header string) string {
	tp := TraceParentFromXRay(header)
	if tp == "" {
		return ""
	}
	return tp[:len(tp)-2] + "01"
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// TraceParent is ctx's span as a W3C traceparent, "" when ctx has no
// valid span (tracing off): for protocols that carry it in a body rather
// than a header.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// SetupFunction sets up tracing for a Lambda function from its
// environment (FromEnv): its service name is OTEL_SERVICE_NAME, else the
// function's name (AWS_LAMBDA_FUNCTION_NAME), else "stepline-"+name. A
// configuration Setup refuses is logged and tracing stays off; settings
// it left out are logged too. Wrap the handler with Lambda.
func SetupFunction(ctx context.Context, getenv func(string) string, name string, log *slog.Logger) *Provider {
	service := getenv("AWS_LAMBDA_FUNCTION_NAME")
	if service == "" {
		service = "stepline-" + name
	}
	p, err := Setup(ctx, FromEnv(getenv, service))
	switch {
	case err == nil || log == nil:
	case p == nil:
		log.Warn("tracing is off", "err", err)
	default:
		log.Warn("tracing settings left out", "err", err)
	}
	return p
}
