// Package otlpjson is a trace exporter for the OpenTelemetry SDK that
// sends spans over OTLP/HTTP with the JSON encoding: POST
// {endpoint}/v1/traces, Content-Type application/json, an
// ExportTraceServiceRequest in the protobuf JSON mapping as OTLP amends
// it (lowerCamelCase field names, trace and span IDs as hex strings,
// enums as integers, 64-bit integers as decimal strings).
//
// # Why not the SDK's exporter
//
// OpenTelemetry's own OTLP/HTTP exporter (otlptracehttp) encodes
// protobuf, and links protobuf's runtime, the generated OTLP types, gRPC
// and grpc-gateway into every binary that uses it, and their package
// initialisers run on every cold start, traced or not. This package
// needs only encoding/json and net/http, which every bootstrap has
// anyway. Measured on the five Lambda bootstraps (linux/arm64, stripped,
// as the Makefile builds them), each is 3.8-4.3 MB smaller with it than
// with otlptracehttp (step 17.7 MB → 13.4 MB), and
// `go list -deps ./functions/step | grep -c grpc` is 0 (69 before). The
// step function's cold start through the Runtime Interface Emulator
// (BenchmarkColdStart in functions/step, 12 runs of 40 cold starts each,
// alternated with the otlptracehttp build on a loaded 2-core machine)
// went from a median 1.80× a hello-world bootstrap's (1.46-1.99×,
// 11.1 ms) to 1.60× (1.45-1.79×, 10.2 ms). Exporting costs about 8 µs a
// span (BenchmarkExport: a batch of 512, encoding and loopback request).
//
// # What it does
//
//   - Spans are grouped as OTLP nests them (resource, then instrumentation
//     scope, each once per request) with every field the SDK records:
//     parent, trace state, flags (with the parent's remoteness), kind,
//     times, attributes of every type (slices, maps, bytes, NaN and the
//     infinities included), events, links, status and the dropped counts.
//   - A request body is at most Config.MaxRequestBytes
//     (DefaultMaxRequestBytes) before compression: a larger batch is split
//     over several requests, and a span too large for a request of its
//     own is left out and counted in the error.
//   - 429, 502, 503, 504 and connection failures are retried, up to
//     Config.MaxAttempts per request, after the collector's Retry-After
//     (seconds or a date) or an exponential backoff with jitter; other
//     answers are not retried. Config.Timeout bounds the whole export,
//     retries included: a Retry-After past it gives up at once.
//   - A partial success (spans the collector rejected, or its warning) is
//     reported to OpenTelemetry's error handler (otel.Handle) and not
//     retried, as the specification says.
//   - Headers are never logged. What a collector answers is scrubbed of
//     the header values (API keys) and bounded before it reaches an error,
//     and errors name the endpoint without its user info or query.
//     Redirects are not followed, so headers reach no other host.
//
// FromEnv reads the configuration from the OTEL_EXPORTER_OTLP_* variables
// (endpoint path rules, headers, timeout, compression, certificates); New
// takes it as a value.
package otlpjson
