// Package task defines the contract between a compiled state machine and
// the functions its Task states invoke: the payload a Task sends (Request)
// and the answer it gets back (Response).
//
// The compiler writes Requests as JSONata in Task Arguments; the step
// function on AWS and the local engine's in-process handlers read them with
// these types, so the two engines run the same code on the same data.
package task

import (
	"encoding/json"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
)

// Modes of a Request: what the invoked function is asked to do.
const (
	// ModeStep runs a sequential step: render, execute (with re-asks),
	// verify, loop, decide, record.
	ModeStep = "step"
	// ModeBranch runs one branch of a parallel group or one fan-out item.
	// It never gates: its confidence feeds the group's join. Executor
	// errors are answered as a failed branch, not returned. For a human
	// branch it turns the decision (Decision) into the branch's output,
	// for a sub-pipeline branch the child's outcome (Child, Error).
	ModeBranch = "branch"
	// ModeJoin combines a group's branch results, gates and records the
	// group.
	ModeJoin = "join"
	// ModeFailure records a step whose Task failed after its retries and
	// sends its on_failure webhook.
	ModeFailure = "failure"
	// ModeApproval records a pending approval with its task token and
	// tells the approvers. The Task waits for the token.
	ModeApproval = "approval"
	// ModeHuman turns a human decision into the step's output, gates and
	// records it.
	ModeHuman = "human"
	// ModeChild turns a sub-pipeline's outcome into the step's output,
	// gates and records it.
	ModeChild = "child"
	// ModeChildInput renders a sub-pipeline step's executor_config.context
	// over the step context and answers the child's trigger (the parent's,
	// with the context's fields over it) as its Output.
	ModeChildInput = "child_input"
	// ModeAgentTurns runs model calls of a sequential agent step that
	// outlives one invocation (its timeout_seconds is over what one Lambda
	// invocation allows). The state machine invokes it again and again:
	// each Task continues the conversation the previous one kept (AgentLoop
	// says where) for as long as one invocation's budget allows, and
	// answers StatusContinue with the new AgentLoop, until the agent has
	// answered; then it verifies, decides and records as ModeStep does.
	ModeAgentTurns = "agent_turns"
	// ModeCheck goes on with a step that paused for a human check (its
	// step or agent_turns Task answered StatusCheck): it applies the
	// decision (Decision, or Error when the wait failed or timed out) to
	// the check Check names, runs the step's checks after it, then gates
	// and records the step; or pauses again at its next human check.
	ModeCheck = "check"
	// ModeFinish closes the record of a run that completed (Final is its
	// output, Usage its totals) and counts it in the Runs metric: the
	// last Task of an Express workflow, which emits no execution status
	// change event for the recorder function to close it by.
	ModeFinish = "finish"
)

// Statuses a Response carries. A run ends with the status of the step that
// ended it, or completed.
const (
	StatusCompleted = "completed"
	StatusStopped   = "stopped"
	StatusEscalated = "escalated"
	StatusAborted   = "aborted"
	StatusFailed    = "failed"
	// StatusContinue is an agent_turns Task's answer while the agent has
	// not answered: the state machine invokes the step's Task again with
	// the Response's AgentLoop. It never ends a run.
	StatusContinue = "continue"
	// StatusCheck is a step's answer when it paused for a human check:
	// its record waits (store.StepWaiting), and the state machine asks
	// for the check Response.Check names (an approval Task), then hands
	// the decision to a check Task. It never ends a run.
	StatusCheck = "check"
)

// Error names of the state machine's terminal Fail states.
const (
	ErrorEscalated = "Stepline.Escalated"
	ErrorAborted   = "Stepline.Aborted"
	ErrorFailed    = "Stepline.Failed"
)

// Placeholders the compiler writes for resources; CDK substitutes them
// with ARNs and the local engine with its in-process handlers.
const (
	StepFunctionPlaceholder     = "${StepFunctionArn}"
	ApprovalFunctionPlaceholder = "${ApprovalFunctionArn}"
)

