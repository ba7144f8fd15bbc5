package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// settle turns a sequential step's answer into its outcome: the grounding
// judge (G), the deterministic checks in order (D), the combined trust
// and the gate, then the record. A human check pauses it: the record is
// written waiting, with the trust so far, and the step answers
// StatusCheck; a check Task takes it up after the decision (check).
func (t *taskRun) settle(ctx context.Context, st *pipeline.Step, attempt int, started time.Time, res *result, out json.RawMessage, stored *stepUsage) (task.Response, error) {
	sig := Signals{S: res.primary, SAfterV: res.effective, V: res.verifier}
	rep := newReport(st.Verifier, sig)
	var b map[string]any
	if st.Grounding != nil || len(st.Checks) > 0 {
		b = t.checkBindings(ctx, st.Name, out)
	}
	if g := st.Grounding; g != nil {
		verdict, spent := t.ground(ctx, st, res, out, b)
		rep.Grounding = verdict
		sig.G, sig.GEnforced = verdict.Score, g.Enforce
		if verdict.Error != "" {
			res.flags = append(res.flags, FlagGroundingFailed)
		}
		if spent.calls > 0 {
			res.usage.addCalls(spent.calls, spent.in, spent.out, costOf(spent), spent.cost != nil)
			if stored != nil {
				stored.addCalls(spent.calls, spent.in, spent.out, costOf(spent), spent.cost != nil)
			}
		}
	}
	rec, err := t.agentRecord(ctx, st.Name, st.Executor, attempt, started, res)
	if err != nil {
		return task.Response{}, err
	}
	rec.Output = out
	usage := res.usage
	if stored != nil {
		usage = *stored
	}
	if len(st.Checks) > 0 {
		results, pending := t.runChecks(ctx, st, 0, nil, b)
		rep.DeterministicChecks = results
		if pending >= 0 {
			return t.pause(ctx, st, rec, rep, sig, res.usage, usage, pending)
		}
		sig.D, sig.FailedCheck = checksPassed(results)
	}
	return t.decideStep(ctx, st, rec, rep, sig, res.out, res.usage, usage)
}

// checkBindings are the template variables of a step's grounding
// executor_config and checks: the step context, and output, the step's
// own answer (its compact output).
func (t *taskRun) checkBindings(ctx context.Context, step string, out json.RawMessage) map[string]any {
	b := t.h.bindings(ctx, t.req, t.trig, scope{current: step})
	b["output"] = decodeOutput(out)
	return b
}

// decideStep gates a step on its combined trust and records it with its
// trust report. usage is what the step spent; add what to add to the
// run's stored usage (usage, unless a part was added already).
func (t *taskRun) decideStep(ctx context.Context, st *pipeline.Step, rec store.StepRecord, rep *store.TrustReport, sig Signals, o *llmoutput.Output, usage, add stepUsage) (task.Response, error) {
	if cal := st.Calibration; cal != nil {
		rep.Calibration, sig.C = t.calibrate(ctx, cal, rec, sig.SAfterV)
		sig.CEnforced, sig.CNote = cal.Enforce, calibrationNote(rep.Calibration, sig.C)
	}
	tr := CombineTrust(sig)
	status, reason, flags := gateTrust(st.Name, st.Gate, tr, o, true)
	finishReport(rep, st.Gate, sig, tr, status, reason)
	rec.Flags = append(rec.Flags, flags...)
	if sig.D != nil && !*sig.D {
		rec.Flags = append(rec.Flags, FlagCheckFailed)
	}
	rec.Flags = slices.DeleteFunc(rec.Flags, func(f string) bool { return f == FlagAwaitingCheck })
	rec.Status, rec.Trust = recordStatus(status), rep
	if tr.Combined != sig.SAfterV {
		// Later steps (when:, templates, a join, the notifications) and
		// the recorded output see the confidence the gate decided on; the
		// record keeps S after V as its effective confidence (what
		// calibration bins by).
		out, err := compact(o, tr.Combined)
		if err != nil {
			return task.Response{}, err
		}
		rec.Output = out
	}
	resp, err := t.finish(ctx, outcome{name: st.Name, record: rec, status: status, reason: reason, output: rec.Output, usage: usage, stored: &add})
	if err != nil {
		return resp, err
	}
	if st.Calibration != nil {
		// Only a step that declares calibration (enforce: false collects
		// without gating) pays for its history: three more requests per
		// step on DynamoDB.
		t.recordSample(ctx, rec, sig)
	}
	if st.Grounding != nil || len(st.Checks) > 0 || st.Calibration != nil {
		resp.Trust = trustSummary(rep)
	}
	return resp, nil
}

