package otlpjson

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// received is one request a collector got, its body decompressed.
type received struct {
	at     time.Time
	method string
	path   string
	header http.Header
	body   []byte
}

// collector is an OTLP/HTTP endpoint answering each request with the next
// of its answers (the last one repeated).
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	got     []received
	answers []func(w http.ResponseWriter)
}

func newCollector(t *testing.T, answers ...func(w http.ResponseWriter)) *collector {
	t.Helper()
	c := &collector{answers: answers}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "not gzip", http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		n := len(c.got)
		c.got = append(c.got, received{time.Now(), r.Method, r.URL.Path, r.Header.Clone(), b})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if len(c.answers) == 0 {
			io.WriteString(w, "{}")
			return
		}
		c.answers[min(n, len(c.answers)-1)](w)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) requests() []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]received(nil), c.got...)
}

func answer(code int, retryAfter, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func ok() func(w http.ResponseWriter) { return answer(http.StatusOK, "", "{}") }

func spans(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	out := make([]sdktrace.ReadOnlySpan, n)
	for i := range out {
		stub := tracetest.SpanStub{Name: "step triage", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i + 1)}})}
		out[i] = stub.Snapshot()
	}
	return out
}

func newExporter(t *testing.T, c Config) *Exporter {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// TestExportRequest: the endpoint, headers and (gzip) body a collector
// gets, configured from the environment as an operator would.
func TestExportRequest(t *testing.T) {
	for _, gz := range []string{"none", "gzip"} {
		t.Run(gz, func(t *testing.T) {
			col := newCollector(t)
			c, err := FromEnv(env(map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    col.URL + "/otlp",
				"OTEL_EXPORTER_OTLP_HEADERS":     "x-api-key=s3cr%3Dt,Content-Type=text/plain",
				"OTEL_EXPORTER_OTLP_COMPRESSION": gz,
			}))
			if err != nil {
				t.Fatal(err)
			}
			e := newExporter(t, c)
			if err := e.ExportSpans(t.Context(), spans(t, 3)); err != nil {
				t.Fatal(err)
			}
			got := col.requests()
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			r := got[0]
			if r.method != http.MethodPost || r.path != "/otlp/v1/traces" || r.header.Get("Content-Type") != "application/json" ||
				r.header.Get("X-Api-Key") != "s3cr=t" {
				t.Errorf("%s %s Content-Type %q key %q", r.method, r.path, r.header.Get("Content-Type"), r.header.Get("X-Api-Key"))
			}
			if wantGzip := gz == "gzip"; (r.header.Get("Content-Encoding") == "gzip") != wantGzip {
				t.Errorf("Content-Encoding %q with compression %s", r.header.Get("Content-Encoding"), gz)
			}
			if n := countSpans(decode(t, r.body)); n != 3 {
				t.Errorf("%d spans received", n)
			}
		})
	}
}

