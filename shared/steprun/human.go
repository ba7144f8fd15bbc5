package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/runend"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// StatusWaiting is the status an approval Task answers; the state machine
// ignores it and waits for the task token.
const StatusWaiting = "waiting"

// approval records a pending approval and tells the approvers. The
// approval is named as the run's steps name what it decides: a sequential
// step or a parallel branch by its name, a fan-out item "<fan_out>/<i>";
// that is the name `stepline approve RUN STEP` takes.
func (t *taskRun) approval(ctx context.Context) (task.Response, error) {
	u, err := t.waitUnit()
	if err != nil {
		return task.Response{}, err
	}
	if t.req.TaskToken == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: approval request has no task token", u.key)
	}
	b := t.h.bindings(ctx, t.req, t.trig, scope{current: u.name, item: u.item})
	field := "prompt_template"
	if t.req.Check != nil {
		b["output"] = decodeOutput(t.req.Steps[u.name])
		field = "deterministic_checks." + t.req.Check.Name + ".message"
	}
	msg := u.prompt
	if !u.literal {
		if msg, err = t.h.render.render(ctx, u.name, field, u.prompt, b); err != nil {
			return task.Response{}, err
		}
	}
	msg, _ = store.Cut(msg, store.MaxMessageBytes)
	id, err := store.NewApprovalID()
	if err != nil {
		return task.Response{}, err
	}
	timeout := DefaultApprovalTimeout
	if u.timeout > 0 {
		timeout = time.Duration(u.timeout) * time.Second
	}
	now := t.h.now()
	a := store.Approval{ID: id, RunID: t.req.Run.ID, Step: u.key, Pipeline: t.req.Pipeline.Name, Message: msg,
		TaskToken: t.req.TaskToken, CreatedAt: now, ExpiresAt: now.Add(timeout)}
	if err := t.h.Store.CreateApproval(ctx, a); err != nil {
		return task.Response{}, fmt.Errorf("step %q: create approval: %w", u.key, err)
	}
	if err := t.setRunStatus(ctx, store.RunWaiting); err != nil {
		return task.Response{}, err
	}
	n := t.h.Notifier
	if n == nil {
		n = LogNotifier{Logger: t.h.log}
	}
	a.TaskToken = ""
	if err := n.NotifyApproval(ctx, a, string(t.req.Pipeline.Stage)); err != nil {
		t.h.log.Warn("approval notification failed", "run", a.RunID, "step", a.Step, "approval", a.ID, "error", err.Error())
	}
	return task.Response{Status: StatusWaiting, Step: u.key, Usage: t.req.Usage}, nil
}

// waitUnit reads what an approval or child_input Request is about: a
// sequential step, a human check of one (with Check), or (with a group)
// a parallel branch or fan-out item.
func (t *taskRun) waitUnit() (unit, error) {
	if t.req.Group != "" {
		return t.branchUnit()
	}
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return unit{}, err
	}
	if st.Name == "" {
		return unit{}, fault.Errorf[fault.ConfigError]("step handler: %s step config has no name", t.req.Mode)
	}
	if at := t.req.Check; at != nil {
		if at.Index < 0 || at.Index >= len(st.Checks) || st.Checks[at.Index].Type != pipeline.CheckHuman {
			return unit{}, fault.Errorf[fault.ConfigError]("step %q: check %d is not a human check", st.Name, at.Index)
		}
		c := st.Checks[at.Index]
		u := unit{name: st.Name, key: checkKey(st.Name, c.Name), record: st.Name, executor: pipeline.ExecHuman,
			prompt: c.Message, timeout: humanCheckTimeout(c)}
		if u.prompt == "" {
			// Text made of the answer, never rendered: the answer is
			// data, not template source.
			u.prompt, u.literal = defaultCheckMessage(st.Name, c.Name, t.req.Steps[st.Name]), true
		}
		return u, nil
	}
	return unit{name: st.Name, key: st.Name, record: st.Name, executor: st.Executor, config: st.ExecutorConfig,
		prompt: st.PromptTemplate, timeout: st.TimeoutSeconds}, nil
}

// human turns the approver's decision into the step's output and gates it.
func (t *taskRun) human(ctx context.Context) (task.Response, error) {
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return task.Response{}, err
	}
	o, err := decisionOutput(st.Name, t.req.Decision)
	if err != nil {
		return task.Response{}, err
	}
	if err := t.setRunStatus(ctx, store.RunRunning); err != nil {
		return task.Response{}, err
	}
	return t.decided(ctx, st, o, stepUsage{}, nil)
}

// decisionOutput is the output a human's decision makes: approved,
// confidence 1; rejected, confidence 0.
func decisionOutput(step string, d *task.Decision) (*llmoutput.Output, error) {
	if d == nil {
		return nil, fault.Errorf[fault.ConfigError]("step %q: human request has no decision", step)
	}
	who := strings.TrimSpace(d.By)
	if who == "" {
		who = "human operator"
	}
	var o *llmoutput.Output
	switch strings.ToLower(strings.TrimSpace(d.Decision)) {
	case task.Approve, "approved":
		o = llmoutput.New(1, "Approved by "+who, d.Comment)
	case task.Reject, "rejected":
		o = llmoutput.New(0, "Rejected by "+who, d.Comment)
	default:
		return nil, fault.Errorf[fault.ConfigError]("step %q: decision %q is neither approve nor reject", step, d.Decision)
	}
	_ = o.SetExtra("decided_by", who)
	if d.Comment != "" {
		_ = o.SetExtra("comment", d.Comment)
	}
	return o, nil
}

