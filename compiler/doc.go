// Package compiler turns a pipeline file into an AWS Step Functions state
// machine. It works in three phases over the model in shared/pipeline:
//
//   - Parse reads the YAML within bounds, checks it against the published
//     JSON Schema (Schema) and every number against its field's range, and
//     builds the model with the format's defaults applied;
//   - Check finds what the schema cannot: duplicate names, references to
//     steps that do not exist or run later, when: expressions that do not
//     parse or name what no template could read, Liquid templates that do
//     not parse or use unknown tags and filters, executor configurations,
//     regex syntax, cron expressions EventBridge Scheduler cannot run,
//     sub-pipeline names that are no pipeline name, bedrock models written
//     as templates (the stack grants InvokeModel on the models a file
//     names), a fan_out over: a name that always holds text (a var, a
//     label, a trigger text field), and warnings for pipelines that work
//     but likely not as meant;
//   - Lower emits the state machine (package shared/asl), which Marshal
//     encodes in a stable order, and refuses one that Step Functions would
//     (see Limits).
//
// Build runs the three phases (lowering only a file without errors);
// BuildFile also checks that each sub-pipeline is defined by a file beside
// its parent, where stepline run and serve and the CDK app look for it,
// and that no sub-pipeline leads back to a pipeline already running (a
// cycle: each level would start another run, with no bound on the depth).
// A pipeline or library step file holds one YAML document; a second is
// refused where it starts. YAML syntax errors are placed where the text
// breaks (yamldoc.SyntaxError).
// BuildIn and BuildFileIn build in an Env that also holds the pipeline's
// project (package shared/project: stepline.yaml, its agents and its
// step library). The
// project's own diagnostics are the pipeline's, so a project with an
// error compiles no pipeline. A step, parallel branch or fan-out whose
// executor_config names an agent (on gateway, anthropic or bedrock) is
// resolved from the project by Check into its Agent field (the profile,
// the step's model and thinking level, the models' endpoints, the MCP
// servers the profile's tools name and the tool-policy rules that can
// apply), each problem at the executor_config key it is about: an unknown
// agent (with the name it was likely meant to be), an executor that
// cannot run one, a verifier naming one, a bad model or thinking level.
// Lower inlines the Agent in the Task's static payload like the rest of
// the step's configuration, so the step function reads no file, and the
// payload budget counts it. An openclaw step, and a gateway step whose
// agent the project has no profile of while executors.gateway names a
// remote agent gateway, run their agent on that remote runtime
// (project.Runtime): the Agent field then says where (Agent.Remote), the
// step's session_key ({{agent}} written out, default
// agent:<agent>:pipeline:{{pipeline_run_id}}:{{current_step}}) is
// written into its executor_config for the step function to render, and
// it must start with "agent:<agent>:". Without executors.openclaw an
// openclaw step compiles with one warning per pipeline and fails when it
// runs. A gateway step that runs no agent and sets no base_url or
// api_key takes the project's executors.openai values. A telegram
// notification that sets no config.bot_token, config.chat_id or
// config.teams takes the project's notifications.telegram values; a telegram notification needs
// both in the end (bot_token one ${NAME} reference, chat_id a number or
// @channelname), an msteams one config.url.
// Programs do not call them directly but through package compiler/gate,
// which adds package executor's configuration checks (the compiler takes
// them as a value, ExecutorCheck, so that it does not link the executors):
// stepline validate, compile, graph, run and serve, the intake router
// (and so the ingest function) and the CDK app all compile through it, so
// a file validate accepts, each of them accepts, and a file it refuses,
// each refuses with the same diagnostics.
//
// Every problem is a Diagnostic positioned file:line:col; all of a file's
// problems are collected and sorted, never only the first.
//
// # The step library
//
// A project's steps directory (package shared/project) holds library
// steps: each file is one sequential step with a description and tags.
// A step, a parallel branch or a fan_out names one with use: NAME (the
// name its file gives it) and is that step with the keys written beside
// use: over it: a local key replaces the library's, a local name renames
// the step, and executor_config merges at every depth (where both hold
// a mapping under a key, the two merge; a list, a scalar or null
// replaces). Parse resolves use: in the YAML tree before the schema and
// the decoder see it, so every later phase, every program that compiles
// through compiler/gate and the state machine hold the resolved step,
// each value positioned where it is written (in the pipeline or in the
// library file), and editing a library step changes the definition of
// every pipeline that uses it.
//
// Where the reference differs, deliberately: it merges executor_config
// one level deep (a nested mapping written locally replaces the
// library's whole), it does not resolve use: in a fan_out, it skips a
// library file that is not a mapping, keeps the later of two files of
// one name, and drops the fields a branch does not take. Here a fan_out
// takes use: too, and each of those is an error: a library step's field
// its place does not take (retry in a branch) at the library file's
// line.
//
// A library file is checked on its own (LoadLibrary, LoadStepFile): the
// schema and ranges of a step; no use:, parallel or fan_out; a string
// description and string tags; a name no other file of the library
// has; and Check, as in a pipeline that defines every step, var and
// name it refers to. Its errors are the errors of every pipeline of the
// project, as the project's own are, so a broken library compiles no
// pipeline; its warnings show where it is used. In each pipeline that
// uses it the resolved step is checked again in its place (a step it
// refers to that does not run earlier, a field the branch does not
// take). A problem positioned in a library file says which use: it is
// a problem of: (library step "x", used at p.yaml:12:9). An unknown name
// is an error at the use:, with the name likely meant. The library
// steps one pipeline uses add at most 1,000,000 YAML nodes to it (each
// use counted, aliases expanded), the budget of one file.
//
// # Bounds and ranges
//
// Parse reads the file with package shared/yamldoc, which refuses a
// document over 8 MiB, over 1,000,000 nodes once its aliases are expanded
// (a "billion laughs" file of a few hundred bytes is refused in
// microseconds, at the alias that crosses the budget), nested deeper than
// 100 levels, or with an alias inside the value it names. Nothing after it
// expands an alias the measure has not counted.
//
// Every numeric field has a range; a value outside it is an error that
// names the field, the value as written and the range ("step "a":
// retry.attempts: 2147483648 is out of range: 1..100"), at the value. NaN
// and infinities are errors too ("must be a finite number"), also as
// trigger.match operands. A number is never clamped or replaced by its
// default. The ranges, which the JSON Schema states as well:
//
//	version                             1..2147483647           informational
//	trigger.dedup.window_seconds        0..31536000             a year: the longest a Standard run lasts
//	durable.max_resume_age_seconds      1..31536000             (or null: the service default)
//	budget.max_tokens                   1..9007199254740991     2^53-1: exact as a JSON number (JSONata, the runtime)
//	budget.max_usd, budget.max_cost     above 0, up to 1000000
//	confidence_threshold                0..1                    steps, parallel and fan_out
//	timeout_seconds                     1..99999999             Step Functions' TimeoutSeconds limit; a step the
//	                                                            step function runs (every executor but human and
//	                                                            pipeline) at most 900, Lambda's limit (Check),
//	                                                            except a sequential agent step (below)
//	on_failure.webhook.timeout_seconds  1..45                   the failure Task has 60 s, 15 kept for the record
//	retry.attempts                      1..100                  total tries
//	retry.delay_seconds                 0..99999999             IntervalSeconds' limit
//	loop_until.confidence               0..1
//	loop_until.max_iterations           1..100
//	verifier.veto_floor                 0..1
//	verifier.trigger.confidence_below   0..1
//	verifier.trigger.confidence_above   0..1
//	weight                              above 0, up to 1000000  a branch's weight: relative, so a million to one
//	                                                            already means all or nothing
//	max_items                           1..1000                 a Map iteration costs about 7 of the run's
//	                                                            25,000 history events
//	grounding.timeout_seconds           1..800                  the judge runs in the step's Task, after its
//	                                                            answer; with the webhook and shell checks'
//	                                                            timeouts at most 800 s in all (Check)
//	grounding.max_trace_chars           1..1000000              characters of each trace event the judge reads
//	deterministic_checks.timeout_seconds 1..99999999            a human check waits in a Task of its own;
//	                                                            webhook and shell checks count in the 800 s
//	readiness.operational.min_runs      1..1000                 readiness reads at most 1000 runs of a
//	readiness.confidence.min_runs       1..1000                 pipeline (store.MaxRunLimit): a bar above
//	readiness.accuracy.min_marked       1..1000                 it could never be met
//	readiness.accuracy.min_human_marked 0..1000
//	readiness.calibration.n_min         1..1000
//	readiness.operational.max_age_days  1..36500                a century
//	readiness.confidence.min_confidence 0..1
//	readiness.accuracy.min_accuracy     0..1
//	readiness.calibration.max_divergence 0..1
//	readiness.calibration.bin_width     1/n for a whole n       it divides 0..1 into equal bins (Check)
//	calibration.bin_width               above 0, up to 1        and it must divide 1: the bins tile 0..1
//	calibration.n_min                   1..5000                 a bucket read keeps its newest 5000 executions
//	trigger.match operands              any finite number
//
// Whole-number fields take whole numbers only; a fraction there, or a
// value of the wrong type, is the schema's error.
//
// # Readiness
//
// readiness: (operational, confidence, accuracy, calibration) is parsed
// with its defaults (acceptable_statuses [completed]; accuracy
// require_current_config true; calibration n_min 20, bin_width 0.1,
// max_divergence 0.15, require_current_config true), checked (the ranges
// above, the schema's required fields and statuses, a bin_width that
// divides 1, a calibration that keeps require_current_config) and never
// lowered: it does not change the state machine, nor its config
// fingerprint. The checker warns about bars that cannot be met or are met
// too easily (see checkReadiness); package readiness judges them.
//
// # The state machine
//
// Definitions use QueryLanguage JSONata. The run's context lives in
// variables: the first state, "Start run", sets $pipeline (name, stage,
// vars, context_template.include, budget, notifications, and config: the
// definition's fingerprint, ConfigFingerprint of the definition before it
// was set, which each run records for readiness), $run (id,
// execution, started_at, parent_run_id), $trigger (the event), $usage
// (token and cost totals) and $last (the latest completed output); each
// step's compact output goes into a variable of its own, $step_<name>
// (hyphens as underscores; a fan-out's items into $items_<name>), so that
// recording a step costs the same at the first step as at the
// thousandth. A step that did not run has no variable (or, in a rerun, a
// null one): it reads as undefined, in when: conditions as in templates.
//
// "Start run" is a Choice: a run whose input has no rerun block takes its
// Default, which sets the variables, and goes to the first step. A rerun's
// input, {"trigger": …, "rerun": {"original_run_id", "from_step", "steps":
// {name: compact output}, "items": {fan_out: {"fan_out/i": output}}}},
// goes to "Rerun: load earlier steps", a Pass that sets the same variables
// and the step variables of every step the block names (a group's
// branches by their own name), then to "Rerun: go to step", a Choice with
// one rule per sequential step that goes on at from_step as a run that
// reached it would (through "Check <step>" when it has a when:). Steps
// before it do not run. A from_step that is not a sequential step ends the
// run in "Rerun: unknown step" (Fail, Stepline.RerunUnknownStep). The
// callers (stepline rerun, POST /runs/{id}/rerun) build the block from the
// earlier run's step records (package rerun) and check from_step first.
//
// A sequential step is a Task that invokes the step function
// (${StepFunctionArn}) with the step's static configuration inlined and
// the variables it needs (only the earlier outputs its templates name, as
// an object of the step variables). A step that completes goes from its
// Task straight to the next step (keeping its output as $last), or, when
// the next step has a when:, to "Check <next>", the Choice that checks
// it; so a run of n plain steps costs n+2 state transitions (the start,
// n Tasks, the end). An answer that ends the run (stopped, escalated,
// aborted, failed: the gate, proceed: false, the budget) is not returned
// as the Task's result: the step function fails the Task with the error
// Stepline.RunEnded (fault.RunEnded), its Cause the function's error
// response whose errorMessage is the answer as JSON, bounded to
// steprun.MaxEndedAnswerBytes (16 KiB as a JSON string, within Step
// Functions' 32,768 characters of Cause: a larger step output is left out
// of it — the step's record keeps it — then the reason is cut). Each
// deciding Task (a step, a human step's or a sub-pipeline's decision, a
// group's join, a human check's check Task) catches Stepline.RunEnded
// first: the Catch parses the answer
// ($parse($parse($states.errorOutput.Cause).errorMessage)) and goes to
// "Run ended", a Choice that takes the answer's usage as the run's (the
// Task's Assign does not run when it fails) and, by its status, ends the
// run in "Run stopped" (Succeed), "Run escalated", "Run
// aborted" or "Run failed" (Fail states with the errors
// Stepline.Escalated, Stepline.Aborted and Stepline.Failed; the cause
// names the step and the reason). No retrier matches Stepline.RunEnded
// (none names States.ALL or States.TaskFailed; a test walks every
// Task), and the name has a dot, which no Go type name has, so no other
// error can be caught as one. The local engine derives the same error
// name and Cause from the handler (engine.ErrorName, fault.Name), so both
// engines take the same path. $pipeline.run_ended_error (true) tells the
// step function that the definition catches the error: a definition
// compiled before (an execution started before an upgrade, a local run
// resumed on its saved definition) gets every answer as the Task's
// result, for the outcome Choice it has. A step whose Task may also answer continue
// (an agent step past one invocation) or check (a human check) keeps its
// outcome Choice, "<step>: outcome", whose first rules take those answers
// and whose completed rules go on (checking the next step's when: in the
// same Choice). when: conditions are total: they evaluate to true or
// false for any data, so a Choice never fails.
//
// The trade-off. The outcome Choice after every Task made a run of n
// steps cost 2n+2 transitions; ending a run by an error halves what
// Standard workflows bill for a long run (a 10-step run, measured with
// the local engine: 22 states entered before, 12 now; a run stopped at
// its fifth step 13 before, 8 now) and shortens the history (about 2
// events per step fewer). What it costs: an ended run's last Task shows
// in the console and the execution history as a failed Task with
// Stepline.RunEnded (a decision, not a failure: the cause holds the
// answer); Lambda counts those invocations in its Errors metric, so the
// stack alarms on Stepline's own TaskErrors metric instead (package
// infra); a guarded step costs its "Check" Choice, as it did before
// (then it was the previous step's outcome Choice); and a stopped run's
// output carries the step's output only when the answer fits the Cause's
// bound.
//
// retry: becomes a retrier over the retryable executor errors (package
// fault) and States.Timeout: MaxAttempts is attempts − 1, BackoffRate 2
// (exponential) or 1 (fixed), IntervalSeconds the delay rounded up to a
// whole second, at least 1. Every Task also retries Lambda service faults
// and has an explicit TimeoutSeconds: timeout_seconds times the calls one
// attempt may make (three per model call with re-asks, doubled by a
// verifier, times loop_until's iterations), within Lambda's 900 s; 900 s
// when no timeout is set. Verifiers and loop_until run inside the step
// function, in one invocation. Every Task catches States.ALL: with
// on_failure: abort the failure goes to the shared "Record failure" Task
// (record, failure webhook, then "Run failed"); with continue, to the
// step's own "<step>: failed" Task, which records the step with
// confidence 0 and goes on.
//
// A human step is a lambda:invoke.waitForTaskToken Task on
// ${ApprovalFunctionArn} (default timeout 300 s), then a Task that turns
// the decision into the step's output and gates it. In a pipeline of
// stage testing a Catch of States.Timeout turns the first timeout into an
// approval by TimeoutApprover, as the reference runner does, and the
// step's retry: does not retry a timeout there (nothing failed); in
// production the timeout fails the step, retried as any step's error. A sub-pipeline step is
// a states:startExecution.sync:2 Task on ${Pipeline<Name>Arn} (see
// ChildPlaceholder), then a Task that gates the child's outcome; the
// child's trigger is the parent's with pipeline, source and fingerprint
// set, or, with executor_config.context (summary, severity, labels,
// metadata), what a "<step>: context" Task renders from it first. A
// parallel group is a Parallel state of one Task per branch, then a join
// Task that combines the confidences and gates the group; a branch that
// fails counts as confidence 0. A fan_out is a Choice that checks the
// list (not a list or more than max_items: failed; empty: on_empty), a
// Map over it (MaxConcurrency = max_items, at most 40), and the join. A
// human or sub-pipeline branch (or fan-out item) waits inside the
// Parallel or Map the same way, then a "<state>: decision" Task turns the
// decision or the child's outcome into the branch's output, ungated.
//
// A sequential step's grounding judge and its webhook and shell checks
// run in the step's own Task, after its answer (package steprun): they add
// no state transition, and the Task's TimeoutSeconds grows by their
// timeouts (the checker keeps them within 800 s). The step's static
// configuration carries the judge's agent resolved from the project, as
// an agent step carries its own. A human check is its own Task, as a
// human step is: the step Task that reaches it answers "check" (its
// record waits), and a first rule of the step's outcome Choice per human
// check sends that answer, the check kept in $check_<name>, to "<step>:
// check <check>", a lambda:invoke.waitForTaskToken Task on
// ${ApprovalFunctionArn} with the check's timeout_seconds (default 300);
// its decision, or the error that ended the wait (a timeout fails the
// check; in stage testing it approves it, as a human step's does), goes to "<step>: checked", a Task that applies it, runs the
// checks after it, then gates and records the step or answers "check"
// for its next human check, through the same outcome Choice. A human
// check costs 3 state transitions more than the step (the approval Task,
// the check Task, the outcome Choice again), an approval invocation and a
// step invocation; a step with a human check keeps its outcome Choice.
// Grounding and deterministic_checks belong to
// sequential steps whose answer a model or a webhook gives; the checker
// refuses them on human and pipeline steps, and the schema in branches
// and fan-outs. A check's expect: is a when: expression (the same
// parser) over its result: response (webhook: status_code, body,
// headers) or result and exit_code (shell); the checker refuses other
// names and any expression the when: lowering refuses.
//
// A sequential step's calibration block (enforce, bin_width, n_min,
// on_uncalibrated; defaults off, 0.1, 20, proceed) adds no state either:
// it rides in the step's static configuration, and the step's Task looks
// its bucket up in the store (package steprun). The checker refuses it on
// human and pipeline steps and a bin_width that does not divide 1, the
// schema in branches and fan-outs, and it warns that enforce with
// on_uncalibrated: escalate escalates every run until the step's bin has
// n_min labelled executions (on a fresh install, and after any change of
// model, prompt or agent version, which starts a new bucket).
//
// Static strings (the step configurations, vars, notifications) go
// through one encoder, asl.Literal: a string that begins with {% or ends
// with %} (as a Liquid template may), is empty or holds a line break is
// written as a JSONata string literal that evaluates to it, {% '...' %},
// so that Step Functions never evaluates text and the pinned asl-validator
// accepts every definition; any other string is written as it is. String
// literals inside expressions (when: literals, names) are quoted by
// asl.Quote, which escapes a % next to a brace, so no expression holds a
// delimiter inside. ${NAME} secret placeholders are written with the brace
// escaped ($\u007bNAME}) so CloudFormation's definition substitutions
// leave them for the function to resolve at run time. A property test
// (TestStringsSurviveTheDefinition) compiles pipelines whose every string
// field begins and ends with {%, %}, {{, $, $$, ${, quotes, backslashes
// and line breaks, checks each definition with asl-validator and reads
// each string back through jsonata 2.0.6 and the engine's evaluator.
//
// # Workflow type
//
// workflow: auto (the default), standard or express picks the Step
// Functions workflow type on AWS; WorkflowOf is the one rule that
// validate (Check), compile (Lower), BuildFile and the CDK app follow. A
// pipeline can run as an Express workflow when nothing in it waits — no
// human step, branch, fan-out or check (Express cannot wait for a task
// token), no sub-pipeline (nor startExecution.sync) — and its longest run
// is bounded within ExpressBudgetSeconds (270 s: Express's 300 s less 30
// s for the states between Tasks and the Lambda service's own retries):
// each step's Task TimeoutSeconds (as lowered: timeout_seconds × 3 calls
// + 15 s, doubled by a verifier, times loop_until's iterations, plus its
// grounding and checks; 900 s without timeout_seconds) times retry:
// attempts plus the backoff waits, a parallel group's longest branch, a
// fan-out's waves of 40 items, 60 s per join and per failure Task. auto
// takes Express when the pipeline can, else Standard; express on a
// pipeline that cannot is an error at each reason (a run's bound at the
// workflow: key). A sub-pipeline must be Standard (its parent waits for
// it with startExecution.sync:2 and describes it by its execution ARN):
// BuildFile refuses a sub-pipeline step whose child would be Express,
// auto or not, at the step.
//
// An Express workflow emits no execution status change event, so the
// recorder function never closes its runs: its definition routes a
// completed run through "Record run" (a Task, mode finish, that closes
// the run's record with $last and $usage and counts it) before "Run
// completed", and $pipeline.workflow is "express" so that the step
// function counts in Runs the ends it records (steps that stop,
// escalate, abort or fail the run). What no Task sees — a run that times
// out (Express's 5 minutes) or fails with an error no Catch takes —
// stays running in the table; the CDK app alarms on the state machine's
// timed-out executions. An Express workflow has no execution history in
// the Step Functions API (only its log group), no redrive, and runs at
// least once when started asynchronously; the local engine runs both
// types alike (the same definition).
//
// # Agent steps that outlive one invocation
//
// A sequential agent step whose timeout_seconds is over
// MaxSyncTimeoutSeconds (900 s, what one Lambda invocation allows) runs
// its tool loop as state machine iterations. Its Task (mode agent_turns,
// TimeoutSeconds 900, the step's Retry and Catch) makes model calls for
// up to one invocation's budget, keeping the conversation in the
// artifact store (package steprun), and answers "continue" with the
// loop's state until the agent has answered; its outcome Choice has a
// first rule that sends a continue answer back to the Task, assigning
// that state to a variable of the step's own, $turns_<name>, which the
// Task's payload carries (agent_loop). The Task that gets the answer
// verifies, gates and records the step, and the Choice goes on as for
// any step. So the step's own timeout_seconds (whose deadline is fixed
// at its first Task and carried) is its only limit, and each Task costs
// 2 state transitions (the Task and its outcome Choice), one step
// invocation and about 7 history events. A step of k Tasks costs 2k
// transitions (a single-invocation step, 1); it takes at most one
// Task per model call (plus one when its verifier is left to the next
// Task, and retries), and as many calls per Task as fit in 800 s.
// retry: applies to each Task (a retried Task goes on from what its
// failed attempt kept). Such a step cannot have loop_until (Check), and a
// parallel branch's or fan-out item's agent stays within one invocation.
//
// # Limits and figures
//
// A definition must stay under 1 MiB (measured compact, as deployed), the
// static part of any Task's payload under half of the 256 KiB state
// payload limit, and every state name within Step Functions' 80
// characters (a parallel branch's states are named "<group>/<branch>",
// plus ": lost" for its fallback); the compiler reports each (the size at
// the pipeline, the others at the step).
// Measured on this project's machine (2 cores shared, so the figures are
// upper bounds), validate (Build: parse, check, lower, limits; a
// pipeline past about 400 such steps is refused for its size, after the
// same work):
//
//	go test -run XXX -bench Validate ./compiler   100 / 1,000 / 10,000 steps: 19-24 / 224-261 / 1,766-2,070 ms (180-260 µs per step, linear)
//	go test -run XXX -bench Compile ./compiler    about 2,500 ASL bytes per heavy step (guarded, retried, templated)
//	go test -v -run TestLargestPipeline ./compiler  417 such steps fit in one state machine
//
// Longer pipelines belong in sub-pipelines (executor: pipeline).
package compiler