// pause writes a step's record waiting for the human check at index
// pending, with its trust so far, adds what the step spent to the run's
// usage, and answers StatusCheck naming the check.
func (t *taskRun) pause(ctx context.Context, st *pipeline.Step, rec store.StepRecord, rep *store.TrustReport, sig Signals, usage, add stepUsage, pending int) (task.Response, error) {
	tr := CombineTrust(sig)
	finishReport(rep, st.Gate, sig, tr, string(store.StepWaiting), "")
	rec.Status, rec.Trust = store.StepWaiting, rep
	if !slices.Contains(rec.Flags, FlagAwaitingCheck) {
		rec.Flags = append(rec.Flags, FlagAwaitingCheck)
	}
	if err := t.putStep(ctx, rec); err != nil {
		return task.Response{}, err
	}
	if err := t.addUsage(ctx, rec.Name+"#"+strconv.Itoa(max(rec.Attempt, 1)), add); err != nil {
		return task.Response{}, err
	}
	c := st.Checks[pending]
	return task.Response{Status: task.StatusCheck, Step: st.Name, Output: rec.Output,
		Steps: map[string]json.RawMessage{st.Name: rec.Output}, Usage: t.req.Usage.Add(usage.task()),
		Check: &task.CheckAt{Index: pending, Name: c.Name, Attempt: rec.Attempt}, Trust: trustSummary(rep)}, nil
}

// check goes on with a step paused for a human check: it reads the
// step's waiting record, applies the decision (or the wait's error: the
// check fails closed) to the check, runs the checks after it, then gates
// and records the step, or pauses again at its next human check. A
// retried check Task that finds the step's record finished answers what
// it says.
func (t *taskRun) check(ctx context.Context) (task.Response, error) {
	st, err := decodeStep[pipeline.Step](t.req)
	if err != nil {
		return task.Response{}, err
	}
	at := t.req.Check
	switch {
	case st.Name == "":
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: check step config has no name")
	case at == nil || at.Index < 0 || at.Index >= len(st.Checks) || st.Checks[at.Index].Type != pipeline.CheckHuman:
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: a check Task needs the human check the step paused at", st.Name)
	}
	rec, err := t.waitingRecord(ctx, st.Name, at.Attempt)
	if err != nil {
		return task.Response{}, err
	}
	if rec.Status != store.StepWaiting {
		return t.settled(ctx, st, rec)
	}
	if rec.Trust == nil || len(rec.Trust.DeterministicChecks) != at.Index+1 || rec.Trust.DeterministicChecks[at.Index].Name != st.Checks[at.Index].Name {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: the waiting record does not wait for check %q", st.Name, at.Name)
	}
	if err := t.setRunStatus(ctx, store.RunRunning); err != nil {
		return task.Response{}, err
	}
	rep := rec.Trust
	rep.DeterministicChecks[at.Index] = t.humanResult(st, at.Index, rep.DeterministicChecks[at.Index])
	b := t.checkBindings(ctx, st.Name, rec.Output)
	results, pending := t.runChecks(ctx, st, at.Index+1, rep.DeterministicChecks, b)
	rep.DeterministicChecks = results
	s := rep.Signals
	sig := Signals{S: s.S, SAfterV: s.SAfterV, V: s.V, G: s.G, GEnforced: st.Grounding != nil && st.Grounding.Enforce}
	end := t.h.now()
	rec.FinishedAt, rec.DurationMS = end, max(end.Sub(rec.StartedAt).Milliseconds(), 0)
	if pending >= 0 {
		return t.pause(ctx, st, rec, rep, sig, stepUsage{}, stepUsage{}, pending)
	}
	sig.D, sig.FailedCheck = checksPassed(results)
	var o llmoutput.Output
	if err := json.Unmarshal(rec.Output, &o); err != nil {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: the waiting record's output does not read: %v", st.Name, err)
	}
	return t.decideStep(ctx, st, rec, rep, sig, &o, stepUsage{}, stepUsage{})
}

