package steprun

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/task"
)

func TestRecordedStepsEmitMetrics(t *testing.T) {
	e := newEnv(t, `triage: ['{"confidence": 0.83, "summary": "ok", "next_step_context": ""}']`+"\n")
	var b bytes.Buffer
	e.h.Metrics = &metrics.EMF{W: &b}
	req := newRequest(t, task.ModeStep, seqStep("triage", "look"))
	if _, err := e.h.Respond(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"StepConfidence":0.83`) || !strings.Contains(lines[0], `"Step":"triage"`) ||
		!strings.Contains(lines[1], `"InputTokens":0`) || !strings.Contains(lines[1], `"Pipeline":"demo"`) {
		t.Errorf("metrics:\n%s", b.String())
	}
}

// TestModelStepMetricsByExecutorAndModel: a model step's usage line also
// declares its metrics by executor and model, beside the pipeline-only
// set the dashboards read, and counts the attempt with its duration.
func TestModelStepMetricsByExecutorAndModel(t *testing.T) {
	e := newEnv(t, `triage: ['{"confidence": 0.83, "summary": "ok", "next_step_context": ""}']`+"\n")
	var b bytes.Buffer
	e.h.Metrics = &metrics.EMF{W: &b}
	if _, err := e.h.Respond(context.Background(), newRequest(t, task.ModeStep, seqStep("triage", "look"))); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("metrics:\n%s", b.String())
	}
	for _, want := range []string{`"Dimensions":[["Pipeline"],["Pipeline","Executor","Model"]]`, `"Executor":"scripted"`, `"Model":"scripted"`,
		`"Steps":1`, `{"Name":"StepDuration","Unit":"Milliseconds"}`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("usage line lacks %s:\n%s", want, lines[1])
		}
	}
}
