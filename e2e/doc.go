// Package e2e is Stepline's offline AWS tier: compiled state machines run
// by an independent Step Functions interpreter (moto's, which is
// LocalStack's), with the real Lambda bootstraps, against an AWS API on
// this machine. `make e2e` runs it; CI runs it after `make test`.
//
// # The box
//
// e2e/box/launcher.py runs moto 5.2.1's server in its own process with the
// project's patches (e2e/box/patches.py: each one small, named, and
// refused when the moto code it replaces is not the code it was written
// for; e2e/box/test_patches.py checks what each gives), evaluates JSONata
// with the reference jsonata@2.0.6 in a long-lived Node process, and runs
// every Lambda invocation in the function's own deployment package under
// the Runtime Interface Emulator, in pools (one invocation per emulator
// at a time). [StartBox] starts it and [Box.Stop] stops it; the launcher
// stops what it started (the Node process, every emulator) by PID when
// its standard input closes, and its children die with it.
//
// The tier deploys the amd64 bootstraps make build leaves in
// bin/lambda-amd64 as the step, approval, callback and recorder functions
// ([Harness.Deploy]), and answers every model, MCP and webhook call from
// a fake server ([Fake]) scripted per scenario with the same responses
// file `stepline run --responses` reads.
//
// # Agent steps
//
// An agent step's scripted turns ({tool_calls: [...]}) are answered as
// native tool calls in the wire format of the step's model (OpenAI
// tool_calls, Anthropic tool_use, Bedrock Converse toolUse), and its
// tools by a fake MCP server per scenario and server (the official
// go-sdk's server over streamable HTTP, on loopback) listing the tools
// the responses file's tool_results scripts for it and answering each
// call with the next scripted answer, as `stepline run` does offline. A
// model request that does not carry back the result of every call of
// the turn before is refused (400), so a conversation that loses a
// result between Tasks fails the scenario.
//
// [Harness.Prepare] writes the project file that governs a scenario's
// pipelines beside them, its MCP servers' urls and its providers'
// base_url pointed at the fake and its directories written out
// ([RewriteProject]), so that the agents' profiles, and their versions,
// are the original ones; [Rewrite] points each agent step's model at the
// fake (its endpoint, or a Bedrock model named to the fake).
//
// The step function has the box's S3 bucket as ARTIFACT_BUCKET, where an
// agent step longer than one invocation keeps its conversation between
// Tasks, and AGENT_INVOCATION_BUDGET=1ns ([AgentBudget]): each of its
// Tasks makes one model call and hands back, so the box runs such a step
// across as many Tasks as its loop makes model calls, against the local
// run's one.
//
// # What it proves
//
//   - TestDifferential: every example pipeline and every scenario in
//     testdata/scenarios (one per decision path) runs through `stepline
//     run` (the local engine, scripted replies) and through the box, with
//     the same event and replies ([Rewrite] points the pipeline's calls
//     at the fake and changes nothing else). Run status, step statuses,
//     effective confidences and the normalised records ([Normalize]),
//     agent steps' agent, version, iterations and trace included, must
//     be identical; a difference fails the test with both sides, field by
//     field ([Diff]). An agent step longer than one invocation must run
//     in the box in the Tasks agentTasks names, every Task but the last
//     handing its conversation back through the bucket; every request to
//     a fake MCP server must carry the headers its project declares, with
//     their secrets resolved.
//   - TestHumanSteps: the approval function records the approval and logs
//     its signed link; the callback function's page and decision resume
//     the run with SendTaskSuccess; a reject, a replayed link, expired and
//     forged links, a used task token and SendTaskFailure behave.
//   - TestStack: make synth's template, through [Transform], is created by
//     the box's CloudFormation; its state machines carry their
//     substitutions and run; the unmodified multi-service-health example
//     runs through the stack's own ingest, step and recorder functions
//     and table; EventBridge triggers and execution status changes, which
//     moto does not deliver to Step Functions or Lambda, are delivered by
//     hand through the stack's own rules ([AWS.Deliver]).
//   - BenchmarkFiveStepRun: how long a 5-step run takes in the box, warm
//     (the target is under a second; a figure, not a test).
//
// # What the box cannot check
//
//   - IAM: moto does not enforce policies; the infra tests assert each
//     role's statements and cdk-nag's AwsSolutions pack.
//   - API Gateway: moto has no HTTP API v2; the tier hands the ingest and
//     callback functions API Gateway's events, and the infra tests assert
//     the routes and their authorization.
//   - Alarms, dashboards' content, X-Ray, Lambda architectures (arm64) and
//     memory: not emulated; the infra tests assert the resources.
//   - Timing and quotas of Step Functions and Lambda, and JSONata
//     evaluation errors' name (moto reports States.Runtime where Step
//     Functions reports States.QueryEvaluationError); compiled machines
//     raise none, and the engine's tests and asl-validator cover them.
//   - Agents on a remote runtime (OpenClaw, a remote agent gateway),
//     agent fan-outs, stdio MCP servers and an agent's Bedrock fallback
//     models: the rewriter refuses the first three (a Bedrock model is
//     named to the fake by its model ID, which only the first model
//     carries per step); the step function's own tests run remote agents
//     under the emulator against fake gateways (functions/step).
//   - A model call given up because the invocation's own deadline is
//     10 s away: the box's budget hands back after every call, and its
//     Lambda timeout (900 s) is never near.
//
// # Running
//
// The tests that need the box skip unless STEPLINE_E2E is set (make e2e
// sets it), so `go test ./...` runs only this package's unit tests; with
// STEPLINE_E2E set and CI true, a missing tool (moto, the emulator, the
// bootstraps, the synthesized template) fails instead of skipping.
//
// Logs and files, kept after the run in e2e/logs (emptied when the tier
// starts): box.log (every request moto served, the patches, each
// invocation's time), jsonata.log, lambda/<function>-<n>.log (each
// emulator: the function's own JSON logs), functions/ (the unpacked
// packages), scenarios/<name>/ (the rewritten pipelines, the compiled
// definitions, the rewritten stepline.yaml, the local run's state,
// local.json and box.json as compared, diff.txt, box-history.json),
// stack/ (the transformed template and what the transform did).
package e2e
