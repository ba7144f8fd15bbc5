package steprun

import (
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// Observer receives each step record a Task writes, once written: every
// attempt's outcome, not the waiting record of a human step, and not a
// record a retried Task finds written before. The local runner counts
// them in its Prometheus metrics (package telemetry/prom).
type Observer interface {
	ObserveStep(pipeline string, rec store.StepRecord)
}

type observerKey struct{}

// WithObserver returns ctx carrying o: Handle calls it for the records of
// the Task run with that context. It travels in the context, as an
// httptrace.ClientTrace does, because whoever drives a run (the local
// runner) is not whoever built the Handler.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observe hands rec to ctx's Observer, if any.
func observe(ctx context.Context, pipeline string, rec store.StepRecord) {
	if o, _ := ctx.Value(observerKey{}).(Observer); o != nil {
		o.ObserveStep(pipeline, rec)
	}
}

// endTask ends a Task's span: named "<mode> <step>" ("step triage",
// "branch checks/lint", "join checks"), with the run, the step and the
// outcome as attributes. A span that is not recorded (tracing off) is only
// ended: nothing is decoded for it.
func endTask(span trace.Span, req task.Request, resp task.Response, err error) {
	if span.IsRecording() {
		var st struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Step, &st)
		name := st.Name
		if req.Group != "" && req.Mode != task.ModeJoin && name != req.Group {
			name = req.Group + "/" + name
		}
		if name != "" {
			span.SetName(req.Mode + " " + name)
		}
		if req.Total > 0 && req.Group != "" && req.Mode != task.ModeJoin {
			// A fan-out item: its span keeps the group's name (span names
			// stay few), its step is the item's record name.
			name = req.Group + "/" + strconv.Itoa(req.Index)
		}
		attrs := []attribute.KeyValue{
			telemetry.Pipeline.String(req.Pipeline.Name),
			telemetry.RunID.String(req.Run.ID),
			telemetry.Step.String(name),
			telemetry.Mode.String(req.Mode),
			telemetry.Status.String(resp.Status),
		}
		if req.Attempt > 0 {
			attrs = append(attrs, telemetry.Attempt.Int(req.Attempt))
		}
		if req.Total > 0 && req.Mode != task.ModeJoin { // a fan-out item
			attrs = append(attrs, telemetry.Item.Int(req.Index))
		}
		var out struct {
			Confidence *float64 `json:"confidence"`
		}
		if json.Unmarshal(resp.Output, &out) == nil && out.Confidence != nil {
			attrs = append(attrs, telemetry.Confidence.Float64(*out.Confidence))
		}
		span.SetAttributes(attrs...)
	}
	telemetry.End(span, err)
}

// endVerify ends a verifier's span: its verdict and the effective
// confidence it left, or its failure (a warning: the step goes on).
func endVerify(span trace.Span, req *task.Request, step string, res *result) {
	if span.IsRecording() {
		span.SetAttributes(telemetry.Pipeline.String(req.Pipeline.Name), telemetry.RunID.String(req.Run.ID), telemetry.Step.String(step))
		if res.verifier != nil {
			span.SetAttributes(telemetry.Confidence.Float64(*res.verifier), attribute.Float64("stepline.confidence.effective", res.effective))
		} else {
			span.SetAttributes(telemetry.Status.String(FlagVerifierFailed))
		}
	}
	span.End()
}
