package inbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// recordingStarter is a Starter that remembers what it started.
type recordingStarter struct {
	mu      sync.Mutex
	started []startCall
	err     error
}

type startCall struct {
	pipeline string
	runID    string
	trigger  Context
}

func (s *recordingStarter) Start(_ context.Context, p *pipeline.Pipeline, runID string, trigger Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.started = append(s.started, startCall{p.Name, runID, trigger})
	return nil
}

func (s *recordingStarter) calls() []startCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]startCall(nil), s.started...)
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	in      *Intake
	store   *sqlite.Store
	starter *recordingStarter
	clock   *clock
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func boolPtr(b bool) *bool { return &b }
func intPtr(i int) *int    { return &i }

// testPipelines are routed in this order.
func testPipelines() []*pipeline.Pipeline {
	eq := func(f string, v any) pipeline.Match { return pipeline.Match{Field: f, Op: "eq", Value: v} }
	in := func(f string, v ...any) pipeline.Match { return pipeline.Match{Field: f, Op: "in", Value: v} }
	triage := testPipeline("sre-alert-triage", pipeline.StageProduction, eq("source", "alertmanager"), in("severity", "critical", "warning"), eq("team", "checkout"))
	triage.Trigger.Dedup = &pipeline.Dedup{Enabled: boolPtr(true), WindowSeconds: intPtr(600)}
	triage.Config = "5a1e0c0ffee5" // as compiler.Lower stamps it
	noDedup := testPipeline("every-deploy", pipeline.StageProduction, eq("source", "generic"), eq("event", "deploy.finished"))
	noDedup.Trigger.Dedup = &pipeline.Dedup{Enabled: boolPtr(false)}
	return []*pipeline.Pipeline{
		triage,
		testPipeline("order-intake", pipeline.StageProduction, eq("source", "generic"), eq("event", "order.created")),
		noDedup,
		testPipeline("order-canary", pipeline.StageTesting, eq("source", "generic"), eq("event", "order.canary")),
		testPipeline("research-brief", pipeline.StageTesting),
	}
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	r, err := NewRouter(testPipelines())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: openStore(t), starter: &recordingStarter{}, clock: &clock{t: testNow}}
	cfg := Config{
		Router: r, Store: f.store, Starter: f.starter, Now: f.clock.now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	if f.in, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

func webhook(source string, body []byte, query ...string) Request {
	q := url.Values{}
	for i := 0; i+1 < len(query); i += 2 {
		q.Set(query[i], query[i+1])
	}
	return Request{Source: source, Body: body, Query: q}
}

var runIDPattern = regexp.MustCompile(`^run-[0-9a-f]{24}$`)

func TestAcceptStartsRun(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Tokens = Tokens{"checkout": "tok-checkout-1"} })
	ctx := context.Background()
	req := webhook("alertmanager", readEvent(t, "alertmanager-firing.json"))
	req.Bearer = "tok-checkout-1"
	d, err := f.in.Accept(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusAccepted || d.Pipeline != "sre-alert-triage" || !runIDPattern.MatchString(d.RunID) || d.Stage != "production" {
		t.Fatalf("decision %+v", d)
	}
	calls := f.starter.calls()
	if len(calls) != 1 || calls[0].runID != d.RunID || calls[0].pipeline != "sre-alert-triage" {
		t.Fatalf("started %+v", calls)
	}
	if got := calls[0].trigger; got.Team != "checkout" || got.Fingerprint != "5f1c2a9e7d3b4c10:firing" || got.Severity != "critical" {
		t.Errorf("trigger %+v", got)
	}
	run, err := f.store.GetRun(ctx, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunRunning || run.Team != "checkout" || run.Source != "alertmanager" || run.Stage != "production" ||
		run.Fingerprint != "5f1c2a9e7d3b4c10:firing" || !run.StartedAt.Equal(testNow) || run.ConfigFingerprint != "5a1e0c0ffee5" {
		t.Errorf("run record %+v", run)
	}
	var trig Context
	if err := json.Unmarshal(run.Trigger, &trig); err != nil {
		t.Fatal(err)
	}
	if trig.Team != "checkout" || trig.Labels["service"] != "checkout-api" || trig.Metadata["external_url"] != "http://alertmanager.internal:9093" {
		t.Errorf("stored trigger %+v", trig)
	}
	resp := d.Response()
	if resp["status"] != "accepted" || resp["run_id"] != d.RunID || resp["severity"] != "critical" || resp["source"] != "alertmanager" {
		t.Errorf("response %v", resp)
	}
}

func TestAcceptAuth(t *testing.T) {
	firing := readEvent(t, "alertmanager-firing.json")
	tokens := Tokens{"checkout": "tok-checkout-1", "payments": "tok-payments-2"}
	tests := []struct {
		name     string
		tokens   Tokens
		req      Request
		wantTeam string
		wantErr  error
	}{
		{"team token", tokens, Request{Source: "alertmanager", Body: firing, Bearer: "tok-checkout-1"}, "checkout", nil},
		{"other team's token", tokens, Request{Source: "alertmanager", Body: firing, Bearer: "tok-payments-2"}, "payments", nil},
		{"no token", tokens, Request{Source: "alertmanager", Body: firing}, "", ErrUnauthorized},
		{"wrong token", tokens, Request{Source: "alertmanager", Body: firing, Bearer: "tok-checkout-"}, "", ErrUnauthorized},
		{"token with a longer tail", tokens, Request{Source: "alertmanager", Body: firing, Bearer: "tok-checkout-12"}, "", ErrUnauthorized},
		{"auth before parsing", tokens, Request{Source: "alertmanager", Body: []byte("garbage"), Bearer: "nope"}, "", ErrUnauthorized},
		{"no tokens configured", nil, Request{Source: "alertmanager", Body: firing, Bearer: "anything"}, "", nil},
		{"manual without token", tokens, Request{Manual: true, PipelineName: "order-intake"}, "", nil},
		{"manual with a team token", tokens, Request{Manual: true, PipelineName: "order-intake", Bearer: "tok-payments-2"}, "payments", nil},
		{"manual with a wrong token", tokens, Request{Manual: true, PipelineName: "order-intake", Bearer: "nope"}, "", ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Tokens = tt.tokens })
			d, err := f.in.Accept(context.Background(), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || HTTPStatus(err) != 401 {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if tt.req.Bearer != "" && strings.Contains(err.Error(), tt.req.Bearer) {
					t.Errorf("error %q shows the token", err)
				}
				if n := len(f.starter.calls()); n != 0 {
					t.Errorf("%d runs started", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != StatusAccepted || d.Context.Team != tt.wantTeam {
				t.Errorf("status %s team %q, want accepted %q", d.Status, d.Context.Team, tt.wantTeam)
			}
		})
	}
}

func TestAcceptErrors(t *testing.T) {
	firing := readEvent(t, "alertmanager-firing.json")
	big := []byte(`{"event":"order.created","summary":"` + strings.Repeat("x", MaxBodyBytes) + `"}`)
	tests := []struct {
		name   string
		req    Request
		status int
		want   string
	}{
		{"no source", webhook("", firing), 400, "no source"},
		{"unknown source", webhook("grafana", firing), 400, `unknown source "grafana"`},
		{"source from the query", webhook("", []byte(`{"event":"nothing.routes.this"}`), "source", "generic"), 422, "no pipeline matched"},
		{"bad strategy", webhook("alertmanager", firing, "strategy", "newest"), 400, `unknown strategy "newest"`},
		{"bad allow_testing", webhook("alertmanager", firing, "allow_testing", "please"), 400, `allow_testing="please"`},
		{"bad payload", webhook("generic", []byte(`{"data": 3}`)), 400, "data must be an object"},
		{"too large", webhook("generic", big), 413, "payload too large"},
		{"no match", webhook("alertmanager", []byte(`{"alerts":[{"status":"firing","labels":{"severity":"info","team":"checkout"}}]}`)), 422, "no pipeline matched"},
		{"unknown explicit pipeline", webhook("generic", []byte(`{"pipeline":"ghost"}`)), 422, `unknown pipeline "ghost"`},
		{"unknown pipeline label", webhook("alertmanager", []byte(`{"alerts":[{"status":"firing","labels":{"pipeline":"ghost"}}]}`)), 422, `unknown pipeline "ghost"`},
		{"manual run of an unknown pipeline", Request{Manual: true, PipelineName: "ghost"}, 404, `pipeline not found: "ghost"`},
		{"manual run with a bad body", Request{Manual: true, PipelineName: "order-intake", Body: []byte(`[]`)}, 400, "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			_, err := f.in.Accept(context.Background(), tt.req)
			if err == nil {
				t.Fatal("no error")
			}
			if got := HTTPStatus(err); got != tt.status {
				t.Errorf("status %d, want %d (%v)", got, tt.status, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if n := len(f.starter.calls()); n != 0 {
				t.Errorf("%d runs started", n)
			}
		})
	}
}

func TestAcceptStageGate(t *testing.T) {
	canary := []byte(`{"event":"order.canary","idempotency_key":"c-1"}`)
	tests := []struct {
		name      string
		req       Request
		want      string
		wantStage string
	}{
		{"webhook skips a testing pipeline", webhook("generic", canary), StatusSkippedTesting, "testing"},
		{"allow_testing=false skips too", webhook("generic", canary, "allow_testing", "false"), StatusSkippedTesting, "testing"},
		{"allow_testing=true starts it", webhook("generic", canary, "allow_testing", "true"), StatusAccepted, "testing"},
		{"an explicit name does not open the gate", webhook("generic", []byte(`{"pipeline":"research-brief"}`)), StatusSkippedTesting, "testing"},
		{"manual runs always start", Request{Manual: true, PipelineName: "research-brief"}, StatusAccepted, "testing"},
		{"production runs start", webhook("generic", []byte(`{"event":"order.created"}`)), StatusAccepted, "production"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx := context.Background()
			d, err := f.in.Accept(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != tt.want || d.Stage != tt.wantStage {
				t.Fatalf("status %s stage %s, want %s %s", d.Status, d.Stage, tt.want, tt.wantStage)
			}
			runs, err := f.store.ListRuns(ctx, store.RunFilter{})
			if err != nil {
				t.Fatal(err)
			}
			started := len(f.starter.calls())
			if tt.want == StatusSkippedTesting {
				if started != 0 || len(runs) != 0 || d.RunID != "" || !strings.Contains(d.Reason, "allow_testing=true") {
					t.Errorf("skipped event: %d started, %d runs, run %q, reason %q", started, len(runs), d.RunID, d.Reason)
				}
				return
			}
			if started != 1 || len(runs) != 1 || runs[0].Stage != tt.wantStage {
				t.Errorf("%d started, runs %+v", started, runs)
			}
		})
	}
}

func TestAcceptManual(t *testing.T) {
	f := newFixture(t, nil)
	d, err := f.in.Accept(context.Background(), Request{
		Manual: true, PipelineName: "research-brief",
		Body: []byte(`{"pipeline":"order-intake","summary":"What changed in Q3?","data":{"question":"What changed in Q3?"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Context
	if d.Pipeline != "research-brief" || c.Pipeline != "research-brief" || c.Source != "manual" || c.Metadata["question"] != "What changed in Q3?" {
		t.Errorf("decision %+v", d)
	}
}

// TestAcceptDedupConcurrent sends one alert 50 times at once: exactly one
// run starts, and every other request names it.
func TestAcceptDedupConcurrent(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	body := readEvent(t, "alertmanager-firing.json")
	const n = 50
	decisions := make([]Decision, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			decisions[i], errs[i] = f.in.Accept(ctx, webhook("alertmanager", body))
		}()
	}
	close(start)
	wg.Wait()

	var accepted []string
	dedup := map[string]int{}
	for i, d := range decisions {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch d.Status {
		case StatusAccepted:
			accepted = append(accepted, d.RunID)
		case StatusDeduplicated:
			if d.Existing != d.RunID {
				t.Errorf("deduplicated decision names %q and %q", d.RunID, d.Existing)
			}
			dedup[d.RunID]++
		default:
			t.Errorf("request %d: status %s", i, d.Status)
		}
	}
	if len(accepted) != 1 {
		t.Fatalf("%d runs accepted, want 1", len(accepted))
	}
	if dedup[accepted[0]] != n-1 || len(dedup) != 1 {
		t.Errorf("deduplicated: %v, want %d against %s", dedup, n-1, accepted[0])
	}
	if calls := f.starter.calls(); len(calls) != 1 || calls[0].runID != accepted[0] {
		t.Errorf("started %+v", calls)
	}
	runs, err := f.store.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != accepted[0] {
		t.Errorf("stored runs %+v", runs)
	}
}

func TestAcceptDedupRules(t *testing.T) {
	ctx := context.Background()
	firing := readEvent(t, "alertmanager-firing.json")
	resolved := readEvent(t, "alertmanager-resolved.json")
	order := readEvent(t, "generic-order.json")

	type step struct {
		req     Request
		advance time.Duration // before the request
		finish  bool          // complete every run before the request
		want    string        // accepted, or deduplicated (against the first run)
	}
	am := func(b []byte) Request { return webhook("alertmanager", b) }
	gen := func(b string) Request { return webhook("generic", []byte(b)) }
	tests := []struct {
		name  string
		dedup *Dedup
		steps []step
	}{
		{"resolved is not a repeat of firing", nil, []step{
			{req: am(firing), want: StatusAccepted},
			{req: am(resolved), want: StatusAccepted},
		}},
		{"running runs dedup after the window", nil, []step{
			{req: am(firing), want: StatusAccepted},
			{req: am(firing), advance: 2 * time.Hour, want: StatusDeduplicated},
		}},
		{"ended runs dedup within the pipeline's window (600s)", nil, []step{
			{req: am(firing), want: StatusAccepted},
			{req: am(firing), advance: 599 * time.Second, finish: true, want: StatusDeduplicated},
		}},
		{"ended runs stop deduping after the window", nil, []step{
			{req: am(firing), want: StatusAccepted},
			{req: am(firing), advance: 601 * time.Second, finish: true, want: StatusAccepted},
		}},
		{"the service window applies without an override (300s)", nil, []step{
			{req: gen(string(order)), want: StatusAccepted},
			{req: gen(string(order)), advance: 299 * time.Second, finish: true, want: StatusDeduplicated},
			{req: gen(string(order)), advance: 2 * time.Second, want: StatusAccepted},
		}},
		{"a custom service window", &Dedup{Enabled: true, Window: time.Minute}, []step{
			{req: gen(string(order)), want: StatusAccepted},
			{req: gen(string(order)), advance: 61 * time.Second, finish: true, want: StatusAccepted},
		}},
		{"service dedup off, pipeline override on", &Dedup{Enabled: false}, []step{
			{req: am(firing), want: StatusAccepted},
			{req: am(firing), want: StatusDeduplicated},
		}},
		{"service dedup off", &Dedup{Enabled: false}, []step{
			{req: gen(string(order)), want: StatusAccepted},
			{req: gen(string(order)), want: StatusAccepted},
		}},
		{"pipeline override off", nil, []step{
			{req: gen(`{"event":"deploy.finished","idempotency_key":"d-1"}`), want: StatusAccepted},
			{req: gen(`{"event":"deploy.finished","idempotency_key":"d-1"}`), want: StatusAccepted},
		}},
		{"no fingerprint, no dedup", nil, []step{
			{req: gen(`{"event":"order.created"}`), want: StatusAccepted},
			{req: gen(`{"event":"order.created"}`), want: StatusAccepted},
		}},
		{"same key, other team", nil, []step{
			{req: teamReq(gen(`{"event":"order.created","idempotency_key":"order-7"}`), "tok-alpha"), want: StatusAccepted},
			{req: teamReq(gen(`{"event":"order.created","idempotency_key":"order-7"}`), "tok-beta"), want: StatusAccepted},
			{req: teamReq(gen(`{"event":"order.created","idempotency_key":"order-7"}`), "tok-alpha"), want: StatusDeduplicated},
		}},
		{"same key, other pipeline", nil, []step{
			{req: gen(`{"event":"order.created","idempotency_key":"k"}`), want: StatusAccepted},
			{req: gen(`{"pipeline":"research-brief","idempotency_key":"k"}`), want: StatusSkippedTesting},
			{req: Request{Manual: true, PipelineName: "research-brief", Body: []byte(`{"idempotency_key":"k"}`)}, want: StatusAccepted},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Dedup = tt.dedup })
			if strings.Contains(tt.name, "team") {
				f = newFixture(t, func(c *Config) { c.Dedup, c.Tokens = tt.dedup, Tokens{"alpha": "tok-alpha", "beta": "tok-beta"} })
			}
			var first string
			for i, s := range tt.steps {
				f.clock.advance(s.advance)
				if s.finish {
					for _, c := range f.starter.calls() {
						if err := f.store.UpdateRun(ctx, c.runID, store.RunUpdate{Status: store.RunCompleted}); err != nil {
							t.Fatal(err)
						}
					}
				}
				d, err := f.in.Accept(ctx, s.req)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if d.Status != s.want {
					t.Fatalf("step %d: %s, want %s", i, d.Status, s.want)
				}
				if i == 0 {
					first = d.RunID
				}
				if d.Status == StatusDeduplicated && d.RunID != first {
					t.Errorf("step %d: deduplicated against %q, want %q", i, d.RunID, first)
				}
			}
		})
	}
}

func TestAcceptOverloaded(t *testing.T) {
	limit := NewCounter(2)
	f := newFixture(t, func(c *Config) { c.Limiter = limit })
	ctx := context.Background()
	order := func(key string) Request {
		return webhook("generic", []byte(`{"event":"order.created","idempotency_key":"`+key+`"}`))
	}
	first, err := f.in.Accept(ctx, order("a"))
	if err != nil {
		t.Fatal(err)
	}
	// A repeat is answered without holding room.
	if d, err := f.in.Accept(ctx, order("a")); err != nil || d.Status != StatusDeduplicated {
		t.Fatalf("repeat: %+v %v", d, err)
	}
	if limit.Active() != 1 {
		t.Errorf("active %d after a dedup, want 1", limit.Active())
	}
	if _, err := f.in.Accept(ctx, order("b")); err != nil {
		t.Fatal(err)
	}
	_, err = f.in.Accept(ctx, order("c"))
	var oe *OverloadedError
	if !errors.As(err, &oe) || HTTPStatus(err) != 429 || oe.Active != 2 || oe.Max != 2 {
		t.Fatalf("third run: %v", err)
	}
	// The refused event left no claim: once there is room it starts.
	limit.Release(first.RunID)
	if d, err := f.in.Accept(ctx, order("c")); err != nil || d.Status != StatusAccepted {
		t.Errorf("after release: %+v %v", d, err)
	}
}

func TestAcceptStartFailure(t *testing.T) {
	limit := NewCounter(1)
	f := newFixture(t, func(c *Config) { c.Limiter = limit })
	f.starter.err = errors.New("state machine throttled")
	ctx := context.Background()
	_, err := f.in.Accept(ctx, webhook("generic", readEvent(t, "generic-order.json")))
	if err == nil || HTTPStatus(err) != 500 || !strings.Contains(err.Error(), "state machine throttled") {
		t.Fatalf("error %v", err)
	}
	runs, err := f.store.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != store.RunFailed || !strings.Contains(runs[0].Reason, "start: state machine throttled") {
		t.Fatalf("runs %+v", runs)
	}
	if limit.Active() != 0 {
		t.Errorf("the failed run holds room")
	}
	// The sender retries the same event once Step Functions recovers: the
	// run that never started does not deduplicate it.
	f.starter.err = nil
	d, err := f.in.Accept(ctx, webhook("generic", readEvent(t, "generic-order.json")))
	if err != nil || d.Status != StatusAccepted || d.RunID == runs[0].ID {
		t.Fatalf("retry after a failed start: %+v %v", d, err)
	}
}

func TestNewErrors(t *testing.T) {
	r, _ := NewRouter(nil)
	s := openStore(t)
	st := &recordingStarter{}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no router", Config{Store: s, Starter: st}, "no router"},
		{"no store", Config{Router: r, Starter: st}, "no store"},
		{"no starter", Config{Router: r, Store: s}, "no starter"},
		{"empty token", Config{Router: r, Store: s, Starter: st, Tokens: Tokens{"a": ""}}, `team "a" has an empty token`},
		{"shared token", Config{Router: r, Store: s, Starter: st, Tokens: Tokens{"a": "tok-1", "b": "tok-1"}}, "share a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAcceptNormalizedEvent: an event a trusted producer normalized
// (EventBridge) is routed and recorded as it is, team and raw included,
// without a bearer token even when webhooks need one.
func TestAcceptNormalizedEvent(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Tokens = Tokens{"checkout": "tok-1"} })
	ctx := context.Background()
	ev := Context{Source: "generic", Labels: map[string]string{"event": "order.created"}, Summary: "order 7",
		Fingerprint: "order-7", Team: "sales", Raw: json.RawMessage(`{"kept": true}`)}
	d, err := f.in.Accept(ctx, Request{Event: &ev})
	if err != nil || d.Status != StatusAccepted || d.Pipeline != "order-intake" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	run, err := f.store.GetRun(ctx, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var trig Context
	if err := json.Unmarshal(run.Trigger, &trig); err != nil {
		t.Fatal(err)
	}
	if run.Team != "sales" || trig.Team != "sales" || string(trig.Raw) != `{"kept":true}` || trig.ReceivedAt.IsZero() {
		t.Errorf("run team %q, trigger %+v", run.Team, trig)
	}
	// The same event again is deduplicated like any other.
	if d2, err := f.in.Accept(ctx, Request{Event: &ev}); err != nil || d2.Status != StatusDeduplicated || d2.RunID != d.RunID {
		t.Errorf("repeat: %+v %v", d2, err)
	}
}

// TestNewRunIDOrder: run IDs keep their form and sort by the millisecond
// they were made in, whatever their random part.
func TestNewRunIDOrder(t *testing.T) {
	t0 := time.UnixMilli(1_780_000_000_000)
	prev := ""
	for i := range 200 {
		id := newRunID(t0.Add(time.Duration(i) * time.Millisecond))
		if !runIDPattern.MatchString(id) {
			t.Fatalf("%q is not a run ID", id)
		}
		if id <= prev {
			t.Fatalf("%q made after %q sorts before it", id, prev)
		}
		prev = id
	}
	// The same millisecond: the random part differs.
	if a, b := newRunID(t0), newRunID(t0); a == b || a[:16] != b[:16] {
		t.Errorf("two IDs of one millisecond: %q, %q", a, b)
	}
	// The time part is the milliseconds since 1970.
	if got, want := newRunID(t0)[4:16], fmt.Sprintf("%012x", t0.UnixMilli()); got != want {
		t.Errorf("time part %s, want %s", got, want)
	}
}

// teamReq is r sent with bearer, a team's token.
func teamReq(r Request, bearer string) Request {
	r.Bearer = bearer
	return r
}

// TestAcceptRefusesWhatNoRunCanHold: an event holding a number no float64
// holds, or an idempotency key the store cannot hold (over
// store.MaxIDBytes, a NUL byte), is a bad request naming what is wrong,
// refused before any claim, record or start; the bounds themselves pass.
func TestAcceptRefusesWhatNoRunCanHold(t *testing.T) {
	ctx := context.Background()
	key := func(k string) string {
		b, _ := json.Marshal(k)
		return `{"event": "order.created", "idempotency_key": ` + string(b) + `}`
	}
	total := func(n string) string { return `{"event": "order.created", "data": {"order": {"total": ` + n + `}}}` }
	tests := []struct {
		name, body, says string
	}{
		{"the largest float64", total("1.7976931348623157e308"), ""},
		{"the most negative float64", total("-1.7976931348623157e308"), ""},
		{"rounds to zero", total("1e-999"), ""},
		{"just above the largest float64", total("1.8e308"), "metadata.order.total: the number 1.8e308 is out of range"},
		{"-1e999 in a list", total("[1, -1e999]"), "metadata.order.total[1]: the number -1e999 is out of range"},
		{"a key at the limit", key(strings.Repeat("k", store.MaxIDBytes)), ""},
		{"a key above the limit", key(strings.Repeat("k", store.MaxIDBytes+1)), "fingerprint is 513 bytes, limit 512"},
		{"a key with a NUL byte", key("a\x00b"), "fingerprint contains a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			d, err := f.in.Accept(ctx, webhook("generic", []byte(tt.body)))
			if tt.says == "" {
				if err != nil || d.Status != StatusAccepted {
					t.Fatalf("%+v, %v; want accepted", d, err)
				}
				return
			}
			if !errors.Is(err, ErrBadRequest) || HTTPStatus(err) != 400 || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %v; want a bad request saying %q", err, tt.says)
			}
			if n := len(f.starter.calls()); n != 0 {
				t.Errorf("%d runs started", n)
			}
			if runs, _ := f.store.ListRuns(ctx, store.RunFilter{}); len(runs) != 0 {
				t.Errorf("runs recorded: %+v", runs)
			}
		})
	}
}
