package compiler

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/engine/enginetest"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/task"
)

// TestRunEndedThroughTheEngine runs a compiled three-step pipeline in the
// local engine with a step function that answers as steprun does (a
// run-ending answer as a fault.RunEnded when $pipeline.run_ended_error
// says the definition catches it; each answer adds 10 input tokens):
// a completed run enters n+2 states; a run the second step ends enters
// "Run ended" and its terminal state with the answer's status, step,
// reason, output and usage (the Task's Assign does not run on the Catch
// path; Run ended takes the usage from the answer).
func TestRunEndedThroughTheEngine(t *testing.T) {
	sm, _ := compileString(t, "name: p\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n  - {name: c, executor: scripted}\n")
	cases := []struct {
		name, status string // b's answer
		want         engine.Status
		wantError    string
		states       int
	}{
		{"completed", task.StatusCompleted, engine.StatusSucceeded, "", 3 + 2},
		{"stopped", task.StatusStopped, engine.StatusSucceeded, "", 5}, // Start, a, b, Run ended, Run stopped
		{"escalated", task.StatusEscalated, engine.StatusFailed, task.ErrorEscalated, 5},
		{"aborted", task.StatusAborted, engine.StatusFailed, task.ErrorAborted, 5},
		{"failed", task.StatusFailed, engine.StatusFailed, task.ErrorFailed, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := func(_ context.Context, payload json.RawMessage) (json.RawMessage, error) {
				var req task.Request
				if err := json.Unmarshal(payload, &req); err != nil {
					return nil, err
				}
				var st struct{ Name string }
				_ = json.Unmarshal(req.Step, &st)
				status := task.StatusCompleted
				if st.Name == "b" {
					status = c.status
				}
				resp := task.Response{Status: status, Step: st.Name, Output: json.RawMessage(`{"confidence":0.9,"summary":"` + st.Name + `"}`),
					Usage: req.Usage.Add(task.Usage{InputTokens: 10}), Reason: st.Name + " said so"}
				b, _ := json.Marshal(resp)
				if status != task.StatusCompleted && req.Pipeline.RunEndedError {
					return nil, &fault.RunEnded{Msg: string(b)}
				}
				return b, nil
			}
			j := enginetest.NewJournal()
			e := engine.New(engine.Config{Journal: j, Resources: engine.Functions{task.StepFunctionPlaceholder: step}})
			res, err := e.Start(context.Background(), "run-1", sm, json.RawMessage(`{"trigger": {}}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.want || res.Error != c.wantError {
				t.Fatalf("result %s %s (%s), want %s %s", res.Status, res.Error, res.Cause, c.want, c.wantError)
			}
			hist, _ := j.History(context.Background(), "run-1")
			entered := 0
			for _, ev := range hist {
				if ev.Type == "StateEntered" {
					entered++
				}
			}
			if entered != c.states {
				t.Errorf("%d states entered, want %d", entered, c.states)
			}
			switch c.status {
			case task.StatusCompleted:
				var out struct {
					Output json.RawMessage
					Usage  task.Usage
				}
				_ = json.Unmarshal(res.Output, &out)
				if out.Usage.InputTokens != 30 || string(out.Output) != `{"confidence":0.9,"summary":"c"}` {
					t.Errorf("output %s", res.Output)
				}
			case task.StatusStopped:
				var out struct {
					Status, Step, Reason string
					Output               json.RawMessage
					Usage                task.Usage
				}
				_ = json.Unmarshal(res.Output, &out)
				if out.Status != "stopped" || out.Step != "b" || out.Reason != "b said so" || out.Usage.InputTokens != 20 ||
					string(out.Output) != `{"confidence":0.9,"summary":"b"}` {
					t.Errorf("output %s", res.Output)
				}
			default:
				if res.Cause != "b said so" {
					t.Errorf("cause %q", res.Cause)
				}
			}
		})
	}
}
