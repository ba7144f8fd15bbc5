// Package steprun is the step handler the compiled state machines invoke:
// one Task of a pipeline run, on AWS (the step Lambda) and in the local
// engine alike.
//
// [Handler.Handle] reads a [task.Request] and answers a [task.Response];
// an answer that ends the run (a deciding mode's stopped, escalated,
// aborted or failed: [Ends]) is returned instead as a *fault.RunEnded
// error holding it (bounded: [MaxEndedAnswerBytes]), which the state
// machine catches by its name, Stepline.RunEnded, and sends to its
// terminal state, so that a completed step goes straight on to the next
// Task ([Handler.Respond] returns every answer as it is). By the
// Request's mode it
//
//   - step: renders the prompt and executor_config with Liquid over the step
//     context, executes through the structured-output runner (which re-asks
//     on invalid output; a webhook's or notify step's answer is judged
//     once, since asking again delivers again), runs the verifier when its trigger fires, repeats
//     for loop_until, grounds and checks (see The trust vector), decides
//     (the gate on the combined trust, then proceed, then budget) and
//     records the attempt;
//   - branch: does the same for one parallel branch or fan-out item without
//     gating; an executor error is answered as a failed branch (confidence
//     0), never returned. A human branch's decision (approved: confidence
//     1, rejected: 0) and a sub-pipeline branch's outcome (the child's
//     answer, or confidence 1 or 0 by its status) become the branch's
//     output the same way;
//   - join: combines the branch confidences (all_must_pass = min,
//     any_must_pass = max, weighted_average = Σc·w/Σw; a failed branch
//     counts 0), gates and records the group;
//   - approval: records a pending approval holding the task token and tells
//     the approvers through the [Notifier]. The approval is named as the
//     run's steps name what it decides: a step or a parallel branch by its
//     name, a fan-out item "<fan_out>/<i>" (its key in steps, 0-based),
//     which is what `stepline approve RUN STEP` takes;
//   - human, child: turn a human decision or a sub-pipeline's outcome into
//     the step's output, gate and record it;
//   - child_input: renders a sub-pipeline step's (or branch's, or item's)
//     executor_config.context and answers the child's trigger: the
//     parent's, with summary and severity replaced, labels and metadata
//     merged key by key, pipeline set to the child, source to
//     "sub-pipeline", no fingerprint, the parent's team;
//   - failure: records a step whose Task failed after its retries and sends
//     its on_failure webhook (muted in stage testing);
//   - agent_turns: runs a batch of model calls of a sequential agent step
//     that outlives one invocation, and, once the agent has answered,
//     verifies, decides and records it as step does (below);
//   - check: goes on with a step that paused for a human check (see The
//     trust vector);
//   - finish: closes the record of a run that completed (its output and
//     usage) and counts it in Runs: the last Task of an Express workflow,
//     whose end no status change event reports to the recorder function.
//     A step that ends an Express run (task.Pipeline.Workflow "express")
//     counts it in Runs too.
//
// # The trust vector
//
// After a sequential step's answer (and its verifier), in this order:
//
//  1. Grounding (G), when the step has grounding: the judge agent
//     (grounding.agent, resolved by the compiler; a profile such as
//     agents/grounding-judge) runs through the same agent runtime as an
//     agent step, under the executor key "<step>:grounding", within
//     grounding.timeout_seconds. It reads the rendered task, the step's
//     answer (the compact output without artifacts) and a transcript of
//     its trace (each event cut to grounding.max_trace_chars characters,
//     the whole to MaxJudgeTraceBytes), and answers with an LLMOutput
//     whose confidence is G, the share of the answer's load-bearing
//     claims the trace supports, listing them in reasoning.claims
//     ({claim, supported, evidence}). A step whose trace holds no tool
//     result has nothing to check: G is null and no judge is called (a
//     trace of text alone has no evidence, and a judge would mark every
//     claim unsupported). A judge that fails or runs out of time leaves G
//     null (soft: flag grounding_failed). What the judge spends is the
//     step's (its record's tokens and cost, the run's usage and budget).
//  2. Deterministic checks (D), in order: webhook checks (the request's
//     url, headers and payload rendered and ${NAME}-expanded as a failure
//     webhook's are; any HTTP status is an answer, and expect decides
//     over response.status_code, response.body, JSON-decoded when it is
//     JSON, and response.headers), shell checks (see below) and human
//     checks. expect is a when: expression (package compiler/when: the
//     same language, checked by the compiler), evaluated here in Go with
//     the meaning package when gives it; TestExpectMatchesLowering holds
//     it to the JSONata the state machine evaluates. Check templates see
//     the step context and output, the step's own answer. A check that
//     fails, errs or times out fails closed: the checks after it are
//     skipped and D is false. Webhook and shell checks are not muted in
//     stage testing (they verify; they are not side effects), and a
//     human check that times out fails in every stage (an approval by
//     default would be trust nobody gave).
//  3. Calibration (C), for a step with a calibration block: its bucket
//     (store.Bucket: pipeline, step, executor or executor:agent, model,
//     provider, prompt hash, agent version, as its record has them) is
//     read from the store (CalibrationStore.BucketSamples: one Query on
//     DynamoDB) and the bin of calibration.bin_width its effective
//     confidence falls in is weighed: with at least n_min labelled
//     executions it is validated and C is its mean label (correct 1,
//     partial 0.5, incorrect 0; a step's feedback over a failed check's 0
//     over the run's feedback). An unvalidated bin gives C = 0 under
//     on_uncalibrated: escalate (so an enforcing step escalates until its
//     history exists: a fresh install, or a changed model, prompt or
//     agent version, starts with none) and no C under proceed; a failed
//     read counts as unvalidated. The report's calibration section
//     holds the bucket, the bin, its count and mean.
//  4. The combined trust (CombineTrust) and the gate: the effective
//     confidence, replaced by C when calibration.enforce and C is known,
//     capped at G when grounding.enforce and G is known, 0 when a check
//     failed. The gate's policy is the trust vector when calibration
//     enforces, an enforcing judge gave a score or the step has checks,
//     else the legacy confidence gate; either way
//     the combined trust meets the step's confidence_threshold and
//     on_low_confidence. The step's output (what later steps see, and
//     the record's output) holds the combined trust as its confidence;
//     the record keeps the effective confidence (S after V) as
//     effective_confidence, what calibration bins by; its trust report (store.TrustReport, versioned)
//     holds S, S after V, V with its mode, strategy and veto floor, G, C,
//     D, the combined trust, the judge's verdict, each check's outcome and
//     the gate's policy and decision. Every gated record carries one (a
//     human or sub-pipeline step's and a group's join too, with their
//     confidence as the only signal); a branch, which does not gate, has
//     none. After its record, a step that declares calibration adds its
//     sample to its bucket (its effective confidence, whether a check
//     failed); `calibration: {enforce: false}` collects the history
//     before calibration is enforced, and a step without the block pays
//     nothing for it. A failure to add it is logged, not the step's. Every record carries the prompt template's content hash
//     (store.PromptHash).
//
// A human check pauses the step: its record is written with status
// waiting (store.StepWaiting, which the step's next record replaces),
// holding the answer and the trust so far, the step's usage is added to
// the run's, and the Task answers StatusCheck with the check
// (task.CheckAt). The state machine then runs an approval Task for it
// (task token; the approval is named "<step>:check:<name>", which is what
// `stepline approve` and a responses file use; its message is the check's
// message rendered, or by default the answer's summary as text, never
// rendered) and hands the decision, or the error that ended the wait, to
// a check Task, which applies it (approve passes, reject fails, a timeout
// or error fails closed), runs the checks after it, and gates and
// records the step or pauses at its next human check. A long agent step
// whose answer comes late in its Task leaves the judge and the checks to
// the next Task when their timeouts do not fit in what is left of the
// invocation.
//
// Shell checks run their command (/bin/sh -c) only where
// Handler.ShellChecks is set: the CLI's local runs. Every {{ }} output of
// run is one shell word, quoted as shlex.quote quotes it, so a value from
// a model or an event is never shell syntax; the command is the author's,
// runs unsandboxed with the process's environment (a ${NAME} the author
// wrote is the shell's own expansion) and is killed at its timeout. The
// step Lambda does not set ShellChecks, and cdk synth refuses a pipeline
// with a shell check: a Lambda container runs every pipeline's steps with
// the step function's role and secrets in its environment and reuses its
// /tmp across runs, and its image has no tools such a command would use.
// In scripted runs (Handler.CheckReplies), webhook and shell checks answer
// from replies under "<step>:check:<name>" (a body with HTTP 200, or
// output with exit code 0; {error: ...} is a check that could not run),
// so nothing leaves the machine.
//
// # Agent steps
//
// A step, branch or fan-out whose config carries a resolved agent
// (executor_config.agent, resolved by the compiler) runs package agent's
// tool loop instead of one model call: the model and the tools come from
// Handler.Agents (by default Executors, when it is an *executor.Registry),
// the loop's deadline is the step's timeout_seconds less a margin to
// record the step, and its final answer is judged by the same runner and
// gated like any step's. The step's record gains the agent's name and
// version, the loop's iterations (model calls, re-asks included), tokens
// and cost summed over every call (each priced by its own provider and
// model), the flags the loop set (tool_denied, tool_result_truncated,
// tool_output_cut) and the trace. A trace over store.MaxTraceBytes is
// kept in the artifact store as "<record>.trace/trace.json" (S3 on AWS)
// and the record holds its reference (TraceRef); without an artifact
// store its last events are left out to fit and the record is flagged
// trace_cut. A failed agent step records what its loop spent too. A step
// that names an agent but carries no resolved one (compiled before
// agents) fails with a ConfigError rather than making a plain call. The
// Response of an agent step (or branch) carries a task.AgentSummary: the
// agent, its model calls and tool calls, for progress displays.
//
// # Agent steps that outlive one invocation
//
// A sequential agent step whose timeout_seconds is over what one Lambda
// invocation allows (900 s) is compiled to an agent_turns Task that the
// state machine invokes again and again (package compiler). Each Task
// takes up the conversation (agent.Conversation, JSON) where the
// previous one left it and makes model calls, each with the tool calls
// it asks for, while Handler.AgentInvocationBudget lasts
// (DefaultAgentInvocationBudget, 800 s: no call starts after it, and
// the first call of a Task always does); a call still running when the
// invocation's own deadline is 10 s away is given up and made again by
// the next Task. It then hands back: it answers StatusContinue with a
// task.AgentLoop (the number of model calls kept, the Tasks and retries
// so far, the step's start and its deadline) that the state machine
// passes to the step's next Task. The deadline is fixed when the step's
// first Task starts (timeout_seconds less the margin to record) and
// carried, so the step's timeout_seconds holds across Tasks; a Task that
// starts past it fails with AgentDeadlineExceeded. Once the agent has
// answered, the Task verifies (the verifier's call is left to the next
// Task when the answer came after the budget), gates and records the step
// as a single-invocation agent step: the same record, trace, output,
// flags and usage.
//
// The conversation is kept in the artifact store (S3 on AWS, the
// artifacts directory locally; a step function without one fails such a
// step with a ConfigError), under the step segment "<record>.agent":
// latest.json, rewritten after every model call, and turn-<n>.json, the
// conversation a Task handed back after n model calls, written once per
// hand-back under its number. Each holds the whole conversation with the
// turn the Task that wrote it started from. A Task that continues turn n
// takes up latest.json when it was written by a Task that started from n
// or later, else turn-<n>.json: so a retried Task (the step's retry:, or
// Lambda's) goes on from the model calls its failed attempt kept, and
// one whose answer was lost from the turn it handed back, and no model
// call or tool call that was kept is made again or appears twice in the
// trace; a call that was not kept (the invocation ended during it) is
// made again. The step's first Task, retried, takes up latest.json when
// its failed attempt wrote one, else starts afresh. A conversation is at
// most MaxConversationBytes (8 MiB, what S3 reads back of one object) as
// kept; past it the step fails with a ConfigError (lower the agent's
// max_iterations or trace_tool_result_max_chars).
//
// Usage is added to the run's stored totals as each model call is made,
// keyed by its turn, the Task and the attempt, so a call counts once
// however the Tasks are retried (and a call made again counts again);
// the verifier's usage is added with the step's record. A failed Task
// records a failed attempt as a step does, with the loop so far; the
// attempt of a record counts the step's Tasks that were retried
// (AgentLoop.Retries plus the Task's own attempt). loop_until is refused
// for such a step (the compiler refuses it too).
//
// Each model call writes one artifact and, when it reports usage, one
// usage update; each Task but the step's first reads one or two
// artifacts, and one that hands back writes two (in place of the call's
// one). BenchmarkAgentTurns runs a loop of eleven model calls as one
// Task and as eleven: the eleven Tasks cost 1.3-2.5 ms more per call
// (the conversation kept on the local disk, usage in SQLite; shared
// 2-core machine), against model calls of seconds.
//
// BenchmarkAgentStep compares an agent step whose model answers at once
// with a single-call step: 1.06-1.11x (medians 150-201 µs against
// 136-189 µs with 100 earlier steps, five runs on the shared 2-core
// machine), within the 1.2x target.
//
// # Errors
//
// In step mode an executor failure is recorded as a failed attempt and
// returned as its typed fault (package fault), so the state machine's
// Retry and Catch rules see ExecutorTimeout, InvalidOutput and friends; a
// template that does not render is a *fault.TemplateError naming the step,
// the field and the line. The Lambda adapter returns fault.Surface(err).
//
// # Choices
//
//   - The step context is built lazily: the steps given in the Request are
//     decoded only when a template reads them, the hyphen-to-underscore
//     aliases are worked out only on a miss, and artifacts are fetched
//     only when read. Reading a field of a step that is not in the context
//     (skipped, never ran, or null in the Request: a group's branch that
//     gave no output) is a template error, as in the reference service;
//     an undefined top-level name renders empty.
//   - steps.x.confidence, as later steps, when: conditions, joins and
//     notifications read it and the step's recorded output holds it, is
//     the one its gate decided on: the combined trust, after the
//     verifier, calibration, grounding and checks (a failed check makes
//     it 0), not the record's effective_confidence (S after V). The reference runner's context holds the agent's own
//     number there; Stepline deliberately does not, so that a later step
//     never trusts a figure the runner itself rejected and a branch's
//     output feeds its join by the same field. The agent's own number is
//     in the step's record (primary_confidence) and its trust report.
//   - A step that ends the run fires the pipeline's notifications for it.
//     In stage testing they are muted (logged at their config.level,
//     warning by default, never sent), fired before the step's record is
//     written, and the record names each (flag
//     notification_muted:<action>:<channel>): the run's record says what
//     would have been sent. (A run the state machine ended without a step
//     answering is notified by the recorder function on AWS, which logs
//     its muted deliveries but has no step record to flag.)
//   - An extra field an answer gave as null stays in the step's output as
//     null: "steps.x.f is none" holds for it and not for a field the
//     answer never gave, as in the reference runner.
//   - Values rendered into executor_config and failure webhooks are
//     escaped (secret.Escape) so that text from a model or a trigger can
//     never name a secret; ${NAME} written in the pipeline still resolves.
//   - fan_out.on_empty: abort ends the group, and the run, failed (flag
//     empty_abort, the reason "fan-out "x" has no items (on_empty:
//     abort)"), as the reference runner does: the notification fired is
//     escalate, as for any failed group, not the fan-out's on_abort.
//   - A failure Task writes its own record after the step's recorded
//     attempts (attempt = last recorded + 1, flag failure_outcome), because
//     a Task that timed out or crashed left no record of its own; the flag
//     tells it from a real try.
//   - The runner's bookkeeping is never read back from a field a model can
//     set. A branch is failed when its Task's status says so (the status
//     the branch answered, or the one the state machine's Catch wrote),
//     or when its output has no numeric confidence; the output's failed
//     field is never read, and confidence and summary are read by their
//     exact names. Replies that carry a runner-reserved name (failed,
//     failed_branches, join, sub_run_id, sub_pipeline_status; see package
//     llmoutput) have it dropped by the parser, and the step's record is
//     flagged reserved_field_ignored (executor_field_ignored for model,
//     provider, raw_response). A pipeline step's output is the child's
//     final answer without the child's own runner-reserved fields, plus
//     sub_run_id and sub_pipeline_status from the child execution. A
//     child that did not complete gives confidence 0, the summary
//     "Sub-pipeline '<name>' <status>" and its run's reason as
//     next_step_context: the status and reason its own run was recorded
//     with, read from the child's description that fails the parent's
//     Task on Step Functions and in the local engine alike
//     (runend.ChildEnd), never the engine's error text.
//   - No secret value reaches a record, a log line or a Response through
//     this package. Prompts are never secret-expanded and no template
//     variable holds a secret, so a prompt cannot render one; an executor
//     scrubs the values it resolved from everything it returns (package
//     executor), and outputs, raw responses, errors and the later steps'
//     context are made of that; a failure webhook's errors leave through
//     the redactor that resolved its ${NAME} references.
//   - A value rendered into a URL (an executor's url or base_url, a
//     webhook check's or an on_failure webhook's url) after the URL's
//     scheme and host is percent-encoded whole, as one path segment or
//     one query value: an event's or a reply's "../", "?", "&" or "#"
//     cannot reach another endpoint, add a parameter or cut off the query
//     the pipeline wrote; a value rendered in the scheme and host part
//     (a whole base URL) is pasted as written, and a "." or ".." path
//     segment in the result is a TemplateError. Such requests follow a
//     redirect only within their origin (MaxRedirects).
//   - What depends only on the compiled definition is worked out once per
//     process and kept, each cache bounded at 4,096 entries: a template's
//     parse (by its text), a prompt template's hash, and a sequential
//     step's decoded config (by its Task's step text; only a step that
//     holds nothing the handler hands on, such as an agent, a verifier or
//     checks, is shared). The handler never changes what it keeps.
//   - Step records are ordered by Index = milliseconds since the run
//     started, and within one millisecond by the instant their Task
//     started (store.SortSteps; the name decides only between records
//     that started at the same nanosecond), which is the execution order
//     without any counter to keep: a step starts after the one before it
//     ended. A group's branches and items are in the order they started
//     (they run at once), its join after them; a rerun's reused records
//     before its own (store.CopyForRerun).
//   - The run record is created on first contact; runs that end at a step
//     (stopped, escalated, aborted, failed) are closed here with their
//     reason. A run that completes is closed by whoever sees the state
//     machine end, since no step knows it is the last.
package steprun