// waitingRecord reads the record of a step's attempt that paused.
func (t *taskRun) waitingRecord(ctx context.Context, step string, attempt int) (store.StepRecord, error) {
	recs, err := t.h.Store.ListSteps(ctx, t.req.Run.ID)
	if err != nil {
		return store.StepRecord{}, fmt.Errorf("step %q: list steps: %w", step, err)
	}
	for _, r := range recs {
		if r.Name == step && r.Attempt == max(attempt, 1) {
			return r, nil
		}
	}
	return store.StepRecord{}, fault.Errorf[fault.ConfigError]("step %q: no record of attempt %d waits for a check", step, attempt)
}

// humanResult is a human check's result from the Task's decision, or
// from the error that ended the wait (a timeout, a failed approval): a
// check fails closed, in every stage.
func (t *taskRun) humanResult(st *pipeline.Step, i int, r store.CheckResult) store.CheckResult {
	c := st.Checks[i]
	r.Name, r.Type = c.Name, c.Type
	d := t.req.Decision
	switch {
	case d != nil && isApproval(d.Decision):
		r.Outcome, r.Detail = store.CheckPassed, "approved by "+decider(d)
	case d != nil && isRejection(d.Decision):
		r.Outcome, r.Detail = store.CheckFailed, "rejected by "+decider(d)
	case t.req.Error != nil && (t.req.Error.Error != "" || t.req.Error.Cause != ""):
		r.Outcome, r.Error = store.CheckError, errorText(t.req.Error)
		if t.req.Error.Error == "States.Timeout" {
			r.Error = fmt.Sprintf("no decision within %d s", humanCheckTimeout(c))
		}
	default:
		r.Outcome, r.Error = store.CheckError, "the check Task carries no decision"
	}
	if d != nil && d.Comment != "" {
		r.Detail += ": " + d.Comment
	}
	return r
}

func isApproval(d string) bool {
	d = strings.ToLower(strings.TrimSpace(d))
	return d == task.Approve || d == "approved"
}

func isRejection(d string) bool {
	d = strings.ToLower(strings.TrimSpace(d))
	return d == task.Reject || d == "rejected"
}

// decider is who decided, as decisionOutput names them.
func decider(d *task.Decision) string {
	if who := strings.TrimSpace(d.By); who != "" {
		return who
	}
	return "human operator"
}

func humanCheckTimeout(c *pipeline.Check) int {
	if c.TimeoutSeconds > 0 {
		return c.TimeoutSeconds
	}
	return pipeline.DefaultHumanCheckTimeout
}

// settled answers for a step whose record is finished already (a
// retried check Task): its status, output and the gate's reason; the run
// is closed again, which changes nothing when it was.
func (t *taskRun) settled(ctx context.Context, st *pipeline.Step, rec store.StepRecord) (task.Response, error) {
	reason := ""
	if rec.Trust != nil {
		reason = rec.Trust.Gate.Reason
	}
	status := string(rec.Status)
	if err := t.endRun(ctx, status, reason, t.req.Usage, rec.Output, false); err != nil {
		return task.Response{}, err
	}
	return task.Response{Status: status, Step: st.Name, Output: rec.Output,
		Steps: map[string]json.RawMessage{st.Name: rec.Output}, Usage: t.req.Usage, Reason: reason, Trust: trustSummary(rec.Trust)}, nil
}
