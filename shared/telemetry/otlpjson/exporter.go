package otlpjson

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// maxAnswerBytes bounds how much of a collector's answer is read.
const maxAnswerBytes = 64 << 10

// maxMessageBytes bounds a collector's message as the exporter reports it.
const maxMessageBytes = 512

// ErrShutdown is returned by ExportSpans after Shutdown.
var ErrShutdown = errors.New("otlpjson: exporter is shut down")

// Exporter sends spans to an OTLP/HTTP collector as JSON. It is an
// sdktrace.SpanExporter; its methods are safe for concurrent use.
type Exporter struct {
	url         string // where requests go
	where       string // url without user info, query or fragment: for errors
	headers     http.Header
	client      *http.Client
	timeout     time.Duration
	gzip        bool
	maxBytes    int
	maxAttempts int
	retryDelay  time.Duration
	secrets     []string // header values, scrubbed from what a collector answers
	stopped     atomic.Bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter posting to c.URL. It refuses an empty or
// malformed URL and TLS files it cannot read.
func New(c Config) (*Exporter, error) {
	if c.URL == "" {
		return nil, errors.New("otlpjson: no endpoint URL")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("otlpjson: the endpoint is not an http:// or https:// URL with a host")
	}
	e := &Exporter{
		url:         c.URL,
		where:       (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(),
		headers:     http.Header{},
		client:      c.Client,
		timeout:     orDefault(c.Timeout, DefaultTimeout),
		gzip:        c.Gzip,
		maxBytes:    orDefault(c.MaxRequestBytes, DefaultMaxRequestBytes),
		maxAttempts: orDefault(c.MaxAttempts, DefaultMaxAttempts),
		retryDelay:  orDefault(c.RetryDelay, DefaultRetryDelay),
	}
	for k, vs := range c.Headers {
		for _, v := range vs {
			e.headers.Add(k, v)
			e.secrets = append(e.secrets, secrets(v)...)
		}
	}
	if p := u.User.String(); p != "" {
		e.secrets = append(e.secrets, p)
	}
	e.headers.Set("Content-Type", "application/json")
	e.headers.Del("Content-Encoding")
	if e.gzip {
		e.headers.Set("Content-Encoding", "gzip")
	}
	if e.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
			if t.TLSClientConfig, err = tlsConfig(c); err != nil {
				return nil, err
			}
		}
		// A redirect would carry the headers (an API key) to wherever it
		// points: answers 3xx are failures instead.
		e.client = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return e, nil
}

// secrets are the parts of a header value to scrub from what a collector
// answers: the value, and each word of it long enough to be a key (the
// token of "Bearer <token>").
func secrets(v string) []string {
	var out []string
	if len(v) >= 4 {
		out = append(out, v)
	}
	if words := strings.Fields(v); len(words) > 1 {
		for _, w := range words {
			if len(w) >= 8 {
				out = append(out, w)
			}
		}
	}
	return out
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

func tlsConfig(c Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("otlpjson: certificate authorities: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlpjson: certificate authorities %s: no PEM certificate", c.CAFile)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("otlpjson: a client certificate needs both its certificate and its key file")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("otlpjson: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ExportSpans sends spans, in as many requests as the request size bound
// needs, within the exporter's timeout (retries included). A collector's
// partial success is reported to OpenTelemetry's error handler, not
// returned. The error says which requests failed and how, and counts the
// spans too large to send; it never holds the request's headers.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return ErrShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	groups, err := group(spans)
	if err != nil {
		return fmt.Errorf("otlpjson: encode %d spans: %w", len(spans), err)
	}
	bodies, tooLarge := pack(groups, e.maxBytes)
	var errs []error
	for i, body := range bodies {
		if err := e.send(ctx, body); err != nil {
			errs = append(errs, fmt.Errorf("otlpjson: export to %s: %w", e.where, err))
			if ctx.Err() != nil {
				if rest := len(bodies) - i - 1; rest > 0 {
					errs = append(errs, fmt.Errorf("otlpjson: %d more requests not sent", rest))
				}
				break
			}
		}
	}
	if tooLarge > 0 {
		errs = append(errs, fmt.Errorf("otlpjson: %d spans left out: each is over the %d-byte request bound on its own", tooLarge, e.maxBytes))
	}
	return errors.Join(errs...)
}

// Shutdown stops the exporter: ExportSpans returns ErrShutdown from now
// on. Nothing is buffered, so nothing is lost.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// send posts one body, retrying what the OTLP specification says to
// retry (429, 502, 503, 504 and connection failures) up to maxAttempts
// times while ctx lasts.
func (e *Exporter) send(ctx context.Context, body []byte) error {
	payload := body
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		payload = buf.Bytes()
	}
	delay := e.retryDelay
	for attempt := 1; ; attempt++ {
		wait, err := e.post(ctx, payload)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (attempt %d)", ctx.Err(), attempt)
		}
		if wait < 0 { // not retryable
			return err
		}
		if attempt == e.maxAttempts {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		if wait == 0 {
			wait = delay/2 + rand.N(delay/2+1) // exponential, with jitter
			delay = min(2*delay, MaxRetryDelay)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return fmt.Errorf("%w (no time left to wait %s for attempt %d)", err, wait.Round(time.Millisecond), attempt+1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (attempt %d)", ctx.Err(), attempt)
		case <-t.C:
		}
	}
}

// post makes one attempt. On failure wait says whether to retry: -1 no,
// 0 after the exporter's backoff, more after that long (Retry-After).
func (e *Exporter) post(ctx context.Context, payload []byte) (wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(payload))
	if err != nil {
		return -1, errors.New("cannot build the request")
	}
	req.Header = e.headers.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, which may hold a key
		}
		return 0, errors.New(e.scrub(err.Error()))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes)) // lets the connection be reused
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		e.partialSuccess(answer)
		return 0, nil
	case code == http.StatusTooManyRequests, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After"), time.Now()), e.failure(resp, answer)
	default:
		return -1, e.failure(resp, answer)
	}
}

// failure describes an error answer: its status and the message of its
// Status body (JSON), scrubbed and bounded.
func (e *Exporter) failure(resp *http.Response, answer []byte) error {
	msg := "HTTP " + resp.Status
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(answer, &st) == nil && st.Message != "" {
		msg += ": " + e.scrub(st.Message)
	}
	return errors.New(msg)
}

// partialSuccess reports a collector's partial success (spans it
// rejected, or a warning) to OpenTelemetry's error handler.
func (e *Exporter) partialSuccess(answer []byte) {
	var r struct {
		PartialSuccess *struct {
			RejectedSpans flexInt `json:"rejectedSpans"`
			ErrorMessage  string  `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if len(answer) == 0 || json.Unmarshal(answer, &r) != nil || r.PartialSuccess == nil {
		return
	}
	p := r.PartialSuccess
	if p.RejectedSpans == 0 && p.ErrorMessage == "" {
		return
	}
	otel.Handle(fmt.Errorf("otlpjson: %s accepted the spans partly: %d rejected: %s", e.where, p.RejectedSpans, e.scrub(p.ErrorMessage)))
}

// flexInt is an int64 written as a number or as a decimal string (the
// protobuf JSON mapping accepts both).
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	*n = flexInt(v)
	return nil
}

// scrub makes a collector's message (or a transport error) fit to log:
// header values (keys) it echoes replaced, control characters blanked,
// at most maxMessageBytes.
func (e *Exporter) scrub(msg string) string {
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	if len(msg) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when
// missing or malformed (the exporter's backoff then).
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 3600)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