// decided gates and records a step whose output was made for it.
func (t *taskRun) decided(ctx context.Context, st *pipeline.Step, o *llmoutput.Output, usage stepUsage, flags []string) (task.Response, error) {
	started := t.h.now()
	out, err := compact(o, o.Confidence)
	if err != nil {
		return task.Response{}, err
	}
	status, reason, gflags := gate(st.Name, st.Gate, o.Confidence, o, true)
	res := result{out: o, primary: o.Confidence, effective: o.Confidence, usage: usage, flags: append(flags, gflags...), promptHash: store.PromptHash(st.PromptTemplate)}
	rec := t.baseRecord(st.Name, st.Executor, 1, started, &res)
	rec.Status, rec.Output = recordStatus(status), out
	rec.Trust = legacyReport(st.Gate, o.Confidence, status, reason)
	return t.finish(ctx, outcome{name: st.Name, record: rec, status: status, reason: reason, output: out, usage: usage})
}

// childResult is a sub-pipeline's final output as Step Functions returns it.
type childResult struct {
	Output json.RawMessage `json:"output"`
	RunID  string          `json:"run_id"`
	Status string          `json:"status"`
	Reason string          `json:"reason"` // stopped: why
	Usage  *task.Usage     `json:"usage"`
}

// child turns a sub-pipeline's outcome into the step's output and gates it.
func (t *taskRun) child(ctx context.Context) (task.Response, error) {
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return task.Response{}, err
	}
	name, _ := st.ExecutorConfig["pipeline"].(string)
	o, usage, flags, err := t.childOutcome(st.Name, name)
	if err != nil {
		return task.Response{}, err
	}
	return t.decided(ctx, st, o, usage, flags)
}

// childOutcome turns the sub-pipeline's outcome in the Request (its
// result, or the error that ended it) into the output of the step that
// ran it: the child's final answer when it completed with one, else
// confidence 1 (completed) or 0 with the child's reason as
// next_step_context, and the child's run ID and status. A child that
// ended otherwise than by succeeding is read from the error's cause, its
// description (runend.ChildEnd): its status and reason are those its own
// run was recorded with. Any other error (the child could not start, the
// Task timed out waiting) fails the step's child: status failed, the
// error as its reason.
func (t *taskRun) childOutcome(step, name string) (*llmoutput.Output, stepUsage, []string, error) {
	var cr childResult
	if len(t.req.Child) > 0 && string(t.req.Child) != "null" {
		if err := json.Unmarshal(t.req.Child, &cr); err != nil {
			return nil, stepUsage{}, nil, fault.Errorf[fault.ConfigError]("step %q: sub-pipeline result: %v", step, err)
		}
	}
	status, reason := cr.Status, cr.Reason
	var flags []string
	if e := t.req.Error; e != nil && (e.Error != "" || e.Cause != "") {
		flags = append(flags, "sub_pipeline_error")
		if end, runID, ok := runend.ChildEnd(e.Error, e.Cause); ok {
			oc, _ := runend.Of(end)
			status, reason = string(oc.Status), oc.Reason
			if cr.RunID == "" {
				cr.RunID = runID
			}
		} else {
			status, reason = string(runend.StatusOfError(e.Error)), errorText(e)
		}
	}
	if status == "" {
		status = task.StatusFailed
	}
	var o *llmoutput.Output
	if status == task.StatusCompleted && len(cr.Output) > 0 {
		var parsed llmoutput.Output
		if err := json.Unmarshal(cr.Output, &parsed); err == nil && len(parsed.Validate()) == 0 {
			o = &parsed
		}
	}
	if o == nil {
		conf := 0.0
		if status == task.StatusCompleted {
			conf = 1.0
		}
		o = llmoutput.New(conf, fmt.Sprintf("Sub-pipeline '%s' %s", name, status), reason)
	}
	// The child's output may carry the runner-reserved names of the
	// child's own last step (a group's join, a nested sub_run_id): they are
	// not this step's. This step's are the child execution's id and status.
	o.Extra = slices.DeleteFunc(o.Extra, func(f llmoutput.Field) bool { return llmoutput.Reserved(f.Name) })
	if cr.RunID != "" {
		_ = o.SetExtra(llmoutput.FieldSubRunID, cr.RunID)
	}
	_ = o.SetExtra(llmoutput.FieldSubPipelineStatus, status)
	var usage stepUsage
	if cr.Usage != nil {
		usage.addUsage(*cr.Usage)
	}
	return o, usage, flags, nil
}

// defaultCheckMessage is a human check's approval message when the check
// gives none: the step's answer, for a person to confirm.
func defaultCheckMessage(step, check string, answer json.RawMessage) string {
	var out struct {
		Confidence *float64 `json:"confidence"`
		Summary    string   `json:"summary"`
		Context    string   `json:"next_step_context"`
	}
	_ = json.Unmarshal(answer, &out)
	conf := "?"
	if out.Confidence != nil {
		conf = fmtConf(*out.Confidence)
	}
	text := fmt.Sprintf("Step %q answered (confidence %s): %s", step, conf, out.Summary)
	if out.Context != "" {
		text += "\n" + out.Context
	}
	text += fmt.Sprintf("\nApprove if the answer holds; a rejection fails deterministic check %q and the step's trust.", check)
	return text
}
