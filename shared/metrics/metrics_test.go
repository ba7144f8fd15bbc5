package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPutWritesEmbeddedMetricFormat(t *testing.T) {
	var b bytes.Buffer
	e := &EMF{W: &b, Now: func() time.Time { return time.UnixMilli(1700000000000) }}
	if err := e.Put(map[string]string{"Pipeline": "p", "Step": "s"}, Metric{StepConfidence, "None", 0.8}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Pipeline, Step string
		Conf           float64 `json:"StepConfidence"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.AWS.CloudWatchMetrics[0]
	if doc.AWS.Timestamp != 1700000000000 || m.Namespace != "Stepline" || len(m.Dimensions[0]) != 2 ||
		m.Metrics[0].Name != StepConfidence || doc.Conf != 0.8 || doc.Pipeline != "p" || doc.Step != "s" {
		t.Errorf("document: %s", b.String())
	}
	if err := e.Put(nil); err != nil || b.Len() == 0 {
		t.Error("Put with no metrics must write nothing and succeed")
	}
}

// TestPutSetsKeepsEachDimensionSet: one line declares the metrics under
// every set, so the coarser metric a dashboard reads stays as it was.
func TestPutSetsKeepsEachDimensionSet(t *testing.T) {
	var b bytes.Buffer
	e := &EMF{W: &b}
	dims := map[string]string{"Pipeline": "p", "Executor": "gateway", "Model": "gpt-4o"}
	if err := e.PutSets(dims, [][]string{{"Pipeline"}, {"Pipeline", "Executor", "Model"}}, Metric{InputTokens, "Count", 12}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct{ Dimensions [][]string }
		} `json:"_aws"`
		Executor, Model string
		InputTokens     float64
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	ds := doc.AWS.CloudWatchMetrics[0].Dimensions
	if len(ds) != 2 || len(ds[0]) != 1 || len(ds[1]) != 3 || doc.Executor != "gateway" || doc.Model != "gpt-4o" || doc.InputTokens != 12 {
		t.Errorf("document: %s", b.String())
	}
}

// marshalLine is the line as encoding/json writes the document PutSets
// stands for: the oracle of the hand-written encoding.
func marshalLine(dims map[string]string, sets [][]string, ms []Metric, ns string, millis int64) ([]byte, error) {
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
		"Timestamp": millis,
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  ns,
			"Dimensions": sets,
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(doc)
	return append(b, '\n'), err
}

// TestPutSetsWritesWhatEncodingJSONWrites: the line is byte for byte the
// document as encoding/json marshals it, names that collide included.
func TestPutSetsWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		ns   string
		dims map[string]string
		sets [][]string
		ms   []Metric
	}{
		{"run ended", "", map[string]string{"Pipeline": "triage", "Status": "SUCCEEDED"}, [][]string{{"Pipeline", "Status"}, {"Status"}}, []Metric{{Runs, "Count", 1}}},
		{"task error", "Custom", map[string]string{"Pipeline": "p", "Function": FunctionStep}, [][]string{{"Pipeline"}, {"Function"}}, []Metric{{TaskErrors, "Count", 1}}},
		{"several metrics", "", map[string]string{"Pipeline": "p", "Executor": "gateway", "Model": "gpt-4o"}, [][]string{{"Pipeline"}, {"Pipeline", "Executor", "Model"}},
			[]Metric{{InputTokens, "Count", 1234}, {OutputTokens, "Count", 56}, {CostUSD, "None", 0.000123}, {StepDuration, "Milliseconds", 1.5e3}}},
		{"escaped strings", "ns<&>", map[string]string{"Pipe<line>": "a&b \"q\" \\ \n\t\x01 \u2028\u2029 é 日本", "bad": "\xff\xfe"}, [][]string{{"Pipe<line>", "bad"}}, []Metric{{"m&m", "Co<unt>", 2}}},
		{"numbers", "", nil, nil, []Metric{{"zero", "None", 0}, {"negzero", "None", math.Copysign(0, -1)}, {"tiny", "None", 1e-7}, {"small", "None", 1e-6}, {"huge", "None", 1e21}, {"big", "None", 1e20}, {"neg", "None", -3.25}, {"max", "None", math.MaxFloat64}, {"min", "None", math.SmallestNonzeroFloat64},
			{"whole below 2^53", "Count", 1<<53 - 1}, {"2^53", "Count", 1 << 53}, {"above 2^53", "Count", 1<<53 + 2}, {"whole negative", "None", -7}, {"half", "None", 0.5}, {"1e20", "None", 1e20}}},
		{"dimension named as a metric", "", map[string]string{"Steps": "dim", "Pipeline": "p"}, [][]string{{"Pipeline"}}, []Metric{{Steps, "Count", 3}}},
		{"metric named twice", "", map[string]string{"Pipeline": "p"}, [][]string{{"Pipeline"}}, []Metric{{Steps, "Count", 3}, {Steps, "None", 4}}},
		{"members named _aws", "", map[string]string{"_aws": "dim", "Z": "z", "a": "lower"}, [][]string{{"_aws"}}, []Metric{{"_aws", "Count", 1}, {"_b", "Count", 2}}},
		{"nil and empty sets", "", map[string]string{}, [][]string{nil, {}}, []Metric{{Runs, "Count", 1}}},
		{"no sets", "", map[string]string{"Pipeline": "p"}, [][]string{}, []Metric{{Runs, "Count", 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			e := &EMF{W: &b, Namespace: tc.ns, Now: func() time.Time { return time.UnixMilli(1700000000123) }}
			if err := e.PutSets(tc.dims, tc.sets, tc.ms...); err != nil {
				t.Fatal(err)
			}
			ns := tc.ns
			if ns == "" {
				ns = Namespace
			}
			want, err := marshalLine(tc.dims, tc.sets, tc.ms, ns, 1700000000123)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("line:\n%s\nencoding/json:\n%s", b.String(), want)
			}
		})
	}
}

// TestPutSetsRefusesWhatIsNotANumber: a NaN or infinite value is refused,
// as encoding/json refuses it, and nothing is written.
func TestPutSetsRefusesWhatIsNotANumber(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		var b bytes.Buffer
		e := &EMF{W: &b}
		err := e.PutSets(map[string]string{"Pipeline": "p"}, [][]string{{"Pipeline"}}, Metric{Runs, "Count", 1}, Metric{CostUSD, "None", v})
		if err == nil || !strings.Contains(err.Error(), `metric "CostUSD"`) {
			t.Errorf("%v: error %v, want one naming the metric", v, err)
		}
		if b.Len() != 0 {
			t.Errorf("%v: wrote %q", v, b.String())
		}
	}
}

func FuzzPutSets(f *testing.F) {
	f.Add("Pipeline", "p<&>", "Steps", "Count", 1.5, int64(1700000000000))
	f.Add("_aws", "\xff", "_aws", "", 1e-7, int64(-1))
	f.Add("Steps", "x", "Steps", "None", 1e21, int64(0))
	f.Fuzz(func(t *testing.T, dim, value, name, unit string, v float64, millis int64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		dims := map[string]string{dim: value, "Pipeline": "p"}
		sets := [][]string{{dim}, {"Pipeline", dim}}
		ms := []Metric{{name, unit, v}, {Runs, "Count", 1}}
		var b bytes.Buffer
		e := &EMF{W: &b, Now: func() time.Time { return time.UnixMilli(millis) }}
		if err := e.PutSets(dims, sets, ms...); err != nil {
			t.Fatal(err)
		}
		want, err := marshalLine(dims, sets, ms, Namespace, millis)
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != string(want) {
			t.Errorf("line:\n%s\nencoding/json:\n%s", b.String(), want)
		}
	})
}
