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
