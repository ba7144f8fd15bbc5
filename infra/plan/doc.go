// Package plan works out, from a directory of pipeline files, what the CDK
// stack (package infra) deploys for them: each pipeline's compiled
// definition and the resources it substitutes, the sub-pipelines it
// starts, the secrets and Bedrock models its functions need, the longest
// step timeout, the EventBridge rules compiled from trigger.match and the
// EventBridge Scheduler expression compiled from schedule.cron.
//
// It imports no CDK code, so its decisions are unit-tested in milliseconds
// and the stack only turns them into resources.
//
// Each file is compiled through package compiler/gate, as stepline
// validate compiles it, in the same project (Load finds the stepline.yaml
// above the directory; LoadIn takes it): what validate accepts
// synthesizes, and what it refuses fails synth with the same positioned
// errors. The plan adds only what needs the whole directory (unique names
// and substitutions), the stack's configuration (the secret mappings),
// or AWS: an agent step whose agent needs a stdio MCP server is refused,
// positioned at its executor_config and naming the agent and the server,
// and so is a shell deterministic check, positioned at its type: the step
// function runs no commands (its role and secrets are every pipeline's,
// its container outlives a run). A step's grounding judge counts as an
// agent (its models' secrets and Bedrock models, its remote runtime), and
// the ${NAME} references of its webhook checks (url, headers, payload) are
// among the pipeline's Secrets.
// The ${NAME} references of agents' models (api_key, base_url) and MCP
// servers (url, headers, env) are among a pipeline's Secrets, and their
// Bedrock models among its Models. So are a remote agent's (package
// project: an openclaw step, a gateway step on the remote agent
// gateway): the gateway's token and URL references, and the OpenClaw
// device identity, which on AWS is the secrets OPENCLAW_DEVICE and
// OPENCLAW_DEVICE_AUTH (device.json and device-auth.json, each whole;
// map them in stepline:secrets, e.g. to secretsmanager:stepline/openclaw-device).
// A remote agent the step function cannot reach is refused, positioned
// at its executor_config: a runtime stepline.yaml does not configure,
// or one at a loopback address (localhost, 127.0.0.0/8, ::1). A gateway step without
// api_key reads the secret OPENAI_API_KEY by default (DefaultSecrets): the
// functions may read it when stepline:secrets maps it, and such steps send
// no key when it does not.
//
// # Triggers on EventBridge
//
// A Stepline trigger event on EventBridge has detail-type "Stepline
// Trigger" (DetailType), the trigger's source as its source, and the
// normalized trigger as its detail, in the wire form of the ingest
// function's context: {source, pipeline, severity, summary, fingerprint,
// team, labels{...}, metadata{...}, received_at}. A trigger.match key is
// looked up where the runtime looks it up: "source" in the event's source,
// "severity" and "summary" in detail, any other key in detail.labels.
//
// A condition is exact when EventBridge decides it as the ingest
// function's matcher does:
//
//	key: "text"  or  eq: "text"     → ["text"]
//	in: ["a", "b"]                  → ["a", "b"]
//	ne: "text"                      → [{"anything-but": "text"}]
//	not_in: ["a", "b"]              → [{"anything-but": ["a", "b"]}]
//
// All four need the key to be present, as the matcher does for labels; the
// detail must therefore carry severity and summary (the wire form always
// does). The others are not exact: regex (EventBridge has no regular
// expressions), gt/gte/lt/lte (EventBridge's numeric filter compares JSON
// numbers, and label values are strings the matcher converts), eq, in, ne
// and not_in with a number, a boolean or null (a label holds the text "5",
// never the number 5), and any condition on "pipeline" (see below). Such a
// condition becomes [{"exists": true}] on its key (no filter for source or
// pipeline), so the rule's pattern lets through a superset of the matching
// events, and the rule targets the ingest function, which applies the
// whole trigger.match again before it starts a run.
//
// An event that names its pipeline (a non-empty detail.pipeline) is routed
// by that name alone, as a webhook is: every trigger rule requires
// detail.pipeline to be absent or empty, and one more rule
// (ExplicitPattern) sends the named events to the ingest function.
//
// Deduplication needs the run store, so it happens in the ingest function.
// A pipeline whose conditions are all exact gets a rule that starts its
// state machine directly with {"trigger": <detail>} as the execution
// input; when the pipeline deduplicates (trigger.dedup.enabled, true
// unless set to false), that rule also requires detail.fingerprint to be
// absent or empty (no fingerprint, no dedup), and a second rule sends the
// events that carry one to the ingest function.
//
// One difference remains: EventBridge delivers an event to every rule it
// matches, so an event that two pipelines' triggers accept starts both,
// where a webhook starts the first pipeline in file order. Keep the
// triggers of pipelines fed by EventBridge disjoint.
//
// # Schedules
//
// schedule.cron is a five-field cron expression (minute hour day-of-month
// month day-of-week, 0 or 7 = Sunday) in UTC. EventBridge Scheduler wants
// six fields with one of day-of-month and day-of-week written "?", so a
// field with a step or a list is written out as ranges and values, weekdays
// by name; an expression that restricts both day fields (standard cron runs
// it when either matches) cannot be expressed and is an error.
package plan
