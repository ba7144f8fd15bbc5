// Package prom keeps Stepline's Prometheus metrics and serves them in the
// text exposition format (stepline serve's GET /metrics).
//
// Every series is labelled by names a pipeline's author chose (pipeline,
// step, executor, agent, model), never by a run ID, a team or anything an
// event carries, so the number of series grows with the pipelines, not
// with the runs. A fan-out item's records ("scan/0", "scan/1/check")
// count under one step ("scan/#", "scan/#/check"), and each label keeps
// at most MaxLabelValues distinct values (more count as "other"), so that
// a model name a gateway reports, or a templated one, cannot grow the
// series without bound.
//
// Metrics (all under the namespace "stepline"):
//
//	stepline_runs_total{pipeline,status}                          counter   runs that ended (completed, stopped, escalated, aborted, failed)
//	stepline_runs_in_progress                                     gauge     runs this process is driving now
//	stepline_steps_total{pipeline,step,executor,agent,model,status} counter recorded step attempts by outcome
//	stepline_step_duration_seconds{pipeline,step,executor}        histogram a recorded attempt's duration
//	stepline_tokens_total{pipeline,model,direction}               counter   model tokens (direction: input, output)
//	stepline_cost_usd_total{pipeline,model}                       counter   priced cost of the model calls
//	stepline_approvals_pending                                    gauge     human steps waiting for a decision (read at scrape)
//	stepline_approvals_decided_total{pipeline,decision}           counter   decisions: approved, rejected, expired
//	stepline_verifier_overrides_total{pipeline,step}              counter   attempts whose verifier lowered the confidence
//
// plus the Go runtime's and the process's standard collectors.
package prom

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stepline/stepline/shared/store"
)

// Limits on label values.
const (
	// MaxLabelValues is how many distinct values one label keeps; later
	// ones are counted as OtherValue.
	MaxLabelValues = 200
	// MaxLabelBytes cuts a label value.
	MaxLabelBytes = 128
	// OtherValue stands for the values past MaxLabelValues.
	OtherValue = "other"
	// PendingTimeout bounds the store query behind
	// stepline_approvals_pending at each scrape.
	PendingTimeout = 2 * time.Second
	// maxPending is the most pending approvals a scrape counts.
	maxPending = 100000
)

// DurationBuckets returns the step duration histogram's buckets, in seconds:
// from a scripted step to a long agent step.
func DurationBuckets() []float64 {
	return []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}
}

// Pending counts the approvals waiting for a decision (the store's
// PendingApprovals).
type Pending interface {
	PendingApprovals(ctx context.Context, limit int) ([]store.Approval, error)
}

// Metrics holds the collectors, in a registry of their own. Safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	runs, steps, tokens, cost, decided, overrides *prometheus.CounterVec
	duration                                      *prometheus.HistogramVec

	mu     sync.Mutex
	values map[string]map[string]bool // label → values kept
}

