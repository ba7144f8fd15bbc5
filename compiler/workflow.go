package compiler

import (
	"fmt"
	"math"

	"github.com/stepline/stepline/shared/pipeline"
)

// Express's limits.
const (
	// ExpressMaxSeconds is the longest an Express workflow runs.
	ExpressMaxSeconds = 300
	// ExpressBudgetSeconds is what a pipeline's bound must stay within to
	// run as an Express workflow: ExpressMaxSeconds less 30 s for the
	// states between its Tasks and the Lambda service's own retries of a
	// failed invocation, which the bound does not count.
	ExpressBudgetSeconds = ExpressMaxSeconds - 30
)

// WorkflowDecision is the workflow type a pipeline's state machine gets
// on AWS and why.
type WorkflowDecision struct {
	// Type is standard or express: what p.Workflow asks for, auto resolved.
	Type pipeline.Workflow
	// MaxSeconds bounds how long a run lasts on the longest path (every
	// Task its TimeoutSeconds, every retry: attempt with its backoff, a
	// fan-out's waves of items, the failure Tasks); 0 when a run is not
	// bounded (a human step or check, a sub-pipeline).
	MaxSeconds int
	// Reasons say what keeps the pipeline from running as an Express
	// workflow, each where it is written; none when it can.
	Reasons []Reason
}

// Reason is one thing that keeps a pipeline from running as an Express
// workflow.
type Reason struct {
	Pos pipeline.Pos
	Msg string
}

// Express reports whether the pipeline can run as an Express workflow.
func (d WorkflowDecision) Express() bool { return len(d.Reasons) == 0 }

// WorkflowOf decides p's workflow type, the one rule validate (Check),
// compile (Lower) and the CDK app follow. A pipeline can run as an Express
// workflow when it has no human step, branch, fan-out or check (Express
// cannot wait on a task token), no sub-pipeline (nor startExecution.sync),
// and its longest run is bounded within ExpressBudgetSeconds by its steps'
// timeouts and retries (a step without timeout_seconds is bounded by
// Lambda's 900 s, so it is not). workflow: auto takes Express when it
// can, else Standard; standard is Standard; express is Express, and
// Check refuses it, at each reason, when a rule is broken.
func WorkflowOf(p *pipeline.Pipeline) WorkflowDecision {
	var d WorkflowDecision
	total := 0
	failTask := false // an on_failure: abort path ends in Record failure
	waits := func(pos pipeline.Pos, what string) {
		d.Reasons = append(d.Reasons, Reason{pos, what})
	}
	// waitsOn records why a node (what names it) running executor waits,
	// and reports whether it does: a human step waits for a task token, a
	// sub-pipeline for startExecution.sync.
	waitsOn := func(pos pipeline.Pos, executor, what string) bool {
		switch executor {
		case pipeline.ExecHuman:
			waits(pos, what+" is a human step: Express workflows cannot wait for a task token")
		case pipeline.ExecPipeline:
			waits(pos, what+" runs a sub-pipeline: Express workflows cannot run startExecution.sync")
		default:
			return false
		}
		return true
	}
	for _, n := range p.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			if waitsOn(n.Pos, n.Executor, fmt.Sprintf("step %q", n.Name)) {
				continue
			}
			if n.HumanChecks() {
				for _, c := range n.Checks {
					if c.Type == pipeline.CheckHuman {
						waits(c.Pos, fmt.Sprintf("step %q: deterministic check %q is a human check: Express workflows cannot wait for a task token", n.Name, c.Name))
					}
				}
				continue
			}
			secs := retried(stepTaskTimeout(n), n.Retry)
			if n.OnFailure.Policy == pipeline.FailureContinue {
				secs += bookkeepingTimeoutSeconds // "<step>: failed"
			} else {
				failTask = true
			}
			total += secs
		case *pipeline.Parallel:
			longest := 0
			for _, b := range n.Branches {
				if !waitsOn(b.Pos, b.Executor, fmt.Sprintf("branch %q of parallel %q", b.Name, n.Name)) {
					longest = max(longest, branchTaskTimeout(b, n))
				}
			}
			total += longest + bookkeepingTimeoutSeconds // the join
			failTask = true
		case *pipeline.FanOut:
			if waitsOn(n.Pos, n.Executor, fmt.Sprintf("fan_out %q", n.Name)) {
				continue
			}
			waves := (n.MaxItems + maxMapConcurrency - 1) / maxMapConcurrency
			total += waves*itemTaskTimeout(n) + bookkeepingTimeoutSeconds
			failTask = true
		}
	}
	if failTask {
		total += bookkeepingTimeoutSeconds // Record failure
	}
	if len(d.Reasons) == 0 {
		d.MaxSeconds = total
		if total > ExpressBudgetSeconds {
			d.Reasons = append(d.Reasons, Reason{p.Pos, fmt.Sprintf("a run may last %d s (its steps' timeouts and retries), more than the %d s an Express workflow allows (%d s less 30 s for the states and invocation retries): set lower timeout_seconds or fewer retry attempts", total, ExpressBudgetSeconds, ExpressMaxSeconds)})
		}
	}
	d.Type = pipeline.WorkflowStandard
	switch p.Workflow {
	case pipeline.WorkflowExpress:
		d.Type = pipeline.WorkflowExpress
	case pipeline.WorkflowAuto, "":
		if d.Express() {
			d.Type = pipeline.WorkflowExpress
		}
	}
	return d
}

// retried bounds a Task that runs timeout seconds at most per attempt,
// with a step's retry: policy: every attempt, and the waits between them
// (IntervalSeconds, times BackoffRate after each retry).
func retried(timeout int, r *pipeline.Retry) int {
	if r == nil || r.Attempts <= 1 {
		return timeout
	}
	rate := 2.0
	if r.Backoff == pipeline.BackoffFixed {
		rate = 1
	}
	wait, interval := 0.0, float64(retryInterval(r.DelaySeconds))
	for i := 0; i < r.Attempts-1; i++ {
		wait += interval
		interval *= rate
		if wait > math.MaxInt32 {
			return math.MaxInt32
		}
	}
	return r.Attempts*timeout + int(wait)
}

// stepCalls is how many model calls one attempt of a model step may make:
// the first and the re-asks, doubled by a verifier, times loop_until's
// iterations.
func stepCalls(s *pipeline.Step) int {
	calls := reasks
	if s.Verifier != nil {
		calls *= 2
	}
	if s.LoopUntil != nil {
		calls *= s.LoopUntil.MaxIterations
	}
	return calls
}

// stepTaskTimeout is the TimeoutSeconds of a sequential model step's Task
// (one invocation): every call it may make, then its grounding and checks.
func stepTaskTimeout(s *pipeline.Step) int {
	return min(MaxSyncTimeoutSeconds, taskTimeout(s.TimeoutSeconds, stepCalls(s))+settleSeconds(s))
}

// branchTaskTimeout is the TimeoutSeconds of a parallel branch's Task.
func branchTaskTimeout(b *pipeline.Branch, g *pipeline.Parallel) int {
	calls := reasks
	if b.Verifier != nil {
		calls *= 2
	}
	timeout := taskTimeout(b.TimeoutSeconds, calls)
	if g.TimeoutSeconds > 0 {
		timeout = min(timeout, g.TimeoutSeconds)
	}
	return timeout
}

// itemTaskTimeout is the TimeoutSeconds of a fan-out item's Task.
func itemTaskTimeout(g *pipeline.FanOut) int {
	calls := reasks
	if g.Verifier != nil {
		calls *= 2
	}
	return taskTimeout(g.TimeoutSeconds, calls)
}