// Request is the payload of a Task.
type Request struct {
	Mode     string          `json:"mode"`
	Step     json.RawMessage `json:"step"`     // the static config: a pipeline.Step, Branch, Parallel or FanOut
	Pipeline Pipeline        `json:"pipeline"` // the pipeline's static facts
	Run      Run             `json:"run"`
	Trigger  json.RawMessage `json:"trigger,omitempty"` // the normalized event that started the run
	// Steps holds the compact outputs of the earlier steps the step's
	// templates refer to, by step name.
	Steps   map[string]json.RawMessage `json:"steps,omitempty"`
	Usage   Usage                      `json:"usage"`             // the run's totals before this Task
	Attempt int                        `json:"attempt,omitempty"` // 1-based try of this Task

	// Group is the group's name in a branch's Tasks (branch, approval,
	// child_input) and the join.
	Group string          `json:"group,omitempty"`
	Item  json.RawMessage `json:"item,omitempty"`  // fan-out item: the item
	Index int             `json:"index,omitempty"` // fan-out item: 0-based item index
	Total int             `json:"total,omitempty"` // fan-out item: number of items

	Branches  []Response      `json:"branches,omitempty"`   // join: the branch results in declaration order
	Error     *Error          `json:"error,omitempty"`      // failure, join, child (and branch): what went wrong
	Decision  *Decision       `json:"decision,omitempty"`   // human (and branch): the approver's answer
	Child     json.RawMessage `json:"child,omitempty"`      // child (and branch): the sub-pipeline's final output
	TaskToken string          `json:"task_token,omitempty"` // approval: the token to complete the Task with
	// AgentLoop is, in an agent_turns Task, where the step's tool loop
	// stands: what the previous Task of the step answered, nil for the
	// step's first Task.
	AgentLoop *AgentLoop `json:"agent_loop,omitempty"`
	// Check is, in an approval Task of a human check and in a check
	// Task, the human check the step paused at.
	Check *CheckAt `json:"check,omitempty"`
	// Final is, in a finish Task, the run's output (the last completed
	// step's).
	Final json.RawMessage `json:"final,omitempty"`
}

// CheckAt names the human check a step paused at: its place among the
// step's deterministic_checks and the attempt whose record waits.
type CheckAt struct {
	Index   int    `json:"index"`
	Name    string `json:"name"`
	Attempt int    `json:"attempt"`
}

// TrustSummary is what a gated step's Task reports of its trust, for
// progress displays: the gate's policy, the combined trust and the
// signals beyond the confidence (nil where the step has none).
type TrustSummary struct {
	Policy   string   `json:"policy"`
	Combined float64  `json:"combined"`
	G        *float64 `json:"G,omitempty"`
	C        *float64 `json:"C,omitempty"`
	D        *bool    `json:"D,omitempty"`
}

// AgentLoop is where the tool loop of an agent step that outlives one
// invocation stands between its Tasks. The conversation itself is kept
// in the artifact store (package steprun says where); this is the small
// part the state machine carries from one Task to the next.
type AgentLoop struct {
	// Turn is the number of model calls the kept conversation holds.
	Turn int `json:"turn"`
	// Tasks counts the step's Tasks that handed back before this one.
	Tasks int `json:"tasks"`
	// Retries counts the retries of those Tasks (so that each attempt
	// of the step has a number of its own).
	Retries int `json:"retries"`
	// StartedAt is when the step's first Task started and Deadline when
	// the loop must have its answer, both fixed then (RFC 3339, UTC).
	StartedAt string `json:"started_at"`
	Deadline  string `json:"deadline"`
}

// AgentSummary is what an agent step's Task reports of its tool loop,
// for progress displays: the agent, the model calls and tool calls made
// so far, and (for a step that outlives one invocation) the Tasks.
type AgentSummary struct {
	Agent      string `json:"agent"`
	Iterations int    `json:"iterations"`
	ToolCalls  int    `json:"tool_calls"`
	Tasks      int    `json:"tasks,omitempty"`
}

// Pipeline is what every Task needs to know of its pipeline.
type Pipeline struct {
	Name          string            `json:"name"`
	Stage         pipeline.Stage    `json:"stage"`
	Vars          map[string]string `json:"vars,omitempty"`
	Include       []string          `json:"include,omitempty"` // context_template.include
	Budget        *pipeline.Budget  `json:"budget,omitempty"`
	Notifications []pipeline.Action `json:"notifications,omitempty"`
	// Config names the compiled definition: 12 hex digits of the SHA-256
	// of the state machine before Config was set in it (so readiness:,
	// which never reaches the definition, never changes it). A run
	// records it (store.Run.ConfigFingerprint): readiness tiers with
	// require_current_config count only runs of the current one.
	Config string `json:"config,omitempty"`
	// RunEndedError is true in a definition that catches
	// Stepline.RunEnded (fault.RunEnded): a deciding Task's answer that
	// ends the run is returned as that error, so that the Task goes
	// straight on when it completes. A definition compiled before (false)
	// gets every answer as the Task's result, for its outcome Choices: an
	// execution started before an upgrade, or a local run resumed on its
	// saved definition, ends as it would have.
	RunEndedError bool `json:"run_ended_error,omitempty"`
	// Workflow is "express" in an Express workflow (whose ends the step
	// function records and counts itself: no status change event reaches
	// the recorder function), "" in a Standard one.
	Workflow string `json:"workflow,omitempty"`
}

