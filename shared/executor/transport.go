package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/internal/origin"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/telemetry"
)

// exchange is one HTTP request an executor sends.
type exchange struct {
	executor string        // for messages: "gateway"
	method   string        // HTTP method
	url      string        // absolute URL, secrets resolved
	header   http.Header   // request headers, secrets resolved
	body     []byte        // request body
	limit    time.Duration // the call's time bound, for messages (0: none)
	// red scrubs the call's resolved secrets from the reply as it
	// arrives: its body and header values, before anything parses, cuts
	// or quotes them (nil: nothing to scrub).
	red *secret.Redactor
}

// reply is a response read whole (up to MaxBodyBytes).
type reply struct {
	status    int
	header    http.Header
	body      []byte
	truncated bool // the body was longer than MaxBodyBytes
}

// send performs x, mapping failures to faults. A 429 whose Retry-After
// fits both Deps.MaxRetryWait and the deadline is waited out and the
// request sent once more. Only 2xx replies return without error.
func (r *Registry) send(ctx context.Context, x exchange) (reply, error) {
	for attempt := 1; ; attempt++ {
		start := time.Now()
		rep, err := r.roundTrip(ctx, x)
		r.log.DebugContext(ctx, "executor http call", "executor", x.executor, "method", x.method,
			"host", x.red.Redact(hostOf(x.url)), "status", rep.status, "attempt", attempt, "duration", time.Since(start), "error", err != nil)
		if err != nil {
			return rep, err
		}
		if rep.status == http.StatusTooManyRequests {
			wait := retryAfter(rep.header, r.deps.Now())
			if attempt == 1 && wait > 0 && wait <= r.deps.MaxRetryWait && fits(ctx, wait) {
				if err := r.deps.Sleep(ctx, wait); err != nil {
					return rep, transportError(ctx, x, err)
				}
				continue
			}
			return rep, &fault.RateLimited{
				Msg:        fmt.Sprintf("%s: HTTP 429 from %s%s", x.executor, displayURL(x.url), apiMessage(rep.body)),
				RetryAfter: wait,
			}
		}
		if rep.status < 200 || rep.status > 299 {
			return rep, statusError(x, rep)
		}
		return rep, nil
	}
}

// fits reports whether waiting d still leaves time before ctx's deadline
// for another request.
func fits(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return true
	}
	return time.Until(dl) > d+d/10+100*time.Millisecond
}

func (r *Registry) roundTrip(ctx context.Context, x exchange) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, x.method, x.url, bytes.NewReader(x.body))
	if err != nil {
		return reply{}, fault.Errorf[fault.ConfigError]("%s: cannot build the request to %s", x.executor, displayURL(x.url))
	}
	for k, vs := range x.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	telemetry.Inject(ctx, req.Header)
	resp, err := r.deps.HTTP.Do(req)
	if err != nil {
		return reply{}, transportError(ctx, x, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	rep := reply{status: resp.StatusCode, header: resp.Header}
	if err != nil {
		return rep, transportError(ctx, x, fmt.Errorf("reading the HTTP %d reply: %w", resp.StatusCode, err))
	}
	if len(body) > MaxBodyBytes {
		body, rep.truncated = body[:MaxBodyBytes], true
	}
	rep.body = body
	if x.red != nil {
		rep.body = []byte(x.red.Redact(string(body)))
		for _, vs := range rep.header {
			for i, v := range vs {
				vs[i] = x.red.Redact(v)
			}
		}
	}
	return rep, nil
}

// transportError maps a failed exchange: the deadline is ExecutorTimeout,
// the caller's cancellation stays context.Canceled, anything else
// (refused, reset, truncated) is ExecutorUnavailable.
func transportError(ctx context.Context, x exchange, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fault.Errorf[fault.ExecutorTimeout]("%s: no answer from %s within %s", x.executor, displayURL(x.url), limitText(x.limit))
	}
	if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%s: %s %s: %w", x.executor, x.method, displayURL(x.url), context.Canceled)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fault.Errorf[fault.ExecutorTimeout]("%s: %s %s: timed out", x.executor, x.method, displayURL(x.url))
	}
	// url.Error repeats the full URL (query included); keep only its cause.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, origin.ErrRedirect) {
		// The same answer comes again: a retry cannot help.
		return fault.Errorf[fault.ExecutorRejected]("%s: %s %s: %v", x.executor, x.method, displayURL(x.url), err)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("%s: %s %s: %v", x.executor, x.method, displayURL(x.url), err)
}