// TestSplitRequests: a batch over the request bound goes in several
// requests, all delivered.
func TestSplitRequests(t *testing.T) {
	col := newCollector(t)
	e := newExporter(t, Config{URL: col.URL + "/v1/traces", MaxRequestBytes: 1000})
	if err := e.ExportSpans(t.Context(), spans(t, 30)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range col.requests() {
		if len(r.body) > 1000 {
			t.Errorf("a %d-byte request", len(r.body))
		}
		total += countSpans(decode(t, r.body))
	}
	if n := len(col.requests()); n < 3 || total != 30 {
		t.Errorf("%d requests carrying %d spans", n, total)
	}
}

// TestRetries: 429, 502, 503 and 504 are retried, honouring Retry-After
// (seconds or a date) and backing off without one; other failures are
// not; attempts and waits are bounded.
func TestRetries(t *testing.T) {
	cases := []struct {
		name     string
		answers  []func(http.ResponseWriter)
		attempts int
		minGap   time.Duration // between the first two requests
		maxGap   time.Duration
		err      string // "" for success
	}{
		{"503 with Retry-After seconds", []func(http.ResponseWriter){answer(503, "1", ""), ok()}, 2, time.Second, 3 * time.Second, ""},
		{"429 with Retry-After date", []func(http.ResponseWriter){func(w http.ResponseWriter) {
			answer(429, time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat), "")(w) // whole seconds: 1 to 2 s from now
		}, ok()}, 2, 900 * time.Millisecond, 3 * time.Second, ""},
		{"502 backs off", []func(http.ResponseWriter){answer(502, "", ""), ok()}, 2, 5 * time.Millisecond, time.Second, ""},
		{"504 backs off", []func(http.ResponseWriter){answer(504, "", ""), answer(504, "", ""), ok()}, 3, 5 * time.Millisecond, time.Second, ""},
		{"gives up after MaxAttempts", []func(http.ResponseWriter){answer(503, "", `{"code": 14, "message": "collector overloaded"}`)}, 3, 0, time.Second,
			"HTTP 503 Service Unavailable: collector overloaded (gave up after 3 attempts)"},
		{"400 is not retried", []func(http.ResponseWriter){answer(400, "", `{"message": "bad span"}`)}, 1, 0, 0, "HTTP 400 Bad Request: bad span"},
		{"413 is not retried", []func(http.ResponseWriter){answer(413, "", "")}, 1, 0, 0, "HTTP 413"},
		{"Retry-After past the timeout: gives up at once", []func(http.ResponseWriter){answer(429, "30", "")}, 1, 0, 0, "no time left to wait 30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			col := newCollector(t, c.answers...)
			e := newExporter(t, Config{URL: col.URL + "/v1/traces", MaxAttempts: 3, RetryDelay: 10 * time.Millisecond, Timeout: 5 * time.Second})
			start := time.Now()
			err := e.ExportSpans(t.Context(), spans(t, 1))
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
			got := col.requests()
			if len(got) != c.attempts {
				t.Fatalf("%d attempts, want %d", len(got), c.attempts)
			}
			if len(got) > 1 {
				if gap := got[1].at.Sub(got[0].at); gap < c.minGap || gap > c.maxGap {
					t.Errorf("waited %s between attempts, want %s to %s", gap, c.minGap, c.maxGap)
				}
			}
			if c.attempts == 1 && time.Since(start) > time.Second {
				t.Errorf("took %s for one attempt", time.Since(start))
			}
			for _, r := range got[1:] {
				if string(r.body) != string(got[0].body) {
					t.Error("a retry sent another body")
				}
			}
		})
	}
}

// TestTimeout: a collector that does not answer costs one export its
// timeout, not more.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	e := newExporter(t, Config{URL: srv.URL + "/v1/traces", Timeout: 300 * time.Millisecond})
	start := time.Now()
	err := e.ExportSpans(t.Context(), spans(t, 1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 2*time.Second {
		t.Errorf("took %s with a 300ms timeout", d)
	}
}

// TestUnreachableRetried: a connection refused is retried within the
// attempts, and the error names the endpoint without its secrets.
func TestUnreachableRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	e := newExporter(t, Config{URL: strings.Replace(url, "http://", "http://user:pa55word@", 1) + "/v1/traces?token=q-secret",
		MaxAttempts: 2, RetryDelay: 10 * time.Millisecond})
	err := e.ExportSpans(t.Context(), spans(t, 1))
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") || !strings.Contains(err.Error(), url+"/v1/traces") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error(), "pa55word") || strings.Contains(err.Error(), "q-secret") {
		t.Errorf("the error shows the URL's secrets: %v", err)
	}
}

// TestSecretsNotReported: a collector echoing the API key in its answer
// does not get it into the error or the partial-success report.
func TestSecretsNotReported(t *testing.T) {
	const key = "sk-live-0123456789"
	col := newCollector(t, answer(401, "", `{"message": "invalid key `+key+`\n"}`))
	e := newExporter(t, Config{URL: col.URL + "/v1/traces", Headers: http.Header{"Authorization": {"Bearer " + key}}})
	err := e.ExportSpans(t.Context(), spans(t, 1))
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "HTTP 401 Unauthorized: invalid key [redacted]") {
		t.Errorf("error %v", err)
	}
	if got := col.requests()[0].header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization %q sent", got)
	}
}

// handled collects what reaches OpenTelemetry's error handler.
type handled struct {
	mu   sync.Mutex
	errs []error
}

