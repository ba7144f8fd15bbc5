package runend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  End
		want Outcome
	}{
		{"completed", End{Kind: Succeeded, Output: json.RawMessage(`{"status":"completed","output":{"a":1}}`)},
			Outcome{Status: store.RunCompleted, Final: json.RawMessage(`{"a":1}`), Escalation: "completed"}},
		{"completed without status", End{Kind: Succeeded, Output: json.RawMessage(`{"output":"x"}`)},
			Outcome{Status: store.RunCompleted, Final: json.RawMessage(`"x"`), Escalation: "completed"}},
		{"completed, null output", End{Kind: Succeeded, Output: json.RawMessage(`{"status":"completed","output":null}`)},
			Outcome{Status: store.RunCompleted, Escalation: "completed"}},
		{"completed, unreadable output", End{Kind: Succeeded, Output: json.RawMessage(`[`)},
			Outcome{Status: store.RunCompleted, Escalation: "completed"}},
		{"stopped", End{Kind: Succeeded, Output: json.RawMessage(`{"status":"stopped","reason":"nothing to do","output":{"b":2}}`)},
			Outcome{Status: store.RunStopped, Reason: "nothing to do", Final: json.RawMessage(`{"b":2}`), Escalation: "stopped"}},
		{"escalated", End{Kind: Failed, Error: task.ErrorEscalated, Cause: " low confidence "},
			Outcome{Status: store.RunEscalated, Reason: "low confidence", Escalation: "escalated"}},
		{"aborted", End{Kind: Failed, Error: task.ErrorAborted, Cause: "abort"},
			Outcome{Status: store.RunAborted, Reason: "abort", Escalation: "aborted"}},
		{"failed", End{Kind: Failed, Error: task.ErrorFailed, Cause: "boom"},
			Outcome{Status: store.RunFailed, Reason: "boom", Escalation: "failed"}},
		{"another error", End{Kind: Failed, Error: "States.Runtime", Cause: "bad path"},
			Outcome{Status: store.RunFailed, Reason: "the execution failed with States.Runtime: bad path", Escalation: "failed"}},
		{"no error at all", End{Kind: Failed},
			Outcome{Status: store.RunFailed, Reason: "the execution failed", Escalation: "failed"}},
		{"timed out", End{Kind: TimedOut, Error: "States.Timeout", Cause: "after 3600 s"},
			Outcome{Status: store.RunFailed, Reason: "the execution timed out (the state machine's time limit passed): after 3600 s", Escalation: notify.EscalationTimedOut}},
		{"aborted from outside", End{Kind: Aborted},
			Outcome{Status: store.RunFailed, Reason: "the execution was aborted (stopped through Step Functions)", Escalation: notify.EscalationAborted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Of(tc.end)
			if !ok || got.Status != tc.want.Status || got.Reason != tc.want.Reason || string(got.Final) != string(tc.want.Final) || got.Escalation != tc.want.Escalation {
				t.Errorf("Of = %+v (%s), %v; want %+v (%s)", got, got.Final, ok, tc.want, tc.want.Final)
			}
		})
	}
	if _, ok := Of(End{}); ok {
		t.Error("an end of no kind is known")
	}
}

// TestFinalOutputBound: the final output is kept up to
// store.MaxFinalOutputBytes and dropped above.
func TestFinalOutputBound(t *testing.T) {
	for _, n := range []int{store.MaxFinalOutputBytes - 1, store.MaxFinalOutputBytes, store.MaxFinalOutputBytes + 1} {
		final := `"` + strings.Repeat("x", n-2) + `"`
		o, _ := Of(End{Kind: Succeeded, Output: json.RawMessage(`{"status":"completed","output":` + final + `}`)})
		if kept := len(o.Final) == n; kept != (n <= store.MaxFinalOutputBytes) {
			t.Errorf("a final output of %d bytes: kept %v", n, kept)
		}
	}
}

func TestStatusOfError(t *testing.T) {
	for name, want := range map[string]store.RunStatus{
		task.ErrorEscalated: store.RunEscalated, " " + task.ErrorAborted: store.RunAborted, task.ErrorFailed: store.RunFailed,
		"States.TaskFailed": store.RunFailed, "": store.RunFailed,
	} {
		if got := StatusOfError(name); got != want {
			t.Errorf("StatusOfError(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestChildEnd: a child's description in a States.TaskFailed cause gives
// the child's own end, which Of turns into the status and reason its run
// was recorded with; any other error is not a child's end.
func TestChildEnd(t *testing.T) {
	desc := func(status, errName, cause string) string {
		b, _ := json.Marshal(map[string]any{"ExecutionArn": "arn:aws:states:us-east-1:1:execution:kid:run-1/call@0",
			"Name": "run-1/call@0", "StateMachineArn": "arn:aws:states:us-east-1:1:stateMachine:kid", "Status": status,
			"Input": map[string]any{"trigger": map[string]any{}}, "Error": errName, "Cause": cause})
		return string(b)
	}
	for _, tc := range []struct {
		name, errName, cause string
		ok                   bool
		status               store.RunStatus
		reason               string
	}{
		{"escalated", "States.TaskFailed", desc("FAILED", task.ErrorEscalated, "low"), true, store.RunEscalated, "low"},
		{"aborted", " States.TaskFailed ", desc("FAILED", task.ErrorAborted, "gave up"), true, store.RunAborted, "gave up"},
		{"failed", "States.TaskFailed", desc("FAILED", task.ErrorFailed, "boom"), true, store.RunFailed, "boom"},
		{"uncaught error", "States.TaskFailed", desc("FAILED", "States.Runtime", "bad path"), true, store.RunFailed, "the execution failed with States.Runtime: bad path"},
		{"timed out", "States.TaskFailed", desc("TIMED_OUT", "", ""), true, store.RunFailed, "the execution timed out (the state machine's time limit passed)"},
		{"aborted from outside", "States.TaskFailed", desc("ABORTED", "", ""), true, store.RunFailed, "the execution was aborted (stopped through Step Functions)"},
		{"succeeded is no failure", "States.TaskFailed", desc("SUCCEEDED", "", ""), false, "", ""},
		{"running is no end", "States.TaskFailed", desc("RUNNING", "", ""), false, "", ""},
		{"no status", "States.TaskFailed", `{"Name":"run-1/call@0","Error":"Stepline.Escalated"}`, false, "", ""},
		{"not a description", "States.TaskFailed", "start child run: no such pipeline", false, "", ""},
		{"a cut description", "States.TaskFailed", desc("FAILED", task.ErrorEscalated, "low")[:40], false, "", ""},
		{"the parent's timeout", "States.Timeout", "", false, "", ""},
		{"another error with a description", "States.Runtime", desc("FAILED", task.ErrorEscalated, "low"), false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end, name, ok := ChildEnd(tc.errName, tc.cause)
			if ok != tc.ok {
				t.Fatalf("ChildEnd ok = %v, want %v (%+v)", ok, tc.ok, end)
			}
			if !ok {
				if end.Kind != 0 || end.Error != "" || end.Cause != "" || name != "" {
					t.Errorf("not a child's end, yet %+v, %q", end, name)
				}
				return
			}
			o, _ := Of(end)
			if name != "run-1/call@0" || o.Status != tc.status || o.Reason != tc.reason {
				t.Errorf("ChildEnd: %q, outcome %s %q; want run-1/call@0, %s %q", name, o.Status, o.Reason, tc.status, tc.reason)
			}
		})
	}
}
