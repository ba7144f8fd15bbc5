package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// groupProbe tells a parallel group's config from a fan-out's.
type groupProbe struct {
	Over     string          `json:"over"`
	Branches json.RawMessage `json:"branches"`
}

func (t *taskRun) isFanOut() bool {
	var p groupProbe
	_ = json.Unmarshal(t.req.Step, &p)
	return p.Over != "" || (len(p.Branches) == 0 && t.req.Total > 0)
}

// branchUnit reads the branch a branch, approval or child_input Request is
// about: a parallel branch (record "<group>/<branch>") or a fan-out item
// (record and key "<fan_out>/<i>", with its item in scope).
func (t *taskRun) branchUnit() (unit, error) {
	group := t.req.Group
	if t.isFanOut() {
		fo, err := decodeStep[pipeline.FanOut](t.req)
		if err != nil {
			return unit{}, err
		}
		if group == "" {
			group = fo.Name
		}
		key := group + "/" + strconv.Itoa(t.req.Index)
		var item any
		if len(t.req.Item) > 0 {
			if err := json.Unmarshal(t.req.Item, &item); err != nil {
				return unit{}, fault.Errorf[fault.ConfigError]("fan-out %q item %d: %v", group, t.req.Index, err)
			}
		}
		as := fo.As
		if as == "" {
			as = pipeline.DefaultFanOutAs
		}
		return unit{name: fo.Name, key: key, record: key, executor: fo.Executor, config: fo.ExecutorConfig,
			prompt: fo.PromptTemplate, timeout: fo.TimeoutSeconds, verifier: fo.Verifier, agent: fo.Agent,
			item: &fanItem{as: as, value: item, index: t.req.Index, total: t.req.Total}}, nil
	}
	br, err := decodeStep[pipeline.Branch](t.req)
	if err != nil {
		return unit{}, err
	}
	if br.Name == "" {
		return unit{}, fault.Errorf[fault.ConfigError]("step handler: branch config has no name")
	}
	record := br.Name
	if group != "" {
		record = group + "/" + br.Name
	}
	return unit{name: br.Name, key: br.Name, record: record, executor: br.Executor, config: br.ExecutorConfig,
		prompt: br.PromptTemplate, timeout: br.TimeoutSeconds, verifier: br.Verifier, agent: br.Agent}, nil
}

// branch runs one parallel branch or fan-out item. It never gates and
// never returns an executor error: a failure is a failed branch. A human
// branch's decision and a sub-pipeline branch's outcome, which the state
// machine waited for, become the branch's output (waitedBranch).
func (t *taskRun) branch(ctx context.Context) (task.Response, error) {
	u, err := t.branchUnit()
	if err != nil {
		return task.Response{}, err
	}
	if u.executor == pipeline.ExecHuman || u.executor == pipeline.ExecPipeline {
		return t.waitedBranch(ctx, u)
	}
	started := t.h.now()
	res, err := t.execute(ctx, u)
	rec, aerr := t.agentRecord(ctx, u.record, u.executor, 1, started, &res)
	if aerr != nil {
		return task.Response{}, aerr
	}
	status := task.StatusCompleted
	var out json.RawMessage
	if err == nil {
		err = t.storeArtifacts(ctx, u.record, res.out)
	}
	if err == nil {
		out, err = compact(res.out, res.effective)
	}
	if err != nil {
		summary := err.Error()
		if n := fault.Name(err); n != "" {
			summary = n + ": " + summary
		}
		status, out = task.StatusFailed, failedOutput(summary)
		rec.Status, rec.Error = store.StepFailed, err.Error()
	} else {
		rec.Status = store.StepCompleted
	}
	rec.Output = out
	if err := t.putStep(ctx, rec); err != nil {
		return task.Response{}, err
	}
	if err := t.addUsage(ctx, u.record+"#1", res.usage); err != nil {
		return task.Response{}, err
	}
	// A branch answers its own usage: the join adds all branches.
	return task.Response{Status: status, Step: u.key, Output: out,
		Steps: map[string]json.RawMessage{u.key: out}, Usage: res.usage.task(), Agent: res.agent.summary()}, nil
}

// branchResult is one branch as the join reads it.
type branchResult struct {
	name       string
	weight     float64
	confidence float64
	summary    string
	failed     bool
}

