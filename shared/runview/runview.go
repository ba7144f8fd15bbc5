// Package runview is how the HTTP APIs answer run queries — stepline
// serve's and the ingest function's on AWS alike: the query parameters
// of GET /runs with their bounds, and the JSON of a run and of a step
// record, which carry Stepline's field names and, beside them, the
// reference API's names for the same facts (pipeline_name, triggered_at,
// normalised_context; parsed_output, executed_at), so that scripts
// written against either read them.
package runview

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/stepline/stepline/shared/store"
)

// Bounds of GET /runs, as the reference API has them.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// ErrQuery: a query parameter out of its bounds (answer 400).
var ErrQuery = errors.New("bad query")

// Filter reads GET /runs's query: pipeline, status, team, stage, limit
// (1..MaxLimit, default DefaultLimit) and offset (0..store.MaxRunOffset).
// Errors wrap ErrQuery or store.ErrInvalid (an unknown status or stage).
func Filter(q url.Values) (store.RunFilter, error) {
	limit, ok := intParam(q.Get("limit"), DefaultLimit, 1, MaxLimit)
	if !ok {
		return store.RunFilter{}, fmt.Errorf("%w: limit=%q: want a whole number from 1 to %d", ErrQuery, q.Get("limit"), MaxLimit)
	}
	offset, ok := intParam(q.Get("offset"), 0, 0, store.MaxRunOffset)
	if !ok {
		return store.RunFilter{}, fmt.Errorf("%w: offset=%q: want a whole number from 0 to %d", ErrQuery, q.Get("offset"), store.MaxRunOffset)
	}
	f := store.RunFilter{Pipeline: q.Get("pipeline"), Status: store.RunStatus(q.Get("status")), Team: q.Get("team"),
		Stage: q.Get("stage"), Limit: limit, Offset: offset}
	if _, err := store.NormalizeRunFilter(f); err != nil {
		return store.RunFilter{}, err
	}
	return f, nil
}

func intParam(v string, def, lo, hi int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// List is the answer of GET /runs.
func List(runs []store.Run, f store.RunFilter) map[string]any {
	out := make([]map[string]any, len(runs))
	for i, r := range runs {
		out[i] = Run(r)
	}
	return map[string]any{"runs": out, "limit": f.Limit, "offset": f.Offset}
}

// Detail is the answer of GET /runs/{id}: the run's view, its record
// under "run" and its steps' views under "steps".
func Detail(run store.Run, steps []store.StepRecord) map[string]any {
	views := make([]map[string]any, len(steps))
	for i, rec := range steps {
		views[i] = Step(rec)
	}
	out := Run(run)
	out["run"], out["steps"] = run, views
	return out
}

// Run is a run as the APIs answer it.
func Run(run store.Run) map[string]any {
	m := toMap(run)
	m["pipeline_name"] = run.Pipeline
	m["triggered_at"] = run.StartedAt
	if _, ok := m["completed_at"]; !ok {
		m["completed_at"] = nil
	}
	if len(run.Trigger) > 0 {
		m["normalised_context"] = run.Trigger
	}
	return m
}

// Step is a step record as the APIs answer it. Besides the record's
// fields it carries the reference's: parsed_output, executed_at, and,
// from the trust report of a gated step, grounding_score,
// deterministic_passed and verifier_mode (null when the step has none);
// artifacts, the output's artifacts field.
func Step(rec store.StepRecord) map[string]any {
	m := toMap(rec)
	if len(rec.Output) > 0 {
		m["parsed_output"] = rec.Output
		var out struct {
			Artifacts json.RawMessage `json:"artifacts"`
		}
		if json.Unmarshal(rec.Output, &out) == nil && len(out.Artifacts) > 0 {
			m["artifacts"] = out.Artifacts
		}
	}
	m["executed_at"] = rec.FinishedAt
	m["grounding_score"], m["deterministic_passed"], m["verifier_mode"] = nil, nil, nil
	if t := rec.Trust; t != nil {
		if t.Signals.G != nil {
			m["grounding_score"] = *t.Signals.G
		}
		if t.Signals.D != nil {
			m["deterministic_passed"] = *t.Signals.D
		}
		if t.Signals.VMode != "" {
			m["verifier_mode"] = t.Signals.VMode
		}
	}
	return m
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}