func (h *handled) Handle(err error) { h.mu.Lock(); h.errs = append(h.errs, err); h.mu.Unlock() }

// TestPartialSuccess: a partial success (as the official types encode
// it) is reported, scrubbed, and neither retried nor an export error.
func TestPartialSuccess(t *testing.T) {
	const key = "k-abcdef"
	partial, err := protojson.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
		RejectedSpans: 2, ErrorMessage: "2 spans too old; key " + key,
	}})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector(t, answer(200, "", string(partial)))
	h := &handled{}
	otel.SetErrorHandler(h)
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	e := newExporter(t, Config{URL: col.URL + "/v1/traces", Headers: http.Header{"X-Key": {key}}})
	if err := e.ExportSpans(t.Context(), spans(t, 3)); err != nil {
		t.Fatal(err)
	}
	if n := len(col.requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "2 rejected: 2 spans too old; key [redacted]") {
		t.Errorf("reported %v", h.errs)
	}
}

// TestNoRedirects: a redirect is a failure; the headers never reach its
// target.
func TestNoRedirects(t *testing.T) {
	elsewhere := newCollector(t)
	col := newCollector(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", elsewhere.URL+"/v1/traces")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	e := newExporter(t, Config{URL: col.URL + "/v1/traces", Headers: http.Header{"X-Key": {"secret"}}})
	if err := e.ExportSpans(t.Context(), spans(t, 1)); err == nil || !strings.Contains(err.Error(), "HTTP 307") {
		t.Errorf("error %v", err)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

func TestShutdown(t *testing.T) {
	col := newCollector(t)
	e := newExporter(t, Config{URL: col.URL})
	if err := e.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(t.Context(), spans(t, 1)); !errors.Is(err, ErrShutdown) {
		t.Errorf("after Shutdown: %v", err)
	}
	if len(col.requests()) != 0 {
		t.Error("exported after Shutdown")
	}
}

// TestWithBatcher: the exporter behind the SDK's batch processor, as
// Setup installs it.
func TestWithBatcher(t *testing.T) {
	col := newCollector(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(newExporter(t, Config{URL: col.URL + "/v1/traces"})))
	for range 5 {
		_, s := tp.Tracer("stepline").Start(t.Context(), "step triage")
		s.End()
	}
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range col.requests() {
		total += countSpans(decode(t, r.body))
	}
	if total != 5 {
		t.Errorf("%d spans exported, want 5", total)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":        0,
		"3":       3 * time.Second,
		" 10 ":    10 * time.Second,
		"0":       0,
		"-5":      0,
		"soon":    0,
		"9999999": time.Hour,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	}
	for h, want := range cases {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", h, got, want)
		}
	}
}

// BenchmarkExport is the cost of exporting a batch of 512 spans shaped
// like Stepline's (a model call's: seven attributes, one event) to a
// collector on loopback: encoding, the request and its answer; per span.
//
//	go test -run '^$' -bench Export ./shared/telemetry/otlpjson
func BenchmarkExport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	batch := make([]sdktrace.ReadOnlySpan, 512)
	for i := range batch {
		stub := tracetest.SpanStub{
			Name:        "chat gpt-4o-mini",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i), byte(i >> 8), 1}, TraceFlags: trace.FlagsSampled}),
			Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
			SpanKind:    trace.SpanKindClient,
			StartTime:   t0, EndTime: t0.Add(time.Second),
			Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.system", "openai"),
				attribute.String("gen_ai.request.model", "gpt-4o-mini"), attribute.Int("gen_ai.usage.input_tokens", 1200),
				attribute.Int("gen_ai.usage.output_tokens", 300), attribute.String("stepline.run.id", "run-daa3e708dd7d2cc7ace9c07e"),
				attribute.String("stepline.step", "triage"),
			},
			Events: []sdktrace.Event{{Name: "retry", Time: t0}},
		}
		batch[i] = stub.Snapshot()
	}
	for _, gz := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(b *testing.B) {
			e, err := New(Config{URL: srv.URL + "/v1/traces", Gzip: gz})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			b.ReportAllocs()
			for b.Loop() {
				if err := e.ExportSpans(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/span")
		})
	}
}
