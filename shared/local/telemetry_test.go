package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/telemetry"
)

// tracedPipeline has one of each traced thing: a step with a verifier, a
// parallel group, an agent step with a tool call, and a webhook step that
// calls hookURL over real HTTP.
func tracedPipeline(hookURL string) string {
	return `name: traced
steps:
  - name: triage
    executor: scripted
    verifier: {executor: scripted}
    confidence_threshold: 0.4
  - parallel:
      name: checks
      steps:
        - {name: lint, executor: scripted}
        - {name: unit, executor: scripted}
  - name: investigate
    executor: anthropic
    executor_config: {agent: investigator}
    prompt_template: "Why is {{ labels.service }} failing?"
  - name: hook
    executor: webhook
    executor_config: {url: "` + hookURL + `"}
`
}

const tracedResponses = `
triage: ['{"confidence": 0.9, "summary": "db", "next_step_context": ""}']
triage:verifier: ['{"confidence": 0.6, "summary": "plausible", "next_step_context": ""}']
lint: ['{"confidence": 0.95, "summary": "clean", "next_step_context": ""}']
unit: ['{"confidence": 0.85, "summary": "green", "next_step_context": ""}']
investigate:
  - {tool_calls: [{name: grafana.query, arguments: {expr: errors}}], input_tokens: 100, output_tokens: 10}
  - {reply: '{"confidence": 0.8, "summary": "pool exhausted", "next_step_context": ""}', input_tokens: 200, output_tokens: 20}
tool_results:
  grafana.query: ['{"errors": 0.08}']
`

// liveWebhooks answers webhook steps over the network (the live registry)
// and every other executor from the scripted one.
type liveWebhooks struct{ live, scripted *executor.Registry }

func (l liveWebhooks) Provider(c executor.Call) (llmoutput.Provider, error) {
	if c.Executor == executor.Webhook {
		return l.live.Provider(c)
	}
	return l.scripted.Provider(c)
}