// join combines a group's branches, gates and records the group.
func (t *taskRun) join(ctx context.Context) (task.Response, error) {
	started := t.h.now()
	var (
		name, join string
		g          pipeline.Gate
		names      []string
		weights    []float64
		fan        *pipeline.FanOut
	)
	if t.isFanOut() {
		fo, err := decodeStep[pipeline.FanOut](t.req)
		if err != nil {
			return task.Response{}, err
		}
		fan, name, join, g = fo, fo.Name, string(fo.Join), fo.Gate
		for i := range t.req.Branches {
			names = append(names, name+"/"+strconv.Itoa(i))
			weights = append(weights, 1)
		}
	} else {
		par, err := decodeStep[pipeline.Parallel](t.req)
		if err != nil {
			return task.Response{}, err
		}
		name, join, g = par.Name, string(par.Join), par.Gate
		for _, b := range par.Branches {
			names = append(names, b.Name)
			w := b.Weight
			if w == 0 {
				w = pipeline.DefaultBranchWeight
			}
			weights = append(weights, w)
		}
	}
	if name == "" {
		name = t.req.Group
	}
	if name == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step handler: join config has no name")
	}
	rec := store.StepRecord{Name: name, Index: t.index(started), Attempt: 1, StartedAt: started}
	if fan != nil {
		rec.Executor = fan.Executor
	}
	fin := func(status, reason string, out json.RawMessage, usage stepUsage, extra map[string]json.RawMessage, eff *float64) (task.Response, error) {
		end := t.h.now()
		rec.Status, rec.Output, rec.EffectiveConfidence, rec.PrimaryConfidence = recordStatus(status), out, eff, eff
		rec.FinishedAt, rec.DurationMS = end, max(end.Sub(started).Milliseconds(), 0)
		rec.InputTokens, rec.OutputTokens, rec.CostUSD = usage.in, usage.out, usage.cost
		if status == task.StatusFailed {
			rec.Error = reason
		}
		return t.finish(ctx, outcome{name: name, record: rec, status: status, reason: reason, output: out, usage: usage, extra: extra})
	}

	// The group could not start: over is not a list, or too many items.
	if e := t.req.Error; e != nil && (e.Error != "" || e.Cause != "") {
		why := fmt.Sprintf("group %q failed: %s", name, errorText(e))
		zero := 0.0
		return fin(task.StatusFailed, why, failedOutput(why), stepUsage{}, nil, &zero)
	}
	if len(t.req.Branches) == 0 {
		if fan == nil {
			why := fmt.Sprintf("group %q has no branch results", name)
			zero := 0.0
			return fin(task.StatusFailed, why, failedOutput(why), stepUsage{}, nil, &zero)
		}
		onEmpty := fan.OnEmpty
		if onEmpty == pipeline.EmptyAbort {
			// The reference runner ends the group, and the run, failed here;
			// so does Stepline (the escalate notification, not on_abort).
			why := fmt.Sprintf("fan-out %q has no items (on_empty: abort)", name)
			zero := 0.0
			out, _ := compact(&llmoutput.Output{Summary: "No items", Proceed: true}, 0)
			rec.Flags = append(rec.Flags, "empty_"+pipeline.EmptyAbort)
			return fin(task.StatusFailed, why, out, stepUsage{}, nil, &zero)
		}
		one := 1.0
		rec.Flags = append(rec.Flags, "empty_"+strings.ToLower(onEmptyOr(onEmpty)))
		out, _ := compact(&llmoutput.Output{Confidence: 1, Summary: "No items", Proceed: true}, 1)
		return fin(task.StatusCompleted, "", out, stepUsage{}, nil, &one)
	}

	var (
		results []branchResult
		usage   stepUsage
		extra   = make(map[string]json.RawMessage, len(t.req.Branches))
	)
	for i, br := range t.req.Branches {
		bname := br.Step
		if i < len(names) {
			bname = names[i]
		}
		w := 1.0
		if i < len(weights) {
			w = weights[i]
		}
		// Whether a branch failed is the runner's own record: the status
		// its Task answered (or the Catch wrote), never a field of its
		// output, which carries the model's answer.
		r := branchResult{name: bname, weight: w, failed: br.Status != task.StatusCompleted}
		conf, summary, ok := branchAnswer(br.Output)
		r.summary = summary
		if ok && !r.failed {
			r.confidence = conf
		} else {
			r.failed = true
		}
		results = append(results, r)
		output := br.Output
		if r.failed {
			output = failedOutput(r.summary)
		}
		extra[bname] = output
		usage.addUsage(br.Usage)
		if r.failed {
			if err := t.recordLostBranch(ctx, name, bname, fan != nil, r.summary); err != nil {
				return task.Response{}, err
			}
		}
	}
	eff := combineBranches(pipeline.Join(join), results)
	summary, next := groupSummary(name, join, eff, results)
	o := &llmoutput.Output{Confidence: eff, Summary: summary, NextStepContext: next, Proceed: true}
	_ = o.SetExtra(llmoutput.FieldJoin, join)
	var failedNames []string
	for _, r := range results {
		if r.failed {
			failedNames = append(failedNames, r.name)
		}
	}
	if len(failedNames) > 0 {
		_ = o.SetExtra(llmoutput.FieldFailedBranches, failedNames)
	}
	out, err := compact(o, eff)
	if err != nil {
		return task.Response{}, err
	}
	status, reason, flags := gate(name, g, eff, o, false)
	rec.Flags = append(rec.Flags, flags...)
	rec.Trust = legacyReport(g, eff, status, reason)
	return fin(status, reason, out, usage, extra, &eff)
}

