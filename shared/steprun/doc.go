// Package steprun is the step handler the compiled state machines invoke:
// one Task of a pipeline run, on AWS (the step Lambda) and in the local
// engine alike.
//
// [Handler.Handle] reads a [task.Request] and answers a [task.Response]. By
// the Request's mode it
//
//   - step: renders the prompt and executor_config with Liquid over the step
//     context, executes through the structured-output runner (which re-asks
//     on invalid output), runs the verifier when its trigger fires, repeats
//     for loop_until, decides (confidence gate, then proceed, then budget)
//     and records the attempt;
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
//     its on_failure webhook (muted in stage testing).
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
// agents) fails with a ConfigError rather than making a plain call.
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
//   - Values rendered into executor_config and failure webhooks are
//     escaped (secret.Escape) so that text from a model or a trigger can
//     never name a secret; ${NAME} written in the pipeline still resolves.
//   - fan_out.on_empty: abort ends the group (and the run) aborted, the
//     status its name promises, rather than failed.
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
//     sub_run_id and sub_pipeline_status from the child execution.
//   - No secret value reaches a record, a log line or a Response through
//     this package. Prompts are never secret-expanded and no template
//     variable holds a secret, so a prompt cannot render one; an executor
//     scrubs the values it resolved from everything it returns (package
//     executor), and outputs, raw responses, errors and the later steps'
//     context are made of that; a failure webhook's errors leave through
//     the redactor that resolved its ${NAME} references.
//   - Step records are ordered by Index = milliseconds since the run
//     started, which is the execution order without any counter to keep.
//   - The run record is created on first contact; runs that end at a step
//     (stopped, escalated, aborted, failed) are closed here with their
//     reason. A run that completes is closed by whoever sees the state
//     machine end, since no step knows it is the last.
package steprun
