// Package agent is Stepline's agent runtime: named profiles (model,
// system prompt, MCP tools, limits) that a step runs as a tool loop.
//
// # Profiles
//
// A profile is a directory agents/<name>/ (the project's agents
// directory, see package project) holding agent.yaml and soul.md, laid
// out as the reference gateway lays them out, so its agents copy over.
// soul.md is the system prompt (UTF-8, at most 64 KiB; an empty file is
// allowed, a missing one is an error). agent.yaml (at most 64 KiB, read
// with package yamldoc's bounds) holds:
//
//	name                         required; the directory's name
//	description                  text
//	model                        required; "<provider>/<model>", or a model alone
//	model_fallbacks              up to 10 models, tried in order after model
//	max_tokens                   1..1000000
//	temperature                  0..2 (0..1 for the anthropic and bedrock APIs)
//	thinking_level               off, minimal, low, medium, high, xhigh
//	tools                        MCP server names, or {server: [tool globs]}
//	max_iterations               1..1000, default 20 model calls
//	tool_timeout_seconds         1..900, default 30 per tool call
//	trace_tool_result_max_chars  1..1000000, default 3000 characters of a
//	                             tool result kept in the step's trace
//
// Any other key is an error (with the key it was likely meant to be),
// and so is a value of the wrong type or outside its range; an optional
// key written empty keeps its default. LoadProfiles and LoadProfile read
// profiles and ParseProfile checks what the files alone decide, each
// problem a Diagnostic at file:line:col; CheckProfile checks a profile
// against its project: that each model's provider is known (and that
// temperature fits its API), that each granted server is declared, and
// warns about a grant the tool policy never lets a call through.
//
// A model string's provider is the part before its first slash when that
// part is a provider name: one of BuiltinProviders (anthropic, bedrock,
// openai, openrouter, ollama) or one the project declares (any other
// name, an OpenAI-compatible endpoint). A model written without one
// (gpt-4o-mini, or a Bedrock ARN) is open: the step's executor (gateway,
// anthropic or bedrock) carries it. Providers.Resolve turns a model
// string into the Endpoint a step calls.
//
// A profile's Version is the first 12 hexadecimal digits of the SHA-256
// of its two files' exact bytes, each framed by its name and length (see
// Version): any edit, a comment included, makes a new version.
//
// # The tool policy
//
// Policy.Decide applies the project's tool_policy to a call: the first
// rule whose server (exact), tool and agent (globs, see MatchGlob) and
// input_regex (RE2, searched in the call's JSON arguments) all match
// decides, else the default. The loop hands the policy, and then the
// tool, the arguments re-encoded in one canonical form (keys sorted, a
// repeated key once, strings with only the escapes JSON requires), so
// that an escape such as "\u0064rop" or a repeated key cannot hide a
// word from an input_regex. Arguments over MaxPolicyInputBytes are not
// searched and the decision fails closed: a deny rule with an
// input_regex denies such a call, an allow rule with one does not allow
// it. Policy.MayAllow answers whether any call could be allowed, for the
// project's warnings.//
// # The tool loop
//
// Loop runs an agent step: Start lists the tools each granted server
// offers (filtered by the grant's globs; a granted tool's description is
// cut to MaxToolDescriptionBytes, and a name over MaxToolNameBytes, a
// schema over MaxToolSchemaBytes or specs over MaxToolSpecsBytes in all
// stop the step with a *fault.ConfigError naming the tool, as more than
// MaxTools granted tools do) and builds the system prompt,
// the profile's soul followed by the LLMOutput instruction; each Turn
// makes one model call and acts on the reply. A reply with tool calls
// has each call decided by the policy first (a denied call is answered
// to the model as an error, recorded as tool_denied, never run), then
// run within the profile's tool_timeout_seconds, and the answers go back
// to the model in the next call. A reply without tool calls is the
// final answer: the structured-output runner judges it (Runner.Judge),
// and a rejected answer is re-asked with the runner's feedback while its
// retries last. Every model call, re-asks included, is an iteration.
//
// Tools are shown to the model as "server__tool" (the reference
// gateway's naming; characters the APIs refuse become "_", the name is
// cut to 64 characters and a clash gets a numeric suffix); the trace,
// the policy's messages and the responses file name them "server.tool",
// and a call by either name is understood.
//
// What ends a loop: an accepted answer; max_iterations model calls
// without one (*fault.AgentIterationsExhausted; the calls of a last turn
// that still asks for tools are recorded, not run); the deadline
// (*fault.AgentDeadlineExceeded): the step's timeout_seconds and the
// caller's own deadline, the earlier, less a twentieth (1 to 10 s) kept
// to record the step, DefaultDeadline when neither is set; the runner's
// InvalidOutput or ModelRefused; a model failure (typed as the
// executor's); an MCP server that cannot be reached
// (*fault.ExecutorUnavailable, retried like any). Neither agent fault is
// in fault.Retryable: a loop that spent its iterations or its time would
// spend them again. Everything else a tool does goes back to the model
// as an error result: its own error, a protocol error about the call
// (unknown tool, invalid arguments), a timeout, arguments that are not a
// JSON object or are over MaxArgumentsBytes, more than
// MaxToolCallsPerTurn calls in one reply.
//
// Tool output is untrusted. It is text handed to the model, cut to
// MaxToolResultBytes per answer (with a note of how much was left out)
// and MaxToolOutputBytes per step; it is never parsed, never becomes
// the step's output, its name or a runner-reserved field, and never
// reaches another step. Only the model's final answer is parsed.
//
// # Remote agents
//
// A Resolved with Remote set names an agent that runs on a remote
// runtime (an OpenClaw gateway, a remote agent gateway; package executor
// speaks their protocols): Profile holds only its name, and the runtime's
// own profile decides model, tools and limits. The same Loop drives it:
// each Turn is one run there, whose reply carries the runtime's own trace
// (ModelReply.Trace, kept in place of the loop's text event, iterations
// numbered after the events before it, tool_denied and cut results
// flagged) and the agent's version (ModelReply.AgentVersion, kept in
// Conversation.Version). A rejected answer is re-asked as for any model,
// and Iterations counts the runs.
//
// # MCP
//
// The Toolbox over real MCP servers is package mcp below this one
// (mcp.Client), kept apart so that what reads profiles (the compiler, the
// pipeline model every function links) does not link the MCP SDK.
//
// # The trace
//
// A step's trace is a JSON array of Events, in the order they happened,
// the shape a grounding judge reads (stable: fields may be added, none
// renamed or removed):
//
//	{"type": "text",        "iteration": 1, "content": "Let me check the error rate."}
//	{"type": "tool_call",   "iteration": 1, "id": "call_1", "name": "grafana.query", "arguments": {"expr": "…"}}
//	{"type": "tool_result", "iteration": 1, "id": "call_1", "name": "grafana.query", "content": "…", "is_error": false}
//	{"type": "tool_result", …, "content": "<first 3000 characters>", "truncated": true, "chars": 1048576}
//	{"type": "tool_denied", "iteration": 2, "id": "call_2", "name": "jira.delete_issue", "reason": "read only"}
//	{"type": "text",        "iteration": 3, "content": "{\"confidence\": 0.8, …}"}
//
// iteration is the model call an event belongs to; a tool_call and the
// tool_result or tool_denied answering it share id; a denied call has no
// tool_result. Tool results (and text, and arguments) are cut to the
// profile's trace_tool_result_max_chars, marked truncated with the full
// length in chars, and the step's record is flagged
// tool_result_truncated. The model was sent up to MaxToolResultBytes of
// the same answer (flag tool_output_cut when cut). Package steprun keeps
// the trace in the step's record, or in the artifact store when it is
// over the record's limit.
//
// # Conversation state
//
// Conversation is a loop's whole state between turns (system prompt,
// messages, the tools by wire name, iterations, answers judged, the
// tool output sent so far, the deadline, the trace, usage per model,
// flags, the accepted answer) and encodes to JSON and back without
// loss: a loop can stop after any Turn and go on in another invocation.
// Its size is bounded (see Conversation): with the defaults at most
// about 15 MiB, typically tens of KiB. A step that keeps it between Tasks
// (one longer than an invocation, package steprun) refuses one over
// 8 MiB, what the artifact store reads back.
//
// # Performance
//
// Measured on this project's shared 2-core machine (load from other
// builds moves figures by up to 2x; the range of five runs is quoted):
//
//	go test -run '^$' -bench LoopIteration -count 5 ./shared/agent
//	BenchmarkLoopIteration   16.6-29.7 µs per iteration, 312 allocs per 11 iterations
//
// That is the loop's own work per model call outside model and tool
// time (name resolution, policy decision, bounds, trace, and the final
// answer judged by the runner), against a target of 50 µs. An agent step
// whose model answers at once costs 1.06-1.11x a single-call step
// (BenchmarkAgentStep in package steprun; target 1.2x).
package agent
