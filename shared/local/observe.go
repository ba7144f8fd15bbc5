package local

import (
	"context"
	"net/http"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// startRunSpan starts the root span of one drive of a run: "run
// <pipeline>" when it starts, "resume <pipeline>" when a resume or a
// decision drives it on (each drive is a trace of its own; the run ID
// joins them).
func startRunSpan(ctx context.Context, verb, pipeline, runID string) (context.Context, oteltrace.Span) {
	ctx, span := telemetry.Start(ctx, verb, oteltrace.SpanKindInternal)
	if span.IsRecording() {
		span.SetName(verb + " " + pipeline)
		span.SetAttributes(telemetry.Pipeline.String(pipeline), telemetry.RunID.String(runID))
	}
	return ctx, span
}

// endRunSpan ends a run's span with where the run stands.
func endRunSpan(span oteltrace.Span, o Outcome, err error) {
	if span.IsRecording() && o.Status != "" {
		span.SetAttributes(telemetry.Status.String(string(o.Status)))
	}
	telemetry.End(span, err)
}

// driving is the number of runs this Runner drives now
// (stepline_runs_in_progress).
func (r *Runner) driving() int {
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	return len(r.claims)
}

// decided is the stored decision a task.Decision's word stands for.
func decided(d string) string {
	if d == task.Reject {
		return string(store.DecisionRejected)
	}
	return string(store.DecisionApproved)
}

// MetricsHandler serves the Runner's Prometheus metrics (package
// telemetry/prom): its runs, steps and approvals since it opened.
func (r *Runner) MetricsHandler() http.Handler { return r.metrics.Handler() }

// serveMetrics answers GET /metrics. The metrics count every team's runs,
// so with tokens configured only the admin token reads them (as it alone
// may reload); without tokens anyone may, as for every route then.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, c caller) {
	if len(s.tokens) > 0 && !c.all {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden: only the admin token may read the metrics"})
		return
	}
	s.runner.MetricsHandler().ServeHTTP(w, r)
}
