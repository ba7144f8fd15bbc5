package compiler

import (
	"fmt"
	"slices"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// checkVar holds, between a step's Tasks, the human check the step
// paused at (task.CheckAt).
func checkVar(name string) string { return "check_" + pipeline.TemplateName(name) }

// settleSeconds is how long a step's grounding judge and its webhook and
// shell checks may take after its answer, in its Task: their timeouts
// together (the checker keeps them within maxSettleSeconds).
func settleSeconds(s *pipeline.Step) int {
	n := 0
	if g := s.Grounding; g != nil {
		n += g.TimeoutSeconds
	}
	for _, c := range s.Checks {
		if c.Type != pipeline.CheckHuman {
			n += c.TimeoutSeconds
		}
	}
	return n
}

// trustTemplates are the templates of a step's grounding and checks, for
// the steps their Tasks read.
func trustTemplates(s *pipeline.Step) []any {
	var out []any
	if g := s.Grounding; g != nil {
		out = append(out, g.ExecutorConfig)
	}
	for _, c := range s.Checks {
		out = append(out, c.URL, c.Headers, c.Payload, c.Run, c.Message)
	}
	return out
}

// lowerHumanChecks emits the states of a step's human checks and returns
// the rules its outcome Choice starts with. A step Task that reaches a
// human check answers StatusCheck (its record waits): the rule for that
// check keeps the check in a variable of the step's own and goes to the
// check's approval Task ("<step>: check <name>", waitForTaskToken on the
// approval function, the check's timeout_seconds), whose decision (as
// {"decision": …}; a bare result could be any JSON, and JSONata reads an
// empty array differently in Go and in Step Functions), or the error that
// ended the wait ({"error": …}), goes to "<step>: checked", a check Task
// that applies it, runs the checks after it and decides and records the
// step, or pauses at the next human check, through the same outcome
// Choice. Each human check costs three state transitions (the rule taken,
// its approval Task, the check Task) plus the outcome Choice again.
//
// catch is the check Task's Catch (the step's, after the Catch of a
// run-ending answer).
func (l *lowerer) lowerHumanChecks(s *pipeline.Step, refs []string, catch []asl.Catcher) []asl.ChoiceRule {
	if !s.HumanChecks() {
		return nil
	}
	v := checkVar(s.Name)
	checked := s.Name + ": checked"
	withSelf := slices.Clone(refs)
	if withSelf != nil && !slices.Contains(withSelf, s.Name) {
		withSelf = append(withSelf, s.Name) // the message's output
		slices.Sort(withSelf)
	}
	var rules []asl.ChoiceRule
	after := 0 // the webhook and shell checks a check Task may run
	for i, c := range s.Checks {
		if c.Type != pipeline.CheckHuman {
			after += c.TimeoutSeconds
			continue
		}
		state := fmt.Sprintf("%s: check %s", s.Name, c.Name)
		p := l.payload(task.ModeApproval, s, withSelf)
		p["task_token"] = exprTaskToken
		p["check"] = asl.Expr("$" + v)
		args := invoke(task.ApprovalFunctionPlaceholder, p)
		l.add(&l.sm.States, state, &asl.Task{
			Comment:        fmt.Sprintf("Ask for deterministic check %q of the step's answer and wait for the decision (task token).", c.Name),
			Resource:       asl.ResourceLambdaInvokeWaitForTaskToken,
			Arguments:      args,
			TimeoutSeconds: c.TimeoutSeconds,
			Retry:          []asl.Retrier{lambdaRetrier()},
			// Stage testing: a check nobody decided passes, as the
			// reference's human checks share its human steps' testing
			// behaviour; production: the timeout fails the check.
			Catch: append(l.testingApproves(checked, func(m map[string]any) map[string]any { return m }), asl.Catcher{
				ErrorEquals: []string{asl.StatesALL},
				Output:      map[string]any{"error": exprErrorOutput},
				Next:        checked,
			}),
			Output: map[string]any{"decision": exprResult},
			Next:   checked,
		})
		rules = append(rules, asl.ChoiceRule{
			Condition: asl.Expr(fmt.Sprintf("$states.input.status = '%s' and $states.input.check.index = %d", task.StatusCheck, i)),
			Assign:    map[string]any{v: asl.Expr("$states.input.check")},
			Next:      state,
		})
	}
	p := l.payload(task.ModeCheck, s, refs)
	p["check"] = asl.Expr("$" + v)
	p["decision"] = asl.Expr("$exists($states.input.error) ? null : $states.input.decision")
	p["error"] = errorExpr
	args := invoke(task.StepFunctionPlaceholder, p)
	l.checkPayload(s.Name, args)
	l.add(&l.sm.States, checked, &asl.Task{
		Comment:        "Apply the check's decision, run the checks after it, then decide and record the step (or ask for its next human check).",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      args,
		TimeoutSeconds: min(MaxSyncTimeoutSeconds, bookkeepingTimeoutSeconds+after),
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          catch,
		Assign:         assignResult(s.Name, s),
		Output:         exprResultPayload,
		Next:           s.Name + ": outcome",
	})
	return rules
}
