// Package metrics writes CloudWatch metrics in the embedded metric format:
// one JSON log line per observation, which CloudWatch Logs turns into
// metrics without an API call. The stack's dashboards and alarms read them.
package metrics

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// Names of the metrics Stepline emits, and their dimensions.
const (
	Namespace      = "Stepline"
	Runs           = "Runs"           // Pipeline, Status: a run ended
	StepConfidence = "StepConfidence" // Pipeline, Step: a step's effective confidence
	InputTokens    = "InputTokens"    // Pipeline
	OutputTokens   = "OutputTokens"   // Pipeline
	CostUSD        = "CostUSD"        // Pipeline
	Steps          = "Steps"          // Pipeline: a step attempt was recorded
	StepDuration   = "StepDuration"   // Pipeline: a recorded attempt's duration (Milliseconds)
	// InputTokens, OutputTokens, CostUSD, Steps and StepDuration are also
	// under Pipeline, Executor, Model for the attempts of a model step.

	// TaskErrors counts the step function's failed Tasks (Pipeline; and
	// Function alone, for one total): every error it returns except a
	// run-ending answer (fault.RunEnded), which the Lambda service counts
	// among the function's Errors although nothing failed.
	TaskErrors = "TaskErrors"
)

// FunctionStep is the Function dimension's value of the step function's
// metrics.
const FunctionStep = "step"

// EMF writes embedded-metric-format lines. Safe for concurrent use.
type EMF struct {
	W         io.Writer
	Namespace string // Namespace when empty
	Now       func() time.Time

	mu sync.Mutex
}

// Metric is one value and its unit (Count, None, ...).
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Put writes one line holding the metrics under one set of dimensions.
func (e *EMF) Put(dims map[string]string, ms ...Metric) error {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return e.PutSets(dims, [][]string{keys}, ms...)
}

// PutSets writes one line holding the metrics under each of sets, lists of
// names of dims: CloudWatch keeps one metric per set, so a line can add
// finer dimensions to a metric and leave the coarser one as it was.
func (e *EMF) PutSets(dims map[string]string, sets [][]string, ms ...Metric) error {
	if len(ms) == 0 {
		return nil
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	ns := e.Namespace
	if ns == "" {
		ns = Namespace
	}
	doc := map[string]any{}
	for k, v := range dims {
		doc[k] = v
	}
	defs := make([]map[string]string, len(ms))
	for i, m := range ms {
		defs[i] = map[string]string{"Name": m.Name, "Unit": m.Unit}
		doc[m.Name] = m.Value
	}
	doc["_aws"] = map[string]any{
		"Timestamp": now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  ns,
			"Dimensions": sets,
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.W.Write(append(b, '\n'))
	return err
}