// TriggerBindings adds to b the template variables the pipeline takes
// from its run's trigger (decoded JSON) and its vars, the same for a
// step's templates and a notification's: labels (an empty object when the
// trigger has none), team, each context_template.include path's value
// under its leaf name (a dotted path also makes its root readable as it
// is in the trigger), then vars, which win over all of them.
func (p Pipeline) TriggerBindings(b, trig map[string]any) {
	labels, _ := trig["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	b[pipeline.BindLabels] = labels
	if team, ok := trig["team"]; ok {
		b[pipeline.BindTeam] = team
	}
	for _, path := range p.Include {
		v, ok := lookupPath(trig, path)
		if !ok {
			continue
		}
		leaf := path
		if i := strings.LastIndexByte(path, '.'); i >= 0 {
			leaf = path[i+1:]
			root := path[:strings.IndexByte(path, '.')]
			if _, set := b[root]; !set {
				b[root] = trig[root]
			}
		}
		b[leaf] = v
	}
	for k, v := range p.Vars {
		b[k] = v
	}
}

// RunBindings sets the template variables of the run in b: its ID, the
// pipeline's name, the step rendering (currentStep, "" for none), whether
// the pipeline is in stage testing, then TriggerBindings. A step's
// bindings (package steprun) and a notification's (package notify) both
// start from them.
func (p Pipeline) RunBindings(b map[string]any, runID, currentStep string, trig map[string]any) {
	b[pipeline.BindRunID] = runID
	b[pipeline.BindPipelineName] = p.Name
	b[pipeline.BindCurrentStep] = currentStep
	b[pipeline.BindTesting] = p.Stage != pipeline.StageProduction
	p.TriggerBindings(b, trig)
}

// lookupPath reads a dotted path in a decoded JSON object.
func lookupPath(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Run identifies the run a Task belongs to.
type Run struct {
	ID          string `json:"id"`
	Execution   string `json:"execution,omitempty"` // the Step Functions execution ARN
	StartedAt   string `json:"started_at,omitempty"`
	ParentRunID string `json:"parent_run_id,omitempty"`
}

// Usage totals tokens and cost.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.CostUSD + v.CostUSD}
}

// Error is a Task failure as Step Functions reports it.
type Error struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Decision is a human approver's answer, sent with the task token.
type Decision struct {
	Decision string `json:"decision"` // approve | reject
	By       string `json:"by,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// Decisions.
const (
	Approve = "approve"
	Reject  = "reject"
)

// Response is a Task's answer.
type Response struct {
	Status string `json:"status"`
	Step   string `json:"step"`
	// Output is the step's compact output: the LLMOutput fields and extras
	// with the effective confidence, without raw_response.
	Output json.RawMessage `json:"output,omitempty"`
	// Steps are the entries the state machine merges into its steps
	// variable: the step's output under its name and, for a parallel
	// group, each branch's output under the branch's name.
	Steps  map[string]json.RawMessage `json:"steps,omitempty"`
	Usage  Usage                      `json:"usage"`            // the run's totals after this Task
	Reason string                     `json:"reason,omitempty"` // why a run ends here: the Fail state's cause
	// AgentLoop is, with StatusContinue, what the step's next Task takes.
	AgentLoop *AgentLoop `json:"agent_loop,omitempty"`
	// Agent summarizes an agent step's tool loop (step and agent_turns
	// Tasks of agent steps; nil for any other).
	Agent *AgentSummary `json:"agent,omitempty"`
	// Check is, with StatusCheck, the human check the step waits for.
	Check *CheckAt `json:"check,omitempty"`
	// Trust summarizes the trust of a step that has a grounding judge or
	// deterministic checks (nil for any other).
	Trust *TrustSummary `json:"trust,omitempty"`
}
