package compiler

import (
	"encoding/json"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/task"
)

// TestRunEndedIsCaughtNeverRetried walks every Task of every example and
// lowering fixture: no retrier matches fault.NameRunEnded (a run-ending
// answer is a decision: retrying it would run the step again), and every
// Task whose mode the step function may answer with a run-ending error
// (steprun.Ends) catches it first and goes to "Run ended"; no other Task
// catches it.
func TestRunEndedIsCaughtNeverRetried(t *testing.T) {
	tasks, deciding := 0, 0
	for name, def := range compileSources(t) {
		var sm asl.StateMachine
		if err := json.Unmarshal(def, &sm); err != nil {
			t.Fatal(err)
		}
		var visit func(states asl.States, top bool)
		visit = func(states asl.States, top bool) {
			for sn, st := range states.All() {
				switch st := st.(type) {
				case *asl.Task:
					tasks++
					for i, r := range st.Retry {
						if asl.Matches(r.ErrorEquals, fault.NameRunEnded) {
							t.Errorf("%s: %q: retrier %d (%v) retries a run-ending answer", name, sn, i, r.ErrorEquals)
						}
					}
					mode := payloadMode(st)
					ends := steprun.Ends(mode, task.StatusStopped) && steprun.Ends(mode, task.StatusEscalated) &&
						steprun.Ends(mode, task.StatusAborted) && steprun.Ends(mode, task.StatusFailed)
					caught := len(st.Catch) > 0 && len(st.Catch[0].ErrorEquals) == 1 && st.Catch[0].ErrorEquals[0] == fault.NameRunEnded
					if ends {
						deciding++
						if !top || !caught || st.Catch[0].Next != StateEnded {
							t.Errorf("%s: %q (mode %s) does not send a run-ending answer to %q first: %+v", name, sn, mode, StateEnded, st.Catch)
						}
					} else if caught {
						t.Errorf("%s: %q (mode %q) catches a run-ending answer it never gets", name, sn, mode)
					}
					for _, c := range st.Catch[1:] {
						if len(c.ErrorEquals) == 1 && c.ErrorEquals[0] == fault.NameRunEnded {
							t.Errorf("%s: %q catches a run-ending answer after another Catcher", name, sn)
						}
					}
				case *asl.Parallel:
					for _, b := range st.Branches {
						visit(b.States, false)
					}
				case *asl.Map:
					visit(st.ItemProcessor.States, false)
				}
			}
		}
		visit(sm.States, true)
	}
	if deciding == 0 || deciding == tasks {
		t.Fatalf("%d deciding Tasks of %d: the walk found no mix", deciding, tasks)
	}
	t.Logf("%d Tasks, %d of them deciding", tasks, deciding)
}

// payloadMode is the mode a Task asks of the step function ("" for any
// other resource).
func payloadMode(st *asl.Task) string {
	args, _ := st.Arguments.(map[string]any)
	if args["FunctionName"] != task.StepFunctionPlaceholder {
		return ""
	}
	payload, _ := args["Payload"].(map[string]any)
	mode, _ := payload["mode"].(string)
	return mode
}
