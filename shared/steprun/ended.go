package steprun

import (
	"encoding/json"
	"errors"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// MaxEndedAnswerBytes bounds a run-ending answer as JSON string text (the
// errorMessage of the function's error, escaped as the runtime escapes
// it): Step Functions keeps at most 32,768 characters of a Task's error
// Cause, which holds it once more escaped. Past it the answer leaves out
// the step's output (its record holds it), then cuts the reason.
const MaxEndedAnswerBytes = 16 << 10

// deciding lists the modes whose Task decides whether the run goes on:
// the state machine goes on after them when they complete.
var deciding = map[string]bool{
	task.ModeStep:       true,
	task.ModeAgentTurns: true,
	task.ModeCheck:      true,
	task.ModeHuman:      true,
	task.ModeChild:      true,
	task.ModeJoin:       true,
}

// Ends reports whether a Task of mode that answered status ends the run:
// a deciding Task's answer other than completed, continue (an agent step's
// next Task) and check (a human check's wait). Handle returns such an
// answer as a *fault.RunEnded.
func Ends(mode, status string) bool {
	if !deciding[mode] {
		return false
	}
	switch status {
	case task.StatusCompleted, task.StatusContinue, task.StatusCheck:
		return false
	}
	return true
}

// EndedAnswer returns the answer a *fault.RunEnded in err's chain holds,
// as the state machine reads it from the error's Cause.
func EndedAnswer(err error) (task.Response, bool) {
	var ended *fault.RunEnded
	if !errors.As(err, &ended) {
		return task.Response{}, false
	}
	var r task.Response
	if json.Unmarshal([]byte(ended.Msg), &r) != nil {
		return task.Response{}, false
	}
	return r, true
}

// endedAnswer encodes the answer of a Task that ends the run within
// MaxEndedAnswerBytes: what the terminal states read (status, step,
// reason, output, usage) and what progress displays show (agent, trust).
// The group's entries (Steps) are left out: nothing after the end reads
// them.
func endedAnswer(r task.Response) []byte {
	r.Steps, r.AgentLoop, r.Check = nil, nil, nil
	b, _ := json.Marshal(r)
	if quotedLen(b) <= MaxEndedAnswerBytes {
		return b
	}
	r.Output = json.RawMessage("null")
	for limit := len(r.Reason); ; limit /= 2 {
		r.Reason, _ = store.Cut(r.Reason, limit)
		b, _ = json.Marshal(r)
		if quotedLen(b) <= MaxEndedAnswerBytes || limit == 0 {
			return b
		}
	}
}

// quotedLen is the length of b written as a JSON string.
func quotedLen(b []byte) int {
	q, _ := json.Marshal(string(b))
	return len(q)
}

// countError counts a Task's failure (any error but a *fault.RunEnded) in
// the TaskErrors metric, by pipeline and for the step function as a
// whole: the stack's alarm on the step function reads it, so that runs
// that end by a step's decision, which the Lambda service counts as
// function errors, raise no alarm.
func (h *Handler) countError(req task.Request, err error) {
	if h.Metrics == nil {
		return
	}
	var ended *fault.RunEnded
	if errors.As(err, &ended) {
		return
	}
	dims := map[string]string{"Pipeline": req.Pipeline.Name, "Function": metrics.FunctionStep}
	_ = h.Metrics.PutSets(dims, [][]string{{"Pipeline"}, {"Function"}}, metrics.Metric{Name: metrics.TaskErrors, Unit: "Count", Value: 1})
}
