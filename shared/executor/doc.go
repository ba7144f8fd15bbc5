// Package executor calls the services a pipeline step runs on: models behind
// OpenAI-compatible gateways, the Anthropic Messages API, Amazon Bedrock's
// Converse API, outgoing webhooks and notifications, and scripted replies
// for offline runs.
//
// Every executor a step can call is an llmoutput.Provider: it turns a
// Request (the rendered prompt, and the JSON schema of the answer) into a
// Completion (the raw reply, finish reason, model, provider, token usage and
// the response body for audit). Judging the reply is the structured-output
// runner's job (package llmoutput), not the executor's. Webhook and notify
// steps answer with the JSON text of an LLMOutput: the server's own when its
// body is one, else a synthesised "delivered" answer.
//
// A [Registry] is built once per process from [Deps] (HTTP client, secret
// resolver, Bedrock client, scripted replies) and hands out a Provider per
// step call. The human and pipeline executors are driven by the state
// machine (task tokens, child runs); they are registered so that
// configurations naming them validate, but have no Provider; nor has
// openclaw, whose steps run an agent (see Remote agent runtimes). [CheckConfig]
// validates an executor_config without any network, for the compiler.
//
// [Defaults] are what a config falls back on from where it runs, read by
// main ([DefaultsFromEnv]) and passed in (Deps.Defaults,
// Defaults.CheckConfig): a gateway step without base_url calls
// OPENAI_BASE_URL, and without api_key sends the secret OPENAI_API_KEY
// when it is set, as the OpenAI SDKs do. Checking warns about a gateway
// step that neither names a base_url nor has one from the environment; a
// call without either fails with a ConfigError.
//
// # Agent steps
//
// [Registry.Agent] hands an agent step (executor_config.agent, resolved
// by the compiler into an agent.Resolved) its model and its tools, for
// package agent's loop. The model calls the resolved models in order,
// the next one only when a call fails for a reason a retry could fix
// (ExecutorUnavailable, ExecutorTimeout, RateLimited), each through its
// API's native tool calling:
//
//   - gateway (OpenAI-compatible): "tools" of type function with a
//     tool_choice of "auto"; the assistant's tool_calls (arguments as JSON
//     text) and one message of role "tool" per result, with its
//     tool_call_id (an error result's content begins "ERROR: ", the API
//     having no error flag); thinking_level as reasoning_effort (xhigh
//     sent as high); the answer's response_format as for a single call;
//   - anthropic (Messages): "tools" with input_schema, tool_choice
//     {"type": "auto"}; tool_use blocks in the assistant's content and
//     tool_result blocks (tool_use_id, content, is_error) in the next user
//     message; thinking_level as extended thinking (budget_tokens 1024,
//     2048, 8192, 16384, 32768 from minimal to xhigh, max_tokens raised
//     above the budget, no temperature); the answer is not forced through
//     a tool, which would stop the model from calling the others;
//   - bedrock (Converse): toolConfig.tools[].toolSpec with
//     inputSchema.json; toolUse blocks in the assistant's content and
//     toolResult blocks (toolUseId, content [{text}], status success or
//     error) in the next user message; thinking_level as Claude's thinking
//     in additionalModelRequestFields (Claude models only).
//
// An assistant turn is sent back to the provider that wrote it verbatim
// (its content blocks, thinking and signatures included); a fallback
// model of another API gets its text and calls. The step's
// executor_config applies to a model of the step executor's own API; a
// model of another API gets only the endpoint's base URL and key (a
// gateway endpoint of a provider without a key sends none, never the
// default OPENAI_API_KEY). Every turn goes through the same deadline and
// redactor as a single call: secrets the turn resolved are scrubbed from
// the reply's text, calls, arguments and audit body.
//
// The tools are one mcp.Client per registry: MCP sessions live as long as
// the process and [Registry.Close] ends them (the CLI and the Lambda
// main call it at shutdown). Deps.MCPStdio lets stdio servers start
// (local runs only). With scripted replies, the model and the tools
// answer from the responses file (see [Responses]) and nothing reaches
// the network.
//
// # Remote agent runtimes
//
// An agent step whose resolved agent runs on a remote runtime
// (agent.Resolved.Remote: every openclaw step, and a gateway step whose
// agent the project's remote agent gateway serves; see package project)
// gets from [Registry.Agent] a model whose every turn is one run there,
// over a WebSocket (github.com/coder/websocket), and no toolbox: the
// runtime runs its own tools. Each turn dials the runtime, answers its
// challenge, sends one agent request and reads frames until the final
// result, skipping the events it does not need; closing the connection
// when done, failed or out of time ends the run on the remote side too.
//
//   - openclaw speaks the OpenClaw Gateway protocol: the connect.challenge
//     event's nonce is signed with the device's Ed25519 key (the v3
//     payload v3|deviceId|gateway-client|backend|operator|scopes|signedAt|token|nonce|platform|,
//     OpenClawSignaturePayload; base64url signature and raw public key),
//     connect carries the device and its operator token (protocol 3 to
//     4), then agent {message, agentId, sessionKey, idempotencyKey,
//     model, thinking, extraSystemPrompt (the answer's instruction),
//     timeout (the seconds left)} is answered by accepted, then ok with
//     result.payloads and meta.agentMeta {provider, model, usage}. The
//     identity is device.json and device-auth.json: read from the
//     directory the step names when Deps.OpenClawIdentityFiles is set
//     (local runs; ~ is Deps.Home), else from the secrets
//     OPENCLAW_DEVICE and OPENCLAW_DEVICE_AUTH (the step function on
//     AWS). A run given up is also asked to stop (chat.abort), since an
//     OpenClaw run outlives its connection. OpenClaw records no trace a
//     client receives: the step's trace is the answer's text.
//   - gateway (a remote agent gateway, the reference gateway's /rpc)
//     answers its challenge with connect {auth: {token}}, then agent
//     {agentId, sessionKey, message, model, thinkingLevel,
//     traceToolResultMax (trace_max_chars), traceparent (W3C; from
//     Deps.TraceParent, else a new trace)} is answered by accepted, any
//     number of trace_event frames, and ok with payloads,
//     meta.agentMeta {model, provider, agentVersion, usage} and the whole
//     trace. Its trace becomes the step's, in package agent's shape:
//     llm_call numbers the iterations; text, tool_call, tool_result and
//     tool_denied keep their meaning (names "server__tool" written
//     "server.tool", calls given ids their result or denial shares, a
//     result the gateway cut marked truncated); thinking, llm_retry and
//     model_fallback are left out; contents are cut to trace_max_chars
//     (default 3000) and at most MaxRemoteTraceEvents are kept.
//
// The session key is the step's executor_config.session_key as the step
// rendered it (the compiler writes the default); it must start with
// "agent:<agent>:" and fit MaxSessionKeyBytes. A rejected answer is asked
// again by the loop: OpenClaw keeps a session's conversation, so the
// re-ask is the runner's feedback alone in the same session; the remote
// gateway's sessions keep none, so its re-ask carries the prompt, the
// instruction, the earlier answers and the feedback. Every frame is read
// within MaxFrameBytes and scrubbed of the call's secrets (the token,
// the identity) before it is parsed; an idle connection is pinged every
// Deps.RemotePing (DefaultRemotePing).
//
// Failures: a connection refused or reset, a dropped connection, an
// unanswered ping, a frame that is not JSON or too large, an HTTP 5xx or
// 408 on the upgrade are ExecutorUnavailable; no handshake within
// HandshakeTimeout ExecutorTimeout; an HTTP 401, 403 or other 4xx on the
// upgrade, a refused identity or token, a policy-violation close and a
// missing or malformed identity ConfigError, never retried. An agent
// request refused before it is accepted (an unknown agent, a session key
// of another agent) is ExecutorRejected; a run that fails after it is an
// executor error with the runtime's message: OpenClaw's code decides
// (UNAVAILABLE or retryable: ExecutorUnavailable, AGENT_TIMEOUT:
// ExecutorTimeout, FORBIDDEN and pairing: ConfigError, else
// ExecutorRejected); on the remote gateway "max iterations" is
// AgentIterationsExhausted, an internal error or every model failing
// ExecutorUnavailable, anything else ExecutorRejected. Without
// executors.openclaw.url an openclaw step fails with a ConfigError
// naming that setting.
//
// # Behaviour every executor shares
//
// Secrets: ${NAME} anywhere in executor_config (URLs, headers, keys,
// payloads) is resolved at call time through Deps.Secrets (see package
// secret); the rendered prompt is never expanded, so no secret is ever sent
// to a model. The call's resolved values are scrubbed from everything that
// comes back, by the call's own secret.Redactor, in two places: the reply
// as it arrives (body and header values, before anything parses, cuts or
// quotes it: a 300-character excerpt of an error body must not keep half
// a key), and everything Complete returns (the error, and every text of
// the Completion: the reply, which becomes the step's answer and its
// recorded raw_response, the refusal, the reported model and provider,
// the audit body). A provider or a webhook target that echoes a key, also
// behind JSON escapes, hands on [REDACTED] instead; what the runner
// stores, logs and prints comes from there.
//
// Redirects: a request follows a redirect only within its own origin (the
// same scheme, host and port, or from http to https on the same host),
// at most [MaxRedirects] times. A redirect elsewhere is not followed: the
// URL, headers and body carry the pipeline's secrets, and Go's client
// keeps custom headers (X-Api-Key, x-api-key) across hosts. The call
// fails with an ExecutorRejected naming the target's origin only.
//
// Deadlines: a call ends at the earlier of the step's timeout (Call.Timeout)
// and the executor's own timeout_seconds (defaults: [DefaultModelTimeout],
// [DefaultDeliveryTimeout]). A slow server never hangs a run.
//
// Errors are typed with package fault, whose type names are the ASL error
// names Retry and Catch match: a deadline is ExecutorTimeout; a transport
// failure, a truncated or malformed body (a token count reported outside
// 0..[MaxReportedTokens] included) or HTTP 5xx/408 is
// ExecutorUnavailable; HTTP 429 is RateLimited with the server's Retry-After
// (a wait that fits the deadline, up to Deps.MaxRetryWait, is taken once
// inside the call); other 4xx and unknown models are ExecutorRejected; a bad
// executor_config or a missing secret is ConfigError. A caller that cancels
// ctx gets an error wrapping context.Canceled.
//
// Bodies are read up to [MaxBodyBytes]; the response kept for audit in
// Completion.Raw is capped at [MaxRawBytes] and is always valid JSON.
//
// # Request bodies
//
// A body built from run data is written as structure:
// executor_config.payload on the webhook and notify executors, like a
// step's on_failure.webhook.payload (sent by package steprun). The three
// follow one rule: the runner renders each string leaf as a Liquid
// template on its own, then the whole value is encoded (JSON, Content-Type
// application/json, unless content_type asks for form fields), so a
// rendered value is always one string in the body and never structure.
// Leaves that are not strings keep their YAML type. A webhook's payload is
// a mapping or a list; without one, its body is the rendered
// prompt_template as text, and giving both is a ConfigError. notify also
// takes a string payload, sent as it is, and posts {} when it has none.
// With method GET there is no body: a payload is a ConfigError.
//
// Text bodies (a webhook's prompt_template, a notify string payload, a
// webhook notification's template) are the author's to encode: the
// compiler warns when such text is JSON and a {{ }} output is pasted into
// a string literal, or outside one without the json filter last. A value
// that must keep its JSON type (a list from the event, a number) is
// written outside quotes as {{ value | json }}.
package executor
