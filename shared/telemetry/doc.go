// Package telemetry is Stepline's tracing: it sets up an OpenTelemetry
// tracer provider from the standard OTEL_* variables, names the spans and
// attributes every package records, and carries the W3C traceparent into
// outbound HTTP requests.
//
// # Setup
//
// Setup is called once, from a main (the CLI, each Lambda function), with
// the values FromEnv read from the environment. Tracing is on when an OTLP
// endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is "otlp",
// and off when OTEL_SDK_DISABLED is "true" or OTEL_TRACES_EXPORTER is
// "none". Off, Setup installs OpenTelemetry's no-op provider: no
// exporter, no goroutine, and the spans the packages start are no-op
// spans that cost about 170 ns and three small allocations each (see
// BenchmarkSpan; attributes are only built for a recording span). On, it installs a tracer
// provider exporting over OTLP/HTTP (protobuf) in batches and the W3C
// trace-context and baggage propagators as the global ones. The exporter
// reads its own OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, certificates) and the SDK its OTEL_TRACES_SAMPLER* and
// OTEL_BSP_* ones, as the OpenTelemetry specification says.
//
// # Why the global provider
//
// Stepline's packages take their configuration as values (only mains read
// the environment), with one exception: they start spans through
// OpenTelemetry's global tracer provider, which Setup installs. That is
// the convention of OpenTelemetry instrumentation libraries, and it keeps
// tracing out of every constructor between main and the code measured.
// Until a provider is installed the global one hands out no-op spans.
//
// # Spans
//
// A local run is a trace whose root span is "run <pipeline>" (a resumed
// or decided run: "resume <pipeline>"); on AWS each Task invocation is a
// trace of its own, joined to the others of its run by stepline.run.id.
// Under it: one span per Task of the state machine, named by its mode and
// step ("step triage", "branch checks/lint", "join checks", "approval
// review", …), "verify <step>" for a verifier, "agent_iteration <agent>"
// per turn of an agent's tool loop, "chat <model>" per model call (step
// executors and agents alike, re-asks included) and "execute_tool <tool>"
// per tool call. Model and tool spans carry the GenAI semantic-convention
// attributes (gen_ai.operation.name, gen_ai.system and
// gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model,
// gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, gen_ai.tool.name);
// Stepline's own are stepline.pipeline, stepline.run.id, stepline.step,
// stepline.status and stepline.confidence. No span carries a prompt, a
// reply, a tool's arguments or output, or a secret.
package telemetry