// hookServer is a webhook endpoint that keeps the traceparent of each
// request and answers with an LLMOutput.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	parent []string
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.parent = append(h.parent, r.Header.Get("traceparent"))
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"confidence": 0.9, "summary": "hooked", "next_step_context": ""}`)
	}))
	t.Cleanup(h.Close)
	return h
}

// runTraced runs tracedPipeline once with scripted models and a live
// webhook, and returns the Runner and the run's outcome.
func runTraced(t *testing.T, hookURL string) (*Runner, Outcome) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"pipelines/p.yaml": tracedPipeline(hookURL)}
	for k, v := range agentProjectFiles {
		files[k] = v
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(tracedResponses))
	if err != nil {
		t.Fatal(err)
	}
	scripted := executor.NewRegistry(executor.Deps{Responses: responses})
	live := executor.NewRegistry(executor.Deps{HTTP: http.DefaultClient})
	ctx := context.Background()
	r, err := Open(ctx, Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: liveWebhooks{live, scripted}, Agents: scripted,
				Artifacts: steprun.Dir{Root: filepath.Join(dir, "state", "artifacts")}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o, err := r.Run(ctx, filepath.Join(dir, "pipelines", "p.yaml"), json.RawMessage(`{"source": "test", "labels": {"service": "checkout-api"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != store.RunCompleted {
		steps, _ := r.Store.ListSteps(ctx, o.RunID)
		t.Fatalf("run %s (%s), %d steps", o.Status, o.Reason, len(steps))
	}
	return r, o
}

// spanTree indexes recorded spans by ID.
type spanTree struct {
	spans []tracetest.SpanStub
	byID  map[string]tracetest.SpanStub
}

func newSpanTree(spans tracetest.SpanStubs) spanTree {
	t := spanTree{spans: spans, byID: map[string]tracetest.SpanStub{}}
	for _, s := range spans {
		t.byID[s.SpanContext.SpanID().String()] = s
	}
	return t
}

// parent is the name of s's parent span, "" for a root.
func (t spanTree) parent(s tracetest.SpanStub) string {
	if !s.Parent.IsValid() {
		return ""
	}
	p, ok := t.byID[s.Parent.SpanID().String()]
	if !ok {
		return "?"
	}
	return p.Name
}

// edges lists "parent > child" for every span, sorted, each once.
func (t spanTree) edges() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range t.spans {
		e := t.parent(s) + " > " + s.Name
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// named returns the spans named name.
func (t spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range t.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestRunTrace runs a pipeline with tracing on (an in-memory exporter)
// and checks the trace: one root span per run, a span per Task under it,
// the verifier, the agent's iterations, model and tool calls under their
// step, their attributes, and the webhook step's request carrying its
// span as traceparent.
func TestRunTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	restore := telemetry.Install(telemetry.NewProvider("stepline-test", sdktrace.WithSyncer(exp)))
	defer restore()
	hook := newHookServer(t)
	_, o := runTraced(t, hook.URL)
	tree := newSpanTree(exp.GetSpans())

	want := []string{
		" > run traced",
		"agent_iteration investigator > chat claude-sonnet-4-6",
		"agent_iteration investigator > execute_tool grafana.query",
		"branch checks/lint > chat scripted",
		"branch checks/unit > chat scripted",
		"run traced > branch checks/lint",
		"run traced > branch checks/unit",
		"run traced > join checks",
		"run traced > step hook",
		"run traced > step investigate",
		"run traced > step triage",
		"step hook > webhook",
		"step investigate > agent_iteration investigator",
		"step triage > chat scripted",
		"step triage > verify triage",
		"verify triage > chat scripted",
	}
	if got := tree.edges(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("span tree (parent > child):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One trace, one root.
	root := tree.named("run traced")
	if len(root) != 1 {
		t.Fatalf("%d root spans", len(root))
	}
	for _, s := range tree.spans {
		if s.SpanContext.TraceID() != root[0].SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, not the run's", s.Name, s.SpanContext.TraceID())
		}
	}
	if n := len(tree.named("agent_iteration investigator")); n != 2 {
		t.Errorf("%d agent iterations, want 2 (a tool call, then the answer)", n)
	}

	check := func(name string, want map[attribute.Key]any) {
		t.Helper()
		spans := tree.named(name)
		if len(spans) == 0 {
			t.Errorf("no span %q", name)
			return
		}
		got := attrs(spans[0])
		for k, v := range want {
			if g, ok := got[k]; !ok || fmt.Sprint(g.AsInterface()) != fmt.Sprint(v) {
				t.Errorf("span %q: %s = %v, want %v", name, k, g.AsInterface(), v)
			}
		}
	}
	check("run traced", map[attribute.Key]any{telemetry.Pipeline: "traced", telemetry.RunID: o.RunID, telemetry.Status: "completed"})
	check("step triage", map[attribute.Key]any{telemetry.Pipeline: "traced", telemetry.RunID: o.RunID, telemetry.Step: "triage",
		telemetry.Status: "completed", telemetry.Confidence: 0.6, telemetry.Mode: "step"})
	check("verify triage", map[attribute.Key]any{telemetry.Step: "triage", telemetry.Confidence: 0.6})
	check("branch checks/lint", map[attribute.Key]any{telemetry.Step: "checks/lint", telemetry.Confidence: 0.95, telemetry.Mode: "branch"})
	check("join checks", map[attribute.Key]any{telemetry.Step: "checks", telemetry.Status: "completed"})
	check("chat scripted", map[attribute.Key]any{telemetry.GenAIOperation: "chat", telemetry.GenAIProvider: "scripted",
		telemetry.GenAISystem: "scripted", telemetry.GenAIRequestModel: "scripted"})
	check("chat claude-sonnet-4-6", map[attribute.Key]any{telemetry.GenAIOperation: "chat", telemetry.GenAIRequestModel: "claude-sonnet-4-6",
		telemetry.GenAIResponseModel: "scripted", telemetry.GenAIInputTokens: 100, telemetry.GenAIOutputTokens: 10, telemetry.GenAIAgentName: "investigator"})
	check("execute_tool grafana.query", map[attribute.Key]any{telemetry.GenAIOperation: "execute_tool", telemetry.GenAIToolName: "grafana.query"})
	check("agent_iteration investigator", map[attribute.Key]any{telemetry.GenAIAgentName: "investigator", telemetry.Iteration: 1})

	// The webhook request carried the webhook span as its parent.
	hooks := tree.named("webhook")
	if len(hooks) != 1 || len(hook.parent) != 1 {
		t.Fatalf("%d webhook spans, %d requests", len(hooks), len(hook.parent))
	}
	sc := hooks[0].SpanContext
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; hook.parent[0] != want {
		t.Errorf("webhook request traceparent %q, want %q", hook.parent[0], want)
	}

	// Nothing of the prompts, replies or tool output is in a span.
	for _, s := range tree.spans {
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); strings.Contains(v, "checkout-api") || strings.Contains(v, "pool exhausted") || strings.Contains(v, "0.08") {
				t.Errorf("span %q attribute %s holds run content: %q", s.Name, kv.Key, v)
			}
		}
	}
}

// TestRunUntraced: with no provider installed, a run records no span and
// its webhook request carries no traceparent.
func TestRunUntraced(t *testing.T) {
	hook := newHookServer(t)
	runTraced(t, hook.URL)
	if len(hook.parent) != 1 || hook.parent[0] != "" {
		t.Errorf("webhook requests' traceparent %q, want one request without one", hook.parent)
	}
}

// scrape GETs the Runner's metrics and returns the stepline_ series
// lines, "name{labels} value".
func scrape(t *testing.T, r *Runner) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	series := map[string]string{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(line, "stepline_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series[line[:i]] = line[i+1:]
	}
	return series
}

// TestMetricsAfterRun runs the traced pipeline and reads GET /metrics:
// the run, each step's outcome with its executor, agent and model, the
// durations, the agent's tokens and the verifier that lowered triage's
// confidence (0.9 to 0.6).
func TestMetricsAfterRun(t *testing.T) {
	hook := newHookServer(t)
	r, _ := runTraced(t, hook.URL)
	got := scrape(t, r)
	want := map[string]string{
		`stepline_runs_total{pipeline="traced",status="completed"}`: "1",
		`stepline_runs_in_progress`:                                 "0",
		`stepline_approvals_pending`:                                "0",
		`stepline_steps_total{agent="",executor="scripted",model="scripted",pipeline="traced",status="completed",step="triage"}`:                   "1",
		`stepline_steps_total{agent="",executor="scripted",model="scripted",pipeline="traced",status="completed",step="checks/lint"}`:              "1",
		`stepline_steps_total{agent="",executor="scripted",model="scripted",pipeline="traced",status="completed",step="checks/unit"}`:              "1",
		`stepline_steps_total{agent="",executor="",model="",pipeline="traced",status="completed",step="checks"}`:                                   "1",
		`stepline_steps_total{agent="investigator",executor="anthropic",model="scripted",pipeline="traced",status="completed",step="investigate"}`: "1",
		`stepline_steps_total{agent="",executor="webhook",model="",pipeline="traced",status="completed",step="hook"}`:                              "1",
		`stepline_step_duration_seconds_count{executor="scripted",pipeline="traced",step="triage"}`:                                                "1",
		`stepline_step_duration_seconds_count{executor="webhook",pipeline="traced",step="hook"}`:                                                   "1",
		`stepline_tokens_total{direction="input",model="scripted",pipeline="traced"}`:                                                              "300",
		`stepline_tokens_total{direction="output",model="scripted",pipeline="traced"}`:                                                             "30",
		`stepline_verifier_overrides_total{pipeline="traced",step="triage"}`:                                                                       "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %s", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, "run-") {
			t.Errorf("series %s is labelled with a run ID", k)
		}
	}
	n := 0
	for k := range got {
		if !strings.Contains(k, "_bucket{") {
			n++
		}
	}
	if n != 24 { // 3 run and approval gauges, 6 steps × (total, duration count, sum), 2 token, 1 override
		t.Errorf("%d stepline_ series (histogram buckets aside) after one run of six steps, want 24", n)
	}
}

