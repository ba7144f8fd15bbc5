// Package metrics writes CloudWatch metrics in the embedded metric format:
// one JSON log line per observation, which CloudWatch Logs turns into
// metrics without an API call. The stack's dashboards and alarms read them.
package metrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
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
// sorted, '<', '>' and '&' escaped), written by hand: the step function
// writes one at its first failed Task or ended run, where encoding/json
// would first build its encoders for the document's types (about a tenth
// of a millisecond of a cold start). A value that is NaN or infinite is
// refused and nothing written, as encoding/json refuses it.
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

// awsKey is the member of an EMF line that declares its metrics.
const awsKey = "_aws"

// member is one top-level member of a line: a dimension's value, a
// metric's value, or the declaration (awsKey).
type member struct {
	key    string
	str    string
	num    float64
	metric bool
}

// appendLine appends the line of dims, sets and ms to dst, newline
// included. As in the document it stands for, a metric's value replaces a
// dimension of the same name, a later metric an earlier one of the same
// name, and the declaration any member named awsKey.
func appendLine(dst []byte, dims map[string]string, sets [][]string, ms []Metric, ns string, millis int64) ([]byte, error) {
	members := make([]member, 0, len(dims)+len(ms)+1)
	for k, v := range dims {
		if k != awsKey && !named(ms, k) {
			members = append(members, member{key: k, str: v})
		}
	}
	for i, m := range ms {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("metric %q: %v is not a JSON number", m.Name, m.Value)
		}
		if m.Name != awsKey && !named(ms[i+1:], m.Name) {
			members = append(members, member{key: m.Name, num: m.Value, metric: true})
		}
	}
	members = append(members, member{key: awsKey})
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, m.key, true)
		dst = append(dst, ':')
		switch {
		case m.key == awsKey:
			dst = appendDeclaration(dst, sets, ms, ns, millis)
		case m.metric:
			dst = appendNumber(dst, m.num)
		default:
			dst = jsonstr.Append(dst, m.str, true)
		}
	}
	return append(dst, '}', '\n'), nil
}

// appendNumber appends f as encoding/json writes it: a whole number from
// 0 to 2^53 (a count, the usual value) as the integer it is, which
// spares a cold process strconv's shortest float formatting (its first
// use is about as long as the rest of the line), anything else as
// jsonstr.AppendFloat writes it.
func appendNumber(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 && !math.Signbit(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return jsonstr.AppendFloat(dst, f)
}

// named reports whether a metric of ms is called name.
func named(ms []Metric, name string) bool {
	return slices.ContainsFunc(ms, func(m Metric) bool { return m.Name == name })
}

// appendDeclaration appends the value of awsKey: the timestamp and the
// metrics' names and units under the dimension sets, in the namespace.
func appendDeclaration(dst []byte, sets [][]string, ms []Metric, ns string, millis int64) []byte {
	dst = append(dst, `{"CloudWatchMetrics":[{"Dimensions":`...)
	dst = appendLists(dst, sets)
	dst = append(dst, `,"Metrics":[`...)
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"Name":`...)
		dst = jsonstr.Append(dst, m.Name, true)
		dst = append(dst, `,"Unit":`...)
		dst = jsonstr.Append(dst, m.Unit, true)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"Namespace":`...)
	dst = jsonstr.Append(dst, ns, true)
	dst = append(dst, `}],"Timestamp":`...)
	dst = strconv.AppendInt(dst, millis, 10)
	return append(dst, '}')
}

// appendLists appends lists as a JSON array of arrays of strings, a nil
// list (or lists) as null.
func appendLists(dst []byte, lists [][]string) []byte {
	if lists == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, l := range lists {
		if i > 0 {
			dst = append(dst, ',')
		}
		if l == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst = append(dst, '[')
		for j, s := range l {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, s, true)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}
