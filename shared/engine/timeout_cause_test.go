package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
)

// TestTimeoutHasNoCause: a Task that times out fails with States.Timeout
// and no cause, as Step Functions reports it (its TaskTimedOut and
// LambdaFunctionTimedOut events carry only the error name), so that a
// step's failure record and a run's reason read the same locally and on
// AWS. The offline AWS tier (e2e, scenario human-timeout) compares them.
func TestTimeoutHasNoCause(t *testing.T) {
	cases := []struct {
		name    string
		task    *asl.Task
		advance time.Duration // a token task waits for this clock time to pass
	}{
		{
			name: "token task past TimeoutSeconds",
			task: &asl.Task{Resource: asl.ResourceLambdaInvokeWaitForTaskToken, TimeoutSeconds: 10,
				Arguments: map[string]any{"FunctionName": "h", "Payload": map[string]any{"token": asl.Expr("$states.context.Task.Token")}}},
			advance: 10 * time.Second,
		},
		{
			name: "handler past TimeoutSeconds",
			task: &asl.Task{Resource: asl.ResourceLambdaInvoke, TimeoutSeconds: 1,
				Arguments: map[string]any{"FunctionName": "stuck", "Payload": map[string]any{}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "Ask"}
			c.task.Catch = []asl.Catcher{{ErrorEquals: []string{asl.StatesALL}, Output: asl.Expr("$states.errorOutput"), Next: "Caught"}}
			c.task.End = true
			must(t, def.States.Add("Ask", c.task))
			must(t, def.States.Add("Caught", &asl.Pass{End: true}))
			release := make(chan struct{})
			defer close(release)
			stuck := func(context.Context, json.RawMessage) (json.RawMessage, error) {
				<-release
				return json.RawMessage(`{}`), nil
			}
			j, clock, h := newJournal(), newClock(c.advance == 0), &human{}
			e := New(Config{Journal: j, Clock: clock, Resources: Functions{"h": h.handler, "stuck": stuck}, Definitions: defs{"": def}})
			r, err := e.Start(context.Background(), "to", def, nil)
			if c.advance > 0 {
				mustResult(t, r, err, StatusWaiting)
				clock.Advance(c.advance)
				r, err = e.Resume(context.Background(), "to", def)
			}
			r = mustResult(t, r, err, StatusSucceeded)
			jsonEqual(t, r.Output, `{"Error": "States.Timeout", "Cause": ""}`)
		})
	}
}