// TestMetricsApprovals: a waiting human step counts as pending until it
// is decided, then as approved, and the run as completed once.
func TestMetricsApprovals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeText(t, path, "name: gated\nsteps:\n  - {name: ok, executor: human}\n  - {name: a, executor: scripted}\n")
	replies := filepath.Join(dir, "replies.yaml")
	writeText(t, replies, "a: ["+reply(0.9, "done", "")+"]\n")
	r := openScripted(t, dir)
	o, err := r.Run(ctx, path, json.RawMessage(`{}`), "", WithResponses(replies))
	if err != nil || o.Status != store.RunWaiting {
		t.Fatalf("start: %+v, %v", o, err)
	}
	got := scrape(t, r)
	if got["stepline_approvals_pending"] != "1" || got[`stepline_runs_total{pipeline="gated",status="completed"}`] != "" {
		t.Errorf("waiting: pending %q, completed %q; want 1 and no series", got["stepline_approvals_pending"], got[`stepline_runs_total{pipeline="gated",status="completed"}`])
	}
	if o, err = r.Decide(ctx, o.RunID, "ok", "approve", "tester"); err != nil || o.Status != store.RunCompleted {
		t.Fatalf("decide: %+v, %v", o, err)
	}
	got = scrape(t, r)
	for k, v := range map[string]string{
		"stepline_approvals_pending": "0",
		`stepline_approvals_decided_total{decision="approved",pipeline="gated"}`:                                 "1",
		`stepline_runs_total{pipeline="gated",status="completed"}`:                                               "1",
		`stepline_steps_total{agent="",executor="human",model="",pipeline="gated",status="completed",step="ok"}`: "1",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %s", k, got[k], v)
		}
	}
}

