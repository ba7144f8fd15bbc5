package notify

import (
	"encoding/json"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// bindings builds a notification's template variables the way a step's are
// built (run, pipeline, labels, team, context_template.include, vars,
// steps), then adds action, status and the notification extras.
func bindings(p task.Pipeline, action string, c Context) map[string]any {
	trig := map[string]any{}
	if len(c.Trigger) > 0 {
		_ = json.Unmarshal(c.Trigger, &trig)
		if trig == nil {
			trig = map[string]any{}
		}
	}
	b := make(map[string]any, 24+len(p.Vars)+len(p.Include))
	p.RunBindings(b, c.RunID, c.CurrentStep, trig)
	b[pipeline.BindSteps] = steps(c.Steps)

	b["action"] = action
	b["status"] = c.Status
	b["escalation_reason"] = c.EscalationReason
	if c.Confidence != nil {
		b["confidence"] = *c.Confidence
	}
	if c.ConfidenceThreshold != nil {
		b["confidence_threshold"] = *c.ConfidenceThreshold
	}
	b["step_summary"] = c.StepSummary
	if c.Contradicts != nil {
		b["contradicts"] = c.Contradicts
	}
	b["proceed_reason"] = c.ProceedReason
	for k, v := range c.Extra {
		b[k] = v
	}
	return b
}

// steps decodes the earlier steps' outputs for templates, without
// raw_response, each also under its name with hyphens as underscores.
func steps(raw map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(raw))
	for name, r := range raw {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			v = string(r)
		}
		if m, ok := v.(map[string]any); ok {
			delete(m, "raw_response")
		}
		out[name] = v
	}
	for name, v := range out {
		if alias := strings.ReplaceAll(name, "-", "_"); alias != name {
			if _, taken := raw[alias]; !taken {
				out[alias] = v
			}
		}
	}
	return out
}
