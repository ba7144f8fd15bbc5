package steprun

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stepline/stepline/shared/task"
)

// TestEndTask pins a Task span's name and attributes: "<mode> <step>", a
// branch under its group's name, a join under the group's, a fan-out item
// under the group's name with its index as the step; the attempt only
// when there is one, the confidence only when the output has one.
func TestEndTask(t *testing.T) {
	type want struct {
		name  string
		attrs map[string]any
	}
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"stepline.pipeline": "p", "stepline.run.id": "run-1"}
		maps.Copy(m, extra)
		return m
	}
	tests := []struct {
		label string
		req   task.Request
		resp  task.Response
		err   error
		want  want
	}{
		{"a step, first attempt, with a confidence",
			task.Request{Mode: task.ModeStep, Step: json.RawMessage(`{"name":"triage"}`)},
			task.Response{Status: task.StatusCompleted, Output: json.RawMessage(`{"confidence":0.8}`)}, nil,
			want{"step triage", base(map[string]any{"stepline.step": "triage", "stepline.task.mode": "step", "stepline.status": "completed", "stepline.confidence": 0.8})}},
		{"a retried step without a confidence",
			task.Request{Mode: task.ModeStep, Attempt: 2, Step: json.RawMessage(`{"name":"triage"}`)},
			task.Response{Status: task.StatusFailed, Output: json.RawMessage(`{"summary":"x"}`)}, errors.New("boom"),
			want{"step triage", base(map[string]any{"stepline.step": "triage", "stepline.task.mode": "step", "stepline.status": "failed", "stepline.attempt": int64(2)})}},
		{"attempt 1 is an attempt",
			task.Request{Mode: task.ModeStep, Attempt: 1, Step: json.RawMessage(`{"name":"a"}`)},
			task.Response{Status: task.StatusCompleted}, nil,
			want{"step a", base(map[string]any{"stepline.step": "a", "stepline.task.mode": "step", "stepline.status": "completed", "stepline.attempt": int64(1)})}},
		{"a branch of a group",
			task.Request{Mode: task.ModeBranch, Group: "checks", Step: json.RawMessage(`{"name":"lint"}`)},
			task.Response{Status: task.StatusCompleted, Output: json.RawMessage(`{"confidence":1}`)}, nil,
			want{"branch checks/lint", base(map[string]any{"stepline.step": "checks/lint", "stepline.task.mode": "branch", "stepline.status": "completed", "stepline.confidence": 1.0})}},
		{"a join keeps the group's name",
			task.Request{Mode: task.ModeJoin, Group: "checks", Step: json.RawMessage(`{"name":"checks"}`)},
			task.Response{Status: task.StatusEscalated}, nil,
			want{"join checks", base(map[string]any{"stepline.step": "checks", "stepline.task.mode": "join", "stepline.status": "escalated"})}},
		{"a join of a fan-out is not an item",
			task.Request{Mode: task.ModeJoin, Group: "scan", Total: 3, Step: json.RawMessage(`{"name":"scan"}`)},
			task.Response{Status: task.StatusCompleted}, nil,
			want{"join scan", base(map[string]any{"stepline.step": "scan", "stepline.task.mode": "join", "stepline.status": "completed"})}},
		{"a fan-out item",
			task.Request{Mode: task.ModeBranch, Group: "scan", Total: 3, Index: 1, Step: json.RawMessage(`{"name":"scan"}`)},
			task.Response{Status: task.StatusCompleted}, nil,
			want{"branch scan", base(map[string]any{"stepline.step": "scan/1", "stepline.task.mode": "branch", "stepline.status": "completed", "stepline.item.index": int64(1)})}},
		{"a step without a name keeps the span's name",
			task.Request{Mode: task.ModeStep, Step: json.RawMessage(`{}`)},
			task.Response{Status: task.StatusCompleted}, nil,
			want{"task", base(map[string]any{"stepline.step": "", "stepline.task.mode": "step", "stepline.status": "completed"})}},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			tt.req.Pipeline.Name, tt.req.Run.ID = "p", "run-1"
			_, span := tp.Tracer("t").Start(t.Context(), "task")
			endTask(span, tt.req, tt.resp, tt.err)
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans ended, want 1", len(spans))
			}
			s := spans[0]
			if s.Name() != tt.want.name {
				t.Errorf("name %q, want %q", s.Name(), tt.want.name)
			}
			if got := attrMap(s.Attributes()); !maps.Equal(got, tt.want.attrs) {
				t.Errorf("attributes %v, want %v", got, tt.want.attrs)
			}
			if failed := s.Status().Code == codes.Error; failed != (tt.err != nil) {
				t.Errorf("status %v with error %v", s.Status(), tt.err)
			}
		})
	}
}

// TestEndVerify: a verifier's span holds its verdict and the effective
// confidence it left, or a failure status when it gave none.
func TestEndVerify(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	req := &task.Request{Pipeline: task.Pipeline{Name: "p"}, Run: task.Run{ID: "run-1"}}
	v := 0.4
	_, span := tp.Tracer("t").Start(t.Context(), "verify")
	endVerify(span, req, "triage", &result{verifier: &v, effective: 0.4})
	_, span = tp.Tracer("t").Start(t.Context(), "verify")
	endVerify(span, req, "triage", &result{effective: 0.9})
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	wants := []map[string]any{
		{"stepline.pipeline": "p", "stepline.run.id": "run-1", "stepline.step": "triage", "stepline.confidence": 0.4, "stepline.confidence.effective": 0.4},
		{"stepline.pipeline": "p", "stepline.run.id": "run-1", "stepline.step": "triage", "stepline.status": FlagVerifierFailed},
	}
	for i, w := range wants {
		if got := attrMap(spans[i].Attributes()); !maps.Equal(got, w) {
			t.Errorf("span %d: attributes %v, want %v", i, got, w)
		}
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}