// TestMetricsRoute: GET /metrics follows the server's tokens: the admin
// token reads it, a team token is refused (the metrics count every team's
// runs), no token is 401; a server without tokens serves it to anyone.
func TestMetricsRoute(t *testing.T) {
	base, _ := startServer(t, testTokens, HTTPLimits{})
	for _, tc := range []struct {
		token string
		code  int
	}{{tokAdmin, http.StatusOK}, {tokCheckout, http.StatusForbidden}, {"", http.StatusUnauthorized}} {
		a := do(t, http.MethodGet, base+"/metrics", tc.token, "", "")
		if a.status != tc.code {
			t.Errorf("token %q: %d, want %d", tc.token, a.status, tc.code)
		}
		if tc.code == http.StatusOK && !strings.Contains(a.body, "stepline_runs_in_progress 0") {
			t.Errorf("admin: body lacks stepline_runs_in_progress:\n%.300s", a.body)
		}
	}
	open, _ := startServer(t, nil, HTTPLimits{})
	if a := do(t, http.MethodGet, open+"/metrics", "", "", ""); a.status != http.StatusOK || !strings.Contains(a.body, "# TYPE stepline_runs_in_progress gauge") {
		t.Errorf("no tokens: %d %.300s", a.status, a.body)
	}
	if a := do(t, http.MethodPost, open+"/metrics", "", "", ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", a.status)
	}
}

// dropSpans is a span exporter that drops what it gets: the cost of
// recording spans, without an exporter's network.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkRunTracing runs a pipeline of ten scripted steps end to end
// (as BenchmarkRun) with OpenTelemetry's default global provider (nothing
// installed), off (the no-op provider telemetry.Setup installs when no
// OTEL_* variable asks for traces), and on (the SDK recording every span,
// exported in batches to an exporter that drops them). The default runs
// first: once a provider is installed it cannot be put back.
func BenchmarkRunTracing(b *testing.B) {
	run := func(b *testing.B) {
		dir := b.TempDir()
		sm, _ := benchPipeline(b, dir, 10, 0)
		r := openBench(b, dir, nil)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			o, err := r.Start(ctx, sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%d", i))
			if err != nil || o.Status != store.RunCompleted {
				b.Fatalf("run %d: %v %+v", i, err, o)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/10, "µs/step")
	}
	b.Run("tracing=default-global", run)
	b.Run("tracing=off", func(b *testing.B) {
		if p, err := telemetry.Setup(context.Background(), telemetry.Config{}); p != nil || err != nil {
			b.Fatal(p, err)
		}
		run(b)
	})
	b.Run("tracing=on", func(b *testing.B) {
		defer telemetry.Install(telemetry.NewProvider("bench", sdktrace.WithBatcher(dropSpans{})))()
		run(b)
	})
}
