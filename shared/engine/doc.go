// Package engine is Stepline's local interpreter of Amazon States Language:
// it runs the same JSONata state machines the compiler emits for AWS Step
// Functions, with Task resources resolved to in-process Go handlers and the
// execution state checkpointed in a Journal (the SQLite store) whenever
// durability needs it, so a run survives the process.
//
// # Running
//
// [New] takes a [Config]: the [Journal], the [Resources] that map a Task to
// a [Handler], a [ChildStarter] for nested state machines, a [Clock] and a
// [Rand] (injected so that Wait, Retry backoff, jitter and timeouts are
// testable without waiting), [Definitions] to find a run's definition when a
// task token arrives in another process (asked by the hash the run started
// with), OnEvent to watch progress, OnParentContinued to record a parent
// run that its child's end drove on, and MaxDefinitionBytes, the largest definition it runs (Step Functions' 1 MiB
// unless raised, for machines that only run locally).
//
// [Engine.Start] drives a run until it ends (SUCCEEDED, FAILED, TIMED_OUT),
// pauses (WAITING: every active path waits for a task token) or its context
// is cancelled (the last checkpoint stays for [Engine.Resume]).
// [Engine.SendTaskSuccess], [Engine.SendTaskFailure] and
// [Engine.SendTaskHeartbeat] complete a waiting task from any process:
// tokens carry their run ID, the run is loaded from its checkpoint (its
// definition from Config.Definitions, checked against the hash recorded at
// Start) and driven to its next pause or end. A token sent to a run this
// engine is driving is handed to the live driver. [Engine.History] returns
// the recorded events; [Engine.Variable] a top-level variable and
// [Engine.Children] the child runs a run waits for, as its checkpoint holds
// them; [Engine.Hash] the hash a definition's runs record.
//
// # Design
//
// A definition is validated and every JSONata body checked once, each
// expression's program compiled at its first evaluation
// ([asl.StateMachine] pointers are cached); the definition is never
// mutated. [Engine.Prepare] compiles a definition ahead of its first run
// and returns what it found ([Checked]: the hash and the size), which a
// cache of definitions keeps beside their bytes; [Engine.PrepareChecked]
// takes a definition decoded again from those bytes with it, applying the
// structural checks and the size limit but neither hashing it again nor
// checking each JSONata body before its program's first compile. Expressions that are plain paths ($name.field.field, most of
// what the compiler emits) are looked up without JSONata, and an object of
// variables or a path plus a whole number is built or added without it
// where that is JSONata's answer (shapes.go). Per-run state is
// a snapshot: a tree of paths (the top level, each Parallel branch, each
// Map iteration in flight), each with its state, phase, input, variables,
// retry counters and task in flight; pending task tokens with absolute
// deadlines; results of finished branches and iterations. One driver
// goroutine owns it and advances runnable paths one state at a time until
// none can advance without waiting; then it saves one checkpoint with the
// history events since the previous one, and only then starts the blocking
// work the steps scheduled (handler calls, child runs, timers) on worker
// goroutines, whose results come back to the driver as completions.
// Parallel branches and Map iterations therefore run concurrently while
// every transition is recorded in one order. A handler call that is the
// run's only work in flight (no other call, timer or task token pending:
// a sequential pipeline's every step) runs on the driver itself, which
// saves two goroutine hand-offs per step; should it outlive its
// TimeoutSeconds, or the machine's TimeoutSeconds pass meanwhile, the
// call is abandoned as a worker's would be and a new driver takes the run
// over; the caller of Start (or Resume, or a task-token call) is answered
// by whichever driver ends the run, never held by the abandoned call.
//
// # Checkpoints
//
// A checkpoint is saved when durability needs one, not after every
// transition: before work with side effects is dispatched (a task
// invocation, a child run, a Wait or a retry backoff), and whenever the
// driver stops to wait (for completions, or because the run pauses or
// ends); also every 1,000 events, so that a long loop through pure states
// stays bounded. Pass, Choice, Succeed and Fail, the entering and leaving
// of states, Assign and Output are pure: they read and write the snapshot
// and nothing else, and the events they record are saved with the next
// checkpoint. This is equivalent to a checkpoint after every transition:
// everything between two checkpoints is a pure function of the first one
// (and of the task results applied since, which are not durable before
// the second one anyway), so a process killed in between has done nothing
// anyone could see (no event saved, none reported to OnEvent, no work
// dispatched), and resuming from the first checkpoint takes the same steps
// again. Only timestamps (EnteredTime, event times) and the expressions
// that read the clock or randomness ($now, $millis, $random, $uuid) may
// come out differently on the second pass, which is as if the process had
// been killed just before them. As before, a task whose result was
// checkpointed never runs again, and one that was dispatched but whose
// result was not runs again on resume (at least once).
//
// A checkpoint writes only what changed: the snapshot proper, which stays
// small (each path's state, phase, input and task in flight; a task's
// payload and result are dropped as soon as its state is left), the
// history events since the previous checkpoint, and the variables assigned
// since then as the Journal's keyed values (store.Checkpoint.Values, one
// per variable and scope; a variable that went away with its Parallel
// branch or Map iteration is deleted, one assigned the value it had is not
// written). The run's input is written once. Encoding is done by a
// reflection-free encoder that writes exactly what encoding/json writes,
// and the checkpoint says so (store.Checkpoint.Encoded): the Journal does
// not validate that JSON again.
// So a checkpoint costs what the step changed, not what the run holds:
// a run of n steps costs O(n), not O(n²).
//
// On Resume (snapshots of the format before values, with the variables in
// the snapshot, are read too), a task whose TaskScheduled event was saved
// but whose result was not is invoked again (at least once, as in Step Functions; handlers are
// idempotent by run, step and attempt), waits and backoffs continue until
// their recorded instants, and token tasks whose deadline has passed time
// out. Results already checkpointed are never recomputed.
//
// # Step Functions semantics implemented
//
//   - States: Pass, Task, Choice, Parallel, Map (inline), Wait, Succeed,
//     Fail; QueryLanguage JSONata only.
//   - JSONata in Arguments, Output, Assign, Items, ItemSelector,
//     MaxConcurrency, TimeoutSeconds, HeartbeatSeconds, Seconds, Timestamp,
//     Condition, Fail Error and Cause; "{% %}" strings are evaluated also
//     when nested in objects and arrays. $states.input, $states.result (Task,
//     Parallel, Map Output and Assign), $states.errorOutput ({Error, Cause},
//     Catch Output and Assign) and $states.context: Execution.Id, Name,
//     Input, StartTime, RoleArn, RedriveCount; State.Name, EnteredTime,
//     RetryCount; StateMachine.Id, Name; Task.Token (waitForTaskToken tasks);
//     Map.Item.Index and Value (ItemSelector). Step Functions' extra
//     functions $partition, $range, $hash, $uuid and $parse are provided.
//   - An expression that fails, returns undefined (also nested in a
//     template) or a value of the wrong type raises
//     States.QueryEvaluationError, which Retry and Catch of Task, Parallel
//     and Map handle; elsewhere it fails the run. A Condition must be a
//     boolean. No matching rule and no Default raises States.NoChoiceMatched.
//   - Output defaults: a Task, Parallel or Map outputs its result, other
//     states their input; a Catcher without Output outputs the error output.
//   - Variables: Assign evaluates every value (and Output) against the
//     values on state entry, then assigns. Each Parallel branch and Map
//     iteration is a scope of its own that reads the outer scopes' variables
//     and cannot assign their names (rejected when the definition is
//     validated); its variables vanish when it ends. A Catcher's Assign on a
//     Parallel or Map assigns in the outer scope.
//   - Retry: the first Retrier whose ErrorEquals matches decides; wait
//     IntervalSeconds × BackoffRate^n, capped by MaxDelaySeconds, times a
//     random factor in [0,1) with JitterStrategy FULL; MaxAttempts 0 never
//     retries; counters reset when the state is left. States.ALL matches
//     everything but States.Runtime and States.DataLimitExceeded, which are
//     never retried or caught; States.TaskFailed matches everything but
//     States.Timeout. Catch: the first matching Catcher.
//   - Task TimeoutSeconds raises States.Timeout with no cause, as Step
//     Functions reports it (the handler's context is cancelled); without it a task has no limit (Step Functions' default is
//     99999999 s). For waitForTaskToken tasks the deadline is absolute and
//     recorded, and it is enforced both while the process runs and on
//     resume; HeartbeatSeconds likewise (SendTaskHeartbeat restarts it). A
//     machine's TimeoutSeconds ends the run TIMED_OUT with States.Timeout.
//   - lambda:invoke: Arguments.FunctionName selects the handler, Payload is
//     its input, and the result is the optimized integration's response,
//     {"ExecutedVersion": "$LATEST", "Payload": <handler output>,
//     "SdkHttpMetadata": {...}, "SdkResponseMetadata": {...},
//     "StatusCode": 200}, so definitions read $states.result.Payload. A
//     handler error fails the task with the name the Lambda Go runtime would
//     report ([ErrorName]: the shared/fault type name, else the Go type
//     name) and, as Cause, the function error document
//     {"errorMessage": ..., "errorType": ...}. An unknown FunctionName is
//     Lambda.ResourceNotFoundException; a panic is reported like a function
//     error named after the panic value's type.
//   - lambda:invoke.waitForTaskToken: the handler is called with the token
//     in its payload; then the task waits, the run pauses (WAITING) once
//     nothing else runs, and the output given to SendTaskSuccess is the
//     task's result.
//   - states:startExecution.sync:2: the ChildStarter runs the child as a run
//     of its own (ID: Arguments.Name, else "<run>/<path>/<state>@<retry>"
//     with blanks as _, the same again when the parent resumes); the
//     result is the child's description with Output as JSON
//     ({"ExecutionArn", "Name", "StateMachineArn", "Status", "Input",
//     "Output"}); a failed child fails the task with States.TaskFailed and
//     that description, holding the child's Error and Cause, as Cause. A
//     child that pauses leaves the parent waiting (Result.Children names
//     it); when the child ends later, the engine completes the parent's task
//     and reports where the parent then stands to OnParentContinued. Both
//     kinds of waiting task run inside Parallel branches and Map iterations
//     as at the top level: the run pauses once every path waits, and a
//     waiting branch or iteration is in the checkpoint, so another process
//     completes it.
//   - Parallel: branches run concurrently on the Arguments (or input); the
//     result is the array of branch outputs. Map: Items (or the input array),
//     ItemSelector per item, iterations run concurrently up to
//     MaxConcurrency, capped at 40 as Step Functions caps inline Maps (0
//     means the cap); the result keeps item order. A failing branch or
//     iteration cancels the others and fails the state with its error.
//
// # History
//
// Events (store.HistoryEvent, Seq from 1): ExecutionStarted,
// ExecutionResumed, StateEntered, StateExited, TaskScheduled, TaskSubmitted
// (a token task's handler returned), TaskSucceeded, TaskFailed,
// TaskTimedOut, TaskRetried, StateRetried (Parallel, Map), TaskHeartbeat,
// CatchTaken, WaitStarted, WaitEnded, MapIterationStarted,
// MapIterationSucceeded, MapIterationFailed, BranchSucceeded, BranchFailed,
// ExecutionSucceeded, ExecutionFailed, ExecutionTimedOut. Details are JSON
// (inputs, outputs, errors, and "path" for events inside a branch or
// iteration, e.g. "/Fan#2").
//
// # Known differences from Step Functions
//
//   - JSONata is github.com/blues/jsonata-go (JSONata 1.5.4); Step
//     Functions runs jsonata 2.0.6. Where the two differ on undefined the
//     engine follows 2.0.6: JSON null (in a variable, in $states, nested)
//     is bound as blues' null, so $x holding null is null and
//     $exists($x) true, not undefined; a plain path that ends at an array
//     reads it as it is, an empty one too (blues reads []
//     as undefined). A test evaluates every expression the compiler emits
//     (its golden definitions) over documents with undefined, null,
//     missing and empty values in both and requires the same results.
//     Missing here: $formatInteger,
//     $parseInteger, $assert, the ?? operator and the % parent operator;
//     $single needs its second argument; regular expressions are Go's RE2
//     (no look-around); object keys come out sorted, so $keys and $string
//     order fields differently; $now and $millis read the system clock, not
//     the injected Clock; $random ignores a seed. Step Functions' own
//     restriction on top-level "$" and unqualified field names is not
//     enforced.
//   - Expressions bind only the variables their text references ($name),
//     so a variable reached by dynamic means ($lookup on an environment) is
//     not seen.
//   - Task Credentials are ignored. Only inline Map (no ItemReader,
//     ItemBatcher, ResultWriter, tolerated failures). A task re-invoked
//     after a crash gets a fresh TimeoutSeconds (token tasks keep their
//     absolute deadline). An explicit JSON null Output is treated as absent.
//   - Payload limits: only task results are checked against the 256 KiB
//     limit (States.DataLimitExceeded); state outputs and variables are not.
//   - Execution and state machine ARNs are local
//     (arn:aws:states:local:000000000000:...); Execution.Name is the run ID.
//   - Heartbeat expiry raises States.Timeout (as the States Language
//     specifies), not States.HeartbeatTimeout.
package engine