func limitText(d time.Duration) string {
	if d <= 0 {
		return "the deadline"
	}
	return d.String()
}

// statusError maps a non-2xx status other than 429.
func statusError(x exchange, rep reply) error {
	msg := fmt.Sprintf("%s: HTTP %d from %s%s", x.executor, rep.status, displayURL(x.url), apiMessage(rep.body))
	switch {
	case rep.status >= 500, rep.status == http.StatusRequestTimeout, rep.status == http.StatusTooEarly:
		return &fault.ExecutorUnavailable{Msg: msg}
	}
	return &fault.ExecutorRejected{Msg: msg}
}

// apiMessage extracts a provider's error message from an error body, as
// ": message" (or "" when the body says nothing readable). The OpenAI and
// Anthropic shapes {"error": {"message": ...}} and the common {"error":
// "..."}, {"message": "..."}, {"detail": "..."} are understood; other bodies
// contribute their first line.
func apiMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		var s string
		switch {
		case json.Unmarshal(m["error"], &inner) == nil && inner.Message != "":
			if inner.Type != "" {
				return ": " + clip(inner.Type+": "+inner.Message, 300)
			}
			return ": " + clip(inner.Message, 300)
		case json.Unmarshal(m["error"], &s) == nil && s != "":
			return ": " + clip(s, 300)
		case json.Unmarshal(m["message"], &s) == nil && s != "":
			return ": " + clip(s, 300)
		case json.Unmarshal(m["detail"], &s) == nil && s != "":
			return ": " + clip(s, 300)
		}
		return ""
	}
	line, _, _ := strings.Cut(string(body), "\n")
	return ": " + clip(strings.TrimSpace(line), 200)
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// head returns the first n runes of b, as text.
func head(b []byte, n int) string {
	s, _ := cut(b, n)
	return s
}

// cut returns the first n runes of b as text (invalid UTF-8 replaced), and
// whether anything was left out.
func cut(b []byte, n int) (string, bool) {
	i := 0
	for runes := 0; i < len(b) && runes < n; runes++ {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return strings.ToValidUTF8(string(b[:i]), "\uFFFD"), i < len(b)
}

// retryAfter reads how long a 429 asks the client to wait: Retry-After in
// seconds or as an HTTP date, or the retry-after-ms some providers send.
// Zero when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	const most = 24 * time.Hour
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
			return min(time.Duration(f*float64(time.Millisecond)), most)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return min(time.Duration(f*float64(time.Second)), most)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, most)
		}
	}
	return 0
}

// displayURL is u without its query and user info, for messages.
func displayURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "the configured URL"
	}
	p.RawQuery, p.ForceQuery, p.Fragment, p.User = "", false, "", nil
	return p.String()
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return ""
}

// auditRaw returns a response body as Completion.Raw: the body itself when
// it is JSON that fits MaxRawBytes, otherwise a JSON record holding its
// start.
func auditRaw(body []byte, truncated bool) json.RawMessage {
	t := bytes.TrimSpace(body)
	if !truncated && len(t) <= MaxRawBytes && json.Valid(t) {
		return append(json.RawMessage(nil), t...)
	}
	rec := struct {
		Truncated bool   `json:"truncated"`
		Bytes     int    `json:"bytes"`
		Body      string `json:"body"`
	}{truncated || len(t) > MaxRawBytes, len(body), strings.ToValidUTF8(string(t[:min(len(t), MaxRawBytes)]), "\uFFFD")}
	b, _ := json.Marshal(rec)
	return b
}

// malformed is the error for a 2xx body that cannot be read as the API's
// answer.
func malformed(executor string, rep reply, what string) error {
	if rep.truncated {
		return fault.Errorf[fault.ExecutorUnavailable]("%s: reply larger than %d bytes", executor, MaxBodyBytes)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("%s: malformed reply: %s", executor, what)
}

// setHeaders copies configured headers into h, after the executor's own,
// so a configured header overrides a default.
func setHeaders(h http.Header, extra map[string]string) {
	for k, v := range extra {
		h.Set(k, v)
	}
}
