package metrics

import (
	"bytes"
	"encoding/json"
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
