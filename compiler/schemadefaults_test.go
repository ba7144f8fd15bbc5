package compiler

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/pipeline"
)

// schemaDefaults returns every "default" a JSON Schema states, by the JSON
// pointer of the node that states it.
func schemaDefaults(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var walk func(n any, ptr string)
	walk = func(n any, ptr string) {
		switch n := n.(type) {
		case map[string]any:
			if d, ok := n["default"]; ok {
				out[ptr] = d
			}
			for k, v := range n {
				if k != "default" {
					walk(v, ptr+"/"+k)
				}
			}
		case []any:
			for i, v := range n {
				walk(v, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(root, "")
	return out
}

// asJSON is v as a JSON Schema default reads: numbers float64, lists
// []any, named string types plain strings.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// defaultsPipeline writes every block that has defaults and leaves out
// every field that has one (and the blocks durable: true and on_failure:
// abort abbreviate).
const defaultsPipeline = `
name: p
steps:
  - name: a
    executor: scripted
    retry: {}
    loop_until: {confidence: 0.9}
    verifier: {executor: scripted}
    on_failure: {webhook: {url: "https://example.com/failed"}}
    grounding: {}
    calibration: {}
    deterministic_checks: [{name: c, type: webhook, url: "https://example.com/check"}]
  - parallel:
      name: g
      steps: [{name: b, executor: scripted}]
  - fan_out:
      name: f
      over: "{{ steps.a.items }}"
      executor: scripted
durable: {}
budget: {max_tokens: 100}
schedule: {cron: "0 * * * *"}
readiness:
  operational: {min_runs: 1}
  confidence: {min_confidence: 0.5}
  accuracy: {min_marked: 1}
  calibration: {}
`

// TestSchemaDefaultsAreTheModels pins each default the pipeline and agent
// JSON Schemas state to what the checked model holds for a field left out
// (for an agent: the limits its loop runs with). Every default of the
// schemas must have a pin here and every pin a default, so a default
// written in one place only fails.
func TestSchemaDefaultsAreTheModels(t *testing.T) {
	// The grounding judge's profile must exist for the pipeline to check.
	proj := agentProject(t, agentConfig, map[string]string{
		"agents/grounding-judge/agent.yaml": "name: grounding-judge\nmodel: anthropic/claude-haiku-4-5\n",
		"agents/grounding-judge/soul.md":    "judge",
	})
	f, _, ds := BuildIn("p.yaml", []byte(defaultsPipeline), Env{Project: proj})
	if f == nil || f.Pipeline == nil || ds.HasErrors() {
		t.Fatalf("the defaults pipeline does not compile: %q", ds)
	}
	p := f.Pipeline
	step := p.Steps[0].(*pipeline.Step)
	group := p.Steps[1].(*pipeline.Parallel)
	each := p.Steps[2].(*pipeline.FanOut)
	branch := group.Branches[0]
	const (
		def  = "/definitions/"
		prop = "/properties/"
	)
	pins := map[string]any{
		prop + "description": p.Description,
		prop + "tags":        p.Tags,
		prop + "version":     p.Version,
		prop + "stage":       p.Stage,
		prop + "workflow":    p.Workflow,
		"/properties/durable/oneOf/1/properties/on_interrupted": p.Durable.OnInterrupted,
		"/properties/budget/properties/include_approx_cost":     p.Budget.IncludeApproxCost,
		"/properties/schedule/properties/summary":               p.Schedule.Summary,
		"/properties/schedule/properties/severity":              p.Schedule.Severity,

		def + "readiness/properties/operational/properties/acceptable_statuses":    p.Readiness.Operational.AcceptableStatuses,
		def + "readiness/properties/operational/properties/require_current_config": p.Readiness.Operational.RequireCurrentConfig,
		def + "readiness/properties/confidence/properties/require_current_config":  p.Readiness.Confidence.RequireCurrentConfig,
		def + "readiness/properties/accuracy/properties/require_current_config":    p.Readiness.Accuracy.RequireCurrentConfig,
		def + "readiness/properties/calibration/properties/n_min":                  p.Readiness.Calibration.NMin,
		def + "readiness/properties/calibration/properties/bin_width":              p.Readiness.Calibration.BinWidth,
		def + "readiness/properties/calibration/properties/max_divergence":         p.Readiness.Calibration.MaxDivergence,
		def + "readiness/properties/calibration/properties/require_own_evidence":   p.Readiness.Calibration.RequireOwnEvidence,
		def + "readiness/properties/calibration/properties/require_current_config": p.Readiness.Calibration.RequireCurrentConfig,

		def + "verifier/properties/mode":                                step.Verifier.Mode,
		def + "verifier/properties/combination_strategy":                step.Verifier.CombinationStrategy,
		def + "verifier/properties/veto_floor":                          step.Verifier.VetoFloor,
		def + "verifier/properties/trigger/properties/always":           step.Verifier.Trigger.Always,
		def + "verifier/properties/trigger/properties/confidence_below": step.Verifier.Trigger.ConfidenceBelow,
		def + "verifier/properties/trigger/properties/confidence_above": step.Verifier.Trigger.ConfidenceAbove,

		def + "grounding/properties/agent":           step.Grounding.Agent,
		def + "grounding/properties/executor":        step.Grounding.Executor,
		def + "grounding/properties/timeout_seconds": step.Grounding.TimeoutSeconds,
		def + "grounding/properties/enforce":         step.Grounding.Enforce,
		def + "grounding/properties/max_trace_chars": step.Grounding.MaxTraceChars,

		def + "calibration/properties/enforce":         step.Calibration.Enforce,
		def + "calibration/properties/bin_width":       step.Calibration.BinWidth,
		def + "calibration/properties/n_min":           step.Calibration.NMin,
		def + "calibration/properties/on_uncalibrated": step.Calibration.OnUncalibrated,

		def + "deterministicCheck/properties/method": step.Checks[0].Method,

		def + "onFailure/oneOf/1/properties/policy":                             step.OnFailure.Policy,
		def + "onFailure/oneOf/1/properties/webhook/properties/method":          step.OnFailure.Webhook.Method,
		def + "onFailure/oneOf/1/properties/webhook/properties/timeout_seconds": step.OnFailure.Webhook.TimeoutSeconds,

		def + "step/properties/prompt_template":                      step.PromptTemplate,
		def + "step/properties/confidence_threshold":                 step.ConfidenceThreshold,
		def + "step/properties/on_abort":                             step.OnAbort,
		def + "step/properties/retry/properties/attempts":            step.Retry.Attempts,
		def + "step/properties/retry/properties/backoff":             step.Retry.Backoff,
		def + "step/properties/retry/properties/delay_seconds":       step.Retry.DelaySeconds,
		def + "step/properties/loop_until/properties/max_iterations": step.LoopUntil.MaxIterations,

		def + "branch/properties/prompt_template": branch.PromptTemplate,
		def + "branch/properties/weight":          branch.Weight,

		def + "parallel/properties/confidence_threshold": group.ConfidenceThreshold,
		def + "parallel/properties/on_abort":             group.OnAbort,

		def + "fanOut/properties/as":                   each.As,
		def + "fanOut/properties/prompt_template":      each.PromptTemplate,
		def + "fanOut/properties/confidence_threshold": each.ConfidenceThreshold,
		def + "fanOut/properties/on_abort":             each.OnAbort,
		def + "fanOut/properties/max_items":            each.MaxItems,
		def + "fanOut/properties/on_empty":             each.OnEmpty,
	}
	// Shared definitions hold one default for every place that refers to
	// them: each place must have it.
	shared := map[string][]any{
		def + "join":            {group.Join, each.Join},
		def + "onLowConfidence": {step.OnLowConfidence, group.OnLowConfidence, each.OnLowConfidence},
	}
	checkPins(t, "pipeline.schema.json", schemaDefaults(t, Schema()), pins, shared)

	l, ads := agent.ParseProfile("a", "agent.yaml", []byte("name: a\nmodel: anthropic/claude-sonnet-4-5\n"), "soul.md", []byte("Be brief."))
	if l == nil || ads.HasErrors() {
		t.Fatalf("the defaults agent does not load: %q", ads)
	}
	limits := agent.LimitsOf(*l.Profile)
	checkPins(t, "agent.schema.json", schemaDefaults(t, AgentSchema()), map[string]any{
		prop + "max_iterations":              limits.MaxIterations,
		prop + "tool_timeout_seconds":        int(limits.ToolTimeout.Seconds()),
		prop + "trace_tool_result_max_chars": limits.TraceMaxChars,
	}, nil)
}

// checkPins compares each schema default with the model's value pinned to
// its pointer, and fails on a default without a pin or a pin without a
// default.
func checkPins(t *testing.T, file string, defaults map[string]any, pins map[string]any, shared map[string][]any) {
	t.Helper()
	for ptr, want := range defaults {
		got, ok := pins[ptr]
		vals := []any{got}
		if !ok {
			vals, ok = shared[ptr]
		}
		if !ok {
			t.Errorf("%s#%s: the default %v has no pin to the model", file, ptr, want)
			continue
		}
		for i, v := range vals {
			g := asJSON(t, v)
			if g == nil && reflect.DeepEqual(want, []any{}) {
				g = []any{} // a nil slice is the empty list
			}
			if !reflect.DeepEqual(g, want) {
				t.Errorf("%s#%s: the schema's default is %v, the model holds %v (%d of %d)", file, ptr, want, g, i+1, len(vals))
			}
		}
	}
	for _, m := range []map[string]any{pins, sharedKeys(shared)} {
		for ptr := range m {
			if _, ok := defaults[ptr]; !ok {
				t.Errorf("%s#%s: pinned, but the schema states no default there", file, ptr)
			}
		}
	}
	if n := len(pins) + len(shared); n != len(defaults) {
		t.Errorf("%s: %d pins, %d defaults", file, n, len(defaults))
	}
	t.Logf("%s: %d defaults pinned", file, len(defaults))
}

func sharedKeys(m map[string][]any) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}