// New returns the metrics. inProgress reports the runs being driven now
// and pending the store the pending approvals are counted in; either may
// be nil (the gauge is then left out).
func New(inProgress func() int, pending Pending) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), values: map[string]map[string]bool{}}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "stepline", Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.runs = counter("runs_total", "Runs that ended, by pipeline and final status.", "pipeline", "status")
	m.steps = counter("steps_total", "Recorded step attempts, by pipeline, step, executor, agent, model and status.",
		"pipeline", "step", "executor", "agent", "model", "status")
	m.tokens = counter("tokens_total", "Model tokens of recorded step attempts, by pipeline, model and direction (input, output).",
		"pipeline", "model", "direction")
	m.cost = counter("cost_usd_total", "Priced cost in US dollars of recorded step attempts, by pipeline and model.", "pipeline", "model")
	m.decided = counter("approvals_decided_total", "Human step decisions, by pipeline and decision (approved, rejected, expired).",
		"pipeline", "decision")
	m.overrides = counter("verifier_overrides_total", "Recorded step attempts whose verifier lowered the primary confidence, by pipeline and step.",
		"pipeline", "step")
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "stepline", Name: "step_duration_seconds",
		Help: "Duration of recorded step attempts, by pipeline, step and executor.", Buckets: DurationBuckets()},
		[]string{"pipeline", "step", "executor"})
	m.reg.MustRegister(m.duration)
	if inProgress != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "stepline", Name: "runs_in_progress",
			Help: "Runs this process is driving now."}, func() float64 { return float64(inProgress()) }))
	}
	if pending != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "stepline", Name: "approvals_pending",
			Help: "Human steps waiting for a decision (-1 when the store could not be read)."}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), PendingTimeout)
			defer cancel()
			as, err := pending.PendingApprovals(ctx, maxPending)
			if err != nil {
				return -1
			}
			return float64(len(as))
		}))
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registry is the registry the collectors are in (tests gather it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RunEnded counts a run that ended with status. Other statuses (running,
// waiting) are not counted.
func (m *Metrics) RunEnded(pipeline string, status store.RunStatus) {
	if m == nil || !status.Terminal() {
		return
	}
	m.runs.WithLabelValues(m.label("pipeline", pipeline), string(status)).Inc()
}

// ApprovalDecided counts a human step's decision (approved, rejected,
// expired).
func (m *Metrics) ApprovalDecided(pipeline, decision string) {
	if m == nil {
		return
	}
	m.decided.WithLabelValues(m.label("pipeline", pipeline), m.label("decision", decision)).Inc()
}

// ObserveStep counts a recorded step attempt of pipeline: its outcome,
// duration, tokens, cost and whether its verifier overrode it. A waiting
// record (a human step before its decision) is not an outcome and is
// skipped.
func (m *Metrics) ObserveStep(pipeline string, rec store.StepRecord) {
	if m == nil || rec.Status == store.StepWaiting {
		return
	}
	p := m.label("pipeline", pipeline)
	step := m.label("step", stepLabel(rec.Name))
	exec := m.label("executor", rec.Executor)
	model := m.label("model", rec.Model)
	m.steps.WithLabelValues(p, step, exec, m.label("agent", rec.Agent), model, string(rec.Status)).Inc()
	if rec.DurationMS > 0 || !rec.FinishedAt.IsZero() {
		m.duration.WithLabelValues(p, step, exec).Observe(float64(rec.DurationMS) / 1000)
	}
	if rec.InputTokens > 0 {
		m.tokens.WithLabelValues(p, model, "input").Add(float64(rec.InputTokens))
	}
	if rec.OutputTokens > 0 {
		m.tokens.WithLabelValues(p, model, "output").Add(float64(rec.OutputTokens))
	}
	if rec.CostUSD != nil && *rec.CostUSD > 0 {
		m.cost.WithLabelValues(p, model).Add(*rec.CostUSD)
	}
	if rec.VerifierConfidence != nil && rec.PrimaryConfidence != nil && rec.EffectiveConfidence != nil &&
		*rec.EffectiveConfidence < *rec.PrimaryConfidence {
		m.overrides.WithLabelValues(p, step).Inc()
	}
}

// stepLabel folds the item indexes of fan-out records into "#".
func stepLabel(name string) string {
	if !strings.ContainsAny(name, "0123456789") {
		return name
	}
	parts := strings.Split(name, "/")
	for i, s := range parts {
		if i > 0 && s != "" && strings.Trim(s, "0123456789") == "" {
			parts[i] = "#"
		}
	}
	return strings.Join(parts, "/")
}

// label bounds a value of label name: cut to MaxLabelBytes (at a rune
// boundary), and OtherValue once the label has MaxLabelValues values.
func (m *Metrics) label(name, v string) string {
	if len(v) > MaxLabelBytes {
		v = strings.ToValidUTF8(v[:MaxLabelBytes], "")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.values[name]
	if seen == nil {
		seen = map[string]bool{}
		m.values[name] = seen
	}
	if seen[v] {
		return v
	}
	if len(seen) >= MaxLabelValues {
		return OtherValue
	}
	seen[v] = true
	return v
}
