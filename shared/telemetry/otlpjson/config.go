package otlpjson

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of a Config.
const (
	// DefaultEndpoint is where spans go when no endpoint is configured
	// (OTEL_TRACES_EXPORTER=otlp alone): a collector on this host.
	DefaultEndpoint = "http://localhost:4318/v1/traces"
	// DefaultTimeout bounds one export, retries included
	// (OTEL_EXPORTER_OTLP_TIMEOUT's default).
	DefaultTimeout = 10 * time.Second
	// DefaultMaxRequestBytes bounds one request body before compression; a
	// larger batch is split over several requests. 4 MiB is the smallest
	// limit common collectors enforce (gRPC's default message size).
	DefaultMaxRequestBytes = 4 << 20
	// DefaultMaxAttempts is how many times one request is tried when the
	// collector answers 429, 502, 503 or 504 or cannot be reached.
	DefaultMaxAttempts = 5
	// DefaultRetryDelay is the first wait between attempts when the
	// collector gives no Retry-After; it doubles (with jitter) up to
	// MaxRetryDelay.
	DefaultRetryDelay = 250 * time.Millisecond
	// MaxRetryDelay caps the exporter's own backoff. A collector's
	// Retry-After is honoured as given, unless the export's timeout ends
	// first: then the exporter gives up at once.
	MaxRetryDelay = 5 * time.Second
)

// Config is what New needs. FromEnv reads it from the OTEL_EXPORTER_OTLP_*
// variables; the zero value of a field is its default.
type Config struct {
	// URL is the full URL spans are posted to (path included).
	URL string
	// Headers are sent with every request. They usually hold an API key:
	// the exporter never logs them and scrubs their values from the
	// collector's answers before it reports them.
	Headers http.Header
	// Timeout bounds one export, retries included (DefaultTimeout).
	Timeout time.Duration
	// Gzip compresses request bodies (Content-Encoding: gzip).
	Gzip bool
	// CAFile, CertFile and KeyFile are PEM files: the certificate
	// authorities to trust instead of the system's, and a client
	// certificate and key for mutual TLS.
	CAFile, CertFile, KeyFile string
	// MaxRequestBytes bounds one request body (DefaultMaxRequestBytes).
	MaxRequestBytes int
	// MaxAttempts is how many times one request is tried
	// (DefaultMaxAttempts; 1 turns retries off).
	MaxAttempts int
	// RetryDelay is the first wait between attempts without a
	// Retry-After (DefaultRetryDelay).
	RetryDelay time.Duration
	// Client sends the requests; nil is a client of New's own (with the
	// TLS files above, and no redirects followed).
	Client *http.Client
}

// FromEnv reads the exporter's settings from the environment, as the
// OpenTelemetry specification defines them for traces over OTLP/HTTP
// (each OTEL_EXPORTER_OTLP_TRACES_* variable, when set, wins over its
// OTEL_EXPORTER_OTLP_* one):
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: "v1/traces" is added to
//     its path ("http://c:4318" and "http://c:4318/" post to
//     "http://c:4318/v1/traces"); OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     used as it is (no path is the root path). Neither set:
//     DefaultEndpoint.
//   - _HEADERS: "key=value,key2=value2", keys and values percent-decoded.
//     The traces variable replaces the general one.
//   - _TIMEOUT: milliseconds (DefaultTimeout).
//   - _COMPRESSION: "gzip" or "none".
//   - _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY: PEM files.
//
// A malformed value is left out (its default is used) and named in the
// error, without the value itself (a header holds a key); a malformed
// endpoint leaves URL empty, which New refuses.
func FromEnv(getenv func(string) string) (Config, error) {
	var errs []error
	get := func(name string) (string, string) {
		for _, n := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return n, v
			}
		}
		return "", ""
	}
	var c Config
	switch n, v := get("ENDPOINT"); {
	case n == "":
		c.URL = DefaultEndpoint
	default:
		u, err := endpointURL(v, n == "OTEL_EXPORTER_OTLP_ENDPOINT")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		c.URL = u
	}
	if n, v := get("HEADERS"); n != "" {
		h, err := ParseHeaders(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		c.Headers = h
	}
	if n, v := get("TIMEOUT"); n != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(time.Hour/time.Millisecond) {
			errs = append(errs, fmt.Errorf("%s %q: not a number of milliseconds from 1 to 3600000; %s used", n, v, DefaultTimeout))
		} else {
			c.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if n, v := get("COMPRESSION"); n != "" {
		switch strings.ToLower(v) {
		case "gzip":
			c.Gzip = true
		case "none":
		default:
			errs = append(errs, fmt.Errorf("%s %q: not gzip or none; none used", n, v))
		}
	}
	_, c.CAFile = get("CERTIFICATE")
	_, c.CertFile = get("CLIENT_CERTIFICATE")
	_, c.KeyFile = get("CLIENT_KEY")
	return c, errors.Join(errs...)
}

// endpointURL checks an endpoint and returns the URL to post to: base
// gets "v1/traces" added to its path.
func endpointURL(v string, base bool) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("not an http:// or https:// URL with a host")
	}
	switch {
	case base && strings.HasSuffix(u.Path, "/"):
		u.Path += "v1/traces"
	case base:
		u.Path += "/v1/traces"
	case u.Path == "":
		u.Path = "/"
	}
	u.RawPath = "" // Path is the decoded form; let String escape it again
	return u.String(), nil
}

// ParseHeaders reads headers written as OTEL_EXPORTER_OTLP_HEADERS writes
// them: "key=value" pairs separated by commas, keys and values
// percent-decoded, spaces around them trimmed. A malformed pair is left
// out and named in the error by its position (and its key once it has
// one), never by its value.
func ParseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	var errs []error
	for i, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("entry %d: not key=value; left out", i+1))
			continue
		}
		key, err := url.PathUnescape(strings.TrimSpace(k))
		if err != nil || !validHeaderName(key) {
			errs = append(errs, fmt.Errorf("entry %d: not a header name; left out", i+1))
			continue
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil || !validHeaderValue(val) {
			errs = append(errs, fmt.Errorf("entry %d (%s): the value is not percent-encoded text; left out", i+1, http.CanonicalHeaderKey(key)))
			continue
		}
		h.Add(key, val)
	}
	return h, errors.Join(errs...)
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s can be sent as a header value: no
// control characters but tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