// branchAnswer reads a branch output's confidence and summary by their
// exact names (encoding/json would also take "Confidence" or "SUMMARY"
// for them). ok is false when there is no numeric confidence.
func branchAnswer(output json.RawMessage) (confidence float64, summary string, ok bool) {
	var m map[string]json.RawMessage
	if len(output) == 0 || json.Unmarshal(output, &m) != nil {
		return 0, "", false
	}
	_ = json.Unmarshal(m["summary"], &summary)
	raw := m["confidence"]
	if len(raw) == 0 || json.Unmarshal(raw, &confidence) != nil {
		return 0, summary, false
	}
	return confidence, summary, true
}

// recordLostBranch records a failed branch the handler never saw (its
// Task failed before answering); a branch that answered failed is
// already recorded and the write is a no-op.
func (t *taskRun) recordLostBranch(ctx context.Context, group, branch string, fan bool, summary string) error {
	name := branch
	if !fan {
		name = group + "/" + branch
	}
	now := t.h.now()
	zero := 0.0
	return t.putStep(ctx, store.StepRecord{Name: name, Index: t.index(now), Attempt: 1, Status: store.StepFailed,
		Error: summary, EffectiveConfidence: &zero, Output: failedOutput(summary), Flags: []string{FlagBranchLost},
		StartedAt: now, FinishedAt: now})
}

func (u *stepUsage) addUsage(v task.Usage) {
	u.in += v.InputTokens
	u.out += v.OutputTokens
	c := v.CostUSD
	if u.cost != nil {
		c += *u.cost
	}
	u.cost = &c
	u.calls++
}

func onEmptyOr(s string) string {
	if s == "" {
		return pipeline.EmptyComplete
	}
	return s
}

// combineBranches joins branch confidences; a failed branch counts 0.
func combineBranches(join pipeline.Join, rs []branchResult) float64 {
	if len(rs) == 0 {
		return 0
	}
	switch join {
	case pipeline.JoinAnyMustPass:
		m := rs[0].confidence
		for _, r := range rs[1:] {
			m = max(m, r.confidence)
		}
		return m
	case pipeline.JoinWeightedAverage:
		var sum, wsum float64
		for _, r := range rs {
			sum += r.confidence * r.weight
			wsum += r.weight
		}
		if wsum == 0 {
			return 0
		}
		return sum / wsum
	}
	m := rs[0].confidence
	for _, r := range rs[1:] {
		m = min(m, r.confidence)
	}
	return m
}

func groupSummary(name, join string, eff float64, rs []branchResult) (string, string) {
	failed := 0
	var next strings.Builder
	for i, r := range rs {
		if r.failed {
			failed++
		}
		if i > 0 {
			next.WriteByte('\n')
		}
		fmt.Fprintf(&next, "%s (%s): %s", r.name, fmtConf(r.confidence), r.summary)
	}
	s := fmt.Sprintf("%d branches joined (%s): confidence %s", len(rs), join, fmtConf(round(eff)))
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	return s, next.String()
}

func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return v
}

// errorText reads a Step Functions error: Lambda errors carry a JSON Cause
// {errorMessage, errorType}.
func errorText(e *task.Error) string {
	msg := e.Cause
	var lambda struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}
	if strings.HasPrefix(strings.TrimSpace(msg), "{") && json.Unmarshal([]byte(msg), &lambda) == nil && lambda.ErrorMessage != "" {
		msg = lambda.ErrorMessage
	}
	switch {
	case e.Error == "":
		return msg
	case msg == "":
		return e.Error
	}
	return e.Error + ": " + msg
}
