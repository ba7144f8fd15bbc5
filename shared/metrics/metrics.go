// Package metrics writes CloudWatch metrics in the embedded metric format:
// one JSON log line per observation, which CloudWatch Logs turns into
// metrics without an API call. The stack's dashboards and alarms read them.
package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/stepline/stepline/shared/internal/jsonstr"
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
//
// The line is the JSON object encoding/json writes for the document (keys
// sorted, '<', '>' and '&' escaped), written without reflection
// (jsonstr.AppendValue): the step function writes one at its first failed
// Task or ended run, where encoding/json would first build its encoders
// for the document's types (about a tenth of a millisecond of a cold
// start). A value that is NaN or infinite is refused and nothing written,
// as encoding/json refuses it.
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
	b, err := appendLine(nil, dims, sets, ms, ns, now().UnixMilli())
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.W.Write(b)
	return err
}

// appendLine appends the line of dims, sets and ms to dst, newline
// included: the document as before, a metric's value replacing a
// dimension of the same name, a later metric an earlier one, and the
// declaration any member named "_aws", written by jsonstr.AppendValue
// (encoding/json's text for the values it decodes into an any). A whole
// count is written by strconv.AppendInt, the same text, sparing a cold
// process strconv's shortest float formatting (its first use is about as
// long as the rest of the line).
func appendLine(dst []byte, dims map[string]string, sets [][]string, ms []Metric, ns string, millis int64) ([]byte, error) {
	doc := make(map[string]any, len(dims)+len(ms)+1)
	for k, v := range dims {
		doc[k] = v
	}
	defs := make([]any, len(ms))
	for i, m := range ms {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("metric %q: %v is not a JSON number", m.Name, m.Value)
		}
		defs[i] = map[string]any{"Name": m.Name, "Unit": m.Unit}
		doc[m.Name] = number(m.Value)
	}
	var lists []any
	if sets != nil {
		lists = make([]any, len(sets))
		for i, l := range sets {
			if l != nil {
				items := make([]any, len(l))
				for j, d := range l {
					items[j] = d
				}
				lists[i] = items
			}
		}
	}
	doc["_aws"] = map[string]any{
		"Timestamp": millis,
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  ns,
			"Dimensions": lists,
			"Metrics":    defs,
		}},
	}
	dst, err := jsonstr.AppendValue(dst, doc, true, func(dst []byte, v any) ([]byte, error) {
		if n, ok := v.(int64); ok {
			return strconv.AppendInt(dst, n, 10), nil
		}
		return nil, fmt.Errorf("EMF line: %T %v is not a JSON value", v, v)
	})
	if err != nil {
		return nil, err
	}
	return append(dst, '\n'), nil
}

// number is f as the line holds it: a whole number from 0 to 2^53 (a
// count, the usual value) as an int64, anything else as it is.
func number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 && !math.Signbit(f) {
		return int64(f)
	}
	return f
}
