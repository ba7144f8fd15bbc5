// Package runend turns how an execution ended into what Stepline records
// of the run: one rule for the local runner (engine results), the
// recorder function (Step Functions execution status changes) and a
// sub-pipeline step (its child's end).
//
//   - Succeeded: the compiled state machines' Succeed states output
//     {status, reason, output}; status "stopped" is a stopped run (with its
//     reason), anything else a completed one; the output is the run's final
//     output when it is JSON other than null and within
//     store.MaxFinalOutputBytes.
//   - Failed with a Fail state's error (task.ErrorEscalated, ErrorAborted,
//     ErrorFailed): escalated, aborted or failed, the cause being the
//     reason.
//   - Failed with any other error (States.Runtime, an uncaught task
//     error): failed, the reason naming the error and its cause.
//   - Timed out (the state machine's own time limit) and aborted (stopped
//     from outside, StopExecution): failed, with escalation reasons
//     "timed_out" and "execution_aborted" for the notifications.
//
// A sub-pipeline's child that ends other than by succeeding fails its
// parent's startExecution.sync:2 Task with States.TaskFailed and, as
// Cause, the child execution's description (DescribeExecution's fields,
// Step Functions' and the local engine's alike: Name, Status, Error,
// Cause, …). ChildEnd reads that description back into the child's End,
// so that Of gives the parent step the status and reason the child's own
// run was recorded with.
//
// A run that its driver closes outside a step (the recorder, or the local
// runner: a time-out, an error the state machine could not catch, a
// durable run escalated as it is swept) has its notifications fired by
// Notify, the one rule for what is sent: the action Outcome.Action names,
// with the outcome's escalation reason and reason. A run a step closed
// was notified by the step, and is not notified again.
package runend

import (
	"encoding/json"
	"strings"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// Kind is how an execution ended.
type Kind int

// The ends of an execution.
const (
	Succeeded Kind = iota + 1
	Failed
	TimedOut
	Aborted
)

// End is an execution's end as its engine reports it.
type End struct {
	Kind   Kind
	Error  string          // Failed, TimedOut, Aborted: the error name, if any
	Cause  string          // and its cause
	Output json.RawMessage // Succeeded: the Succeed state's output
}

// Outcome is what the run store records of an end, and what its
// notifications say.
type Outcome struct {
	Status store.RunStatus
	Reason string
	Final  json.RawMessage // Succeeded: the run's final output; nil when none
	// Escalation names the cause for a notification's escalation_reason:
	// the status, or timed_out / execution_aborted for ends no step or
	// Fail state decided.
	Escalation string
}

// Of maps an end to its outcome; ok is false for an unknown Kind.
func Of(e End) (o Outcome, ok bool) {
	cause, errName := strings.TrimSpace(e.Cause), strings.TrimSpace(e.Error)
	switch e.Kind {
	case Succeeded:
		var out struct {
			Status string          `json:"status"`
			Reason string          `json:"reason"`
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(e.Output, &out) // a definition's own output; unreadable: completed without one
		o = Outcome{Status: store.RunCompleted, Escalation: task.StatusCompleted}
		if out.Status == task.StatusStopped {
			o = Outcome{Status: store.RunStopped, Reason: out.Reason, Escalation: task.StatusStopped}
		}
		if len(out.Output) > 0 && string(out.Output) != "null" && len(out.Output) <= store.MaxFinalOutputBytes {
			o.Final = out.Output
		}
		return o, true
	case Failed:
		if st, ok := statusOfError(errName); ok {
			return Outcome{Status: st, Reason: cause, Escalation: string(st)}, true
		}
		return Outcome{Status: store.RunFailed, Reason: describe("the execution failed", errName, cause), Escalation: task.StatusFailed}, true
	case TimedOut:
		return Outcome{Status: store.RunFailed, Reason: describe("the execution timed out (the state machine's time limit passed)", "", cause), Escalation: notify.EscalationTimedOut}, true
	case Aborted:
		return Outcome{Status: store.RunFailed, Reason: describe("the execution was aborted (stopped through Step Functions)", "", cause), Escalation: notify.EscalationAborted}, true
	}
	return Outcome{}, false
}

// StatusOfError is the run status an execution's error name gives: the
// Fail states' errors their own, any other error failed.
func StatusOfError(errName string) store.RunStatus {
	if st, ok := statusOfError(strings.TrimSpace(errName)); ok {
		return st
	}
	return store.RunFailed
}

func statusOfError(errName string) (store.RunStatus, bool) {
	switch errName {
	case task.ErrorEscalated:
		return store.RunEscalated, true
	case task.ErrorAborted:
		return store.RunAborted, true
	case task.ErrorFailed:
		return store.RunFailed, true
	}
	return "", false
}

// The Status of an execution description (DescribeExecution) that ended
// without succeeding.
const (
	execFailed   = "FAILED"
	execTimedOut = "TIMED_OUT"
	execAborted  = "ABORTED"
)

// ChildEnd reads how a sub-pipeline's child execution ended from the
// error its parent's startExecution.sync:2 Task failed with: errName
// States.TaskFailed and cause the child's description, a JSON object
// whose Status is FAILED, TIMED_OUT or ABORTED (with the child's own
// Error and Cause). name is the child execution's name, which is its run
// ID. ok is false for any other error: the child never ended as such (it
// could not be started, or the parent's Task timed out waiting for it),
// and the error is the parent Task's own.
func ChildEnd(errName, cause string) (e End, name string, ok bool) {
	if strings.TrimSpace(errName) != asl.StatesTaskFailed {
		return End{}, "", false
	}
	var d struct {
		Name   string `json:"Name"`
		Status string `json:"Status"`
		Error  string `json:"Error"`
		Cause  string `json:"Cause"`
	}
	if err := json.Unmarshal([]byte(cause), &d); err != nil {
		return End{}, "", false
	}
	kind := map[string]Kind{execFailed: Failed, execTimedOut: TimedOut, execAborted: Aborted}[d.Status]
	if kind == 0 {
		return End{}, "", false
	}
	return End{Kind: kind, Error: d.Error, Cause: d.Cause}, d.Name, true
}

// describe is what happened, with the error's name and cause when known.
func describe(what, errName, cause string) string {
	if errName != "" {
		what += " with " + errName
	}
	if cause != "" {
		what += ": " + cause
	}
	return what
}
