package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// waitedBranch turns what the state machine waited for in a branch — a
// human's decision, a sub-pipeline's outcome — into the branch's output,
// records it and answers it for the join. As for any branch nothing is
// gated here: a rejection is confidence 0, a child that did not complete
// is confidence 0 with its status in sub_pipeline_status.
func (t *taskRun) waitedBranch(ctx context.Context, u unit) (task.Response, error) {
	started := t.h.now()
	var (
		o     *llmoutput.Output
		usage stepUsage
		flags []string
		err   error
	)
	if u.executor == pipeline.ExecHuman {
		if o, err = decisionOutput(u.key, t.req.Decision); err != nil {
			return task.Response{}, err
		}
		if err := t.setRunStatus(ctx, store.RunRunning); err != nil {
			return task.Response{}, err
		}
	} else {
		name, _ := u.config["pipeline"].(string)
		if o, usage, flags, err = t.childOutcome(u.key, name); err != nil {
			return task.Response{}, err
		}
	}
	out, err := compact(o, o.Confidence)
	if err != nil {
		return task.Response{}, err
	}
	res := result{out: o, primary: o.Confidence, effective: o.Confidence, usage: usage, flags: flags, promptHash: store.PromptHash(u.prompt)}
	rec := t.baseRecord(u.record, u.executor, 1, started, &res)
	rec.Status, rec.Output = store.StepCompleted, out
	if err := t.putStep(ctx, rec); err != nil {
		return task.Response{}, err
	}
	if err := t.addUsage(ctx, u.record+"#1", usage); err != nil {
		return task.Response{}, err
	}
	return task.Response{Status: task.StatusCompleted, Step: u.key, Output: out,
		Steps: map[string]json.RawMessage{u.key: out}, Usage: usage.task()}, nil
}

// Fields of a sub-pipeline's trigger: those executor_config.context may
// set (the compiler refuses any other) and those the runner sets.
var (
	contextText    = []string{"summary", "severity"}
	contextObjects = []string{"labels", "metadata"}
)

// childInput renders a sub-pipeline step's (or branch's, or item's)
// executor_config.context over its step context and answers, as Output,
// the child's trigger: the parent's trigger with summary and severity
// replaced by the rendered text, labels and metadata merged key by key
// over the parent's, then pipeline set to the child's name, source to
// "sub-pipeline" and no fingerprint (a child run is never deduplicated);
// team stays the parent's. Rendered values are data: they are not
// escaped for secret expansion, which the child does not apply to its
// trigger.
func (t *taskRun) childInput(ctx context.Context) (task.Response, error) {
	u, err := t.waitUnit()
	if err != nil {
		return task.Response{}, err
	}
	name, _ := u.config["pipeline"].(string)
	if name == "" {
		return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: executor_config.pipeline names no pipeline", u.key)
	}
	overrides, _ := u.config["context"].(map[string]any)
	b := t.h.bindings(ctx, t.req, t.trig, scope{current: u.name, item: u.item})
	trig := maps.Clone(t.trig)
	keys := slices.Sorted(maps.Keys(overrides))
	for _, k := range keys {
		field := "executor_config.context." + k
		switch v := overrides[k]; {
		case slices.Contains(contextText, k):
			src, ok := v.(string)
			if !ok {
				return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: %s must be a string", u.key, field)
			}
			text, err := t.h.render.render(ctx, u.name, field, src, b)
			if err != nil {
				return task.Response{}, err
			}
			trig[k] = text
		case slices.Contains(contextObjects, k):
			obj, ok := v.(map[string]any)
			if !ok {
				return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: %s must be a mapping", u.key, field)
			}
			merged, _ := trig[k].(map[string]any)
			merged = maps.Clone(merged)
			if merged == nil {
				merged = make(map[string]any, len(obj))
			}
			for _, key := range slices.Sorted(maps.Keys(obj)) {
				rv, err := t.h.render.renderData(ctx, u.name, field+"."+key, obj[key], b)
				if err != nil {
					return task.Response{}, err
				}
				merged[key] = rv
			}
			trig[k] = merged
		default:
			return task.Response{}, fault.Errorf[fault.ConfigError]("step %q: %s is not a field a sub-pipeline's context sets (summary, severity, labels, metadata)", u.key, field)
		}
	}
	trig["pipeline"] = name
	trig["source"] = "sub-pipeline"
	trig["fingerprint"] = nil
	out, err := json.Marshal(trig)
	if err != nil {
		return task.Response{}, fmt.Errorf("step %q: encode the sub-pipeline's trigger: %w", u.key, err)
	}
	return task.Response{Step: u.key, Output: out, Usage: t.req.Usage}, nil
}
