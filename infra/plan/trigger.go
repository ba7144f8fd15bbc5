package plan

import "github.com/stepline/stepline/shared/pipeline"

// DetailType is the detail-type of Stepline trigger events on EventBridge.
const DetailType = "Stepline Trigger"

// Top-level keys of the normalized trigger; any other trigger.match key
// names a label.
var topLevelKeys = map[string]bool{"severity": true, "summary": true}

// Target is what an EventBridge rule starts.
type Target int

// Targets.
const (
	// TargetStateMachine starts the pipeline's state machine with
	// {"trigger": <detail>}.
	TargetStateMachine Target = iota
	// TargetIngest invokes the ingest function with {"pipeline": <name>,
	// "trigger": <detail>, "event": {"id", "source", "time"}}; it applies
	// the whole trigger.match and deduplication, then starts the run.
	TargetIngest
)

func (t Target) String() string {
	if t == TargetIngest {
		return "ingest"
	}
	return "state machine"
}

// Rule is one EventBridge rule of a pipeline.
type Rule struct {
	ID      string         // construct id, unique within the pipeline
	Pattern map[string]any // the event pattern, as JSON
	Target  Target
}

// Trigger is a pipeline's trigger.match compiled for EventBridge.
type Trigger struct {
	// Pattern matches the events the trigger accepts: exactly when Exact,
	// else a superset.
	Pattern map[string]any
	// Exact reports whether the pattern decides the match alone.
	Exact bool
	// Inexact lists the conditions left to the ingest function, as
	// "key op", in file order.
	Inexact []string
	// Dedup reports whether triggered runs are deduplicated.
	Dedup bool
}

// NewTrigger compiles trigger.match into an event pattern. See the package
// documentation for what is exact.
func NewTrigger(t *pipeline.Trigger) *Trigger {
	out := &Trigger{
		Pattern: map[string]any{"detail-type": []any{DetailType}},
		Exact:   true,
		Dedup:   t.Dedup == nil || t.Dedup.Enabled == nil || *t.Dedup.Enabled,
	}
	explicit := false
	for _, m := range t.Match {
		if m.Field == "pipeline" {
			// Matching only applies to events that name no pipeline, so
			// this condition sees "": the ingest function decides it.
			explicit = true
			out.Exact = false
			out.Inexact = append(out.Inexact, m.Field+" "+m.Op)
			continue
		}
		filter, exact := condition(m)
		if !exact {
			out.Exact = false
			out.Inexact = append(out.Inexact, m.Field+" "+m.Op)
		}
		if filter == nil {
			continue
		}
		switch {
		case m.Field == "source":
			out.Pattern["source"] = filter
		case topLevelKeys[m.Field]:
			detail(out.Pattern)[m.Field] = filter
		default:
			d := detail(out.Pattern)
			labels, ok := d["labels"].(map[string]any)
			if !ok {
				labels = map[string]any{}
				d["labels"] = labels
			}
			labels[m.Field] = filter
		}
	}
	if !explicit {
		// An event that names its pipeline is routed by name alone.
		detail(out.Pattern)["pipeline"] = unnamed()
	}
	return out
}

// unnamed matches a field that is absent or empty: an event that names no
// pipeline, or carries no fingerprint.
func unnamed() []any { return []any{"", map[string]any{"exists": false}} }

// ExplicitPattern matches the trigger events that name their pipeline in
// detail.pipeline; they go to the ingest function, which routes them by
// that name alone, as the webhook does.
func ExplicitPattern() map[string]any {
	return map[string]any{
		"detail-type": []any{DetailType},
		"detail":      map[string]any{"pipeline": []any{map[string]any{"anything-but": ""}}},
	}
}

func detail(pattern map[string]any) map[string]any {
	d, ok := pattern["detail"].(map[string]any)
	if !ok {
		d = map[string]any{}
		pattern["detail"] = d
	}
	return d
}

// condition compiles one condition to the pattern's value array and says
// whether it is exact. A nil filter adds nothing to the pattern.
func condition(m pipeline.Match) ([]any, bool) {
	switch m.Op {
	case "eq":
		if s, ok := m.Value.(string); ok {
			return []any{s}, true
		}
	case "in":
		if ss, ok := stringList(m.Value); ok && len(ss) > 0 {
			return ss, true
		}
	case "ne":
		if s, ok := m.Value.(string); ok {
			return []any{map[string]any{"anything-but": s}}, true
		}
	case "not_in":
		if ss, ok := stringList(m.Value); ok {
			if len(ss) == 0 {
				return []any{map[string]any{"exists": true}}, true
			}
			return []any{map[string]any{"anything-but": ss}}, true
		}
	}
	if m.Field == "source" {
		return nil, false // every event has a source
	}
	return []any{map[string]any{"exists": true}}, false
}

// stringList returns v's elements when v is a list of strings.
func stringList(v any) ([]any, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range list {
		if _, ok := e.(string); !ok {
			return nil, false
		}
	}
	return list, true
}

// Rules returns the EventBridge rules of the trigger:
//
//   - exact, without dedup: one rule, to the state machine;
//   - exact, with dedup: events without detail.fingerprint to the state
//     machine, events with one to the ingest function;
//   - otherwise: one rule, to the ingest function.
func (t *Trigger) Rules() []Rule {
	switch {
	case !t.Exact:
		return []Rule{{ID: "Trigger", Pattern: t.Pattern, Target: TargetIngest}}
	case !t.Dedup:
		return []Rule{{ID: "Trigger", Pattern: t.Pattern, Target: TargetStateMachine}}
	}
	return []Rule{
		{ID: "Trigger", Pattern: withFingerprint(t.Pattern, false), Target: TargetStateMachine},
		{ID: "DedupTrigger", Pattern: withFingerprint(t.Pattern, true), Target: TargetIngest},
	}
}

// withFingerprint copies pattern with a condition on detail.fingerprint:
// present and not empty (the run is deduplicated), or absent or empty (it
// is not).
func withFingerprint(pattern map[string]any, present bool) map[string]any {
	out := make(map[string]any, len(pattern)+1)
	for k, v := range pattern {
		out[k] = v
	}
	d := map[string]any{}
	if old, ok := pattern["detail"].(map[string]any); ok {
		for k, v := range old {
			d[k] = v
		}
	}
	if present {
		d["fingerprint"] = []any{map[string]any{"anything-but": ""}}
	} else {
		d["fingerprint"] = unnamed()
	}
	out["detail"] = d
	return out
}
