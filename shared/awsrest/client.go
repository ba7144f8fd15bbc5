package awsrest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"

	"github.com/stepline/stepline/shared/awsenv"
)

// DefaultMaxAttempts is how many times a Client tries a request that fails
// for a reason a retry can fix (transport errors, 5xx answers, throttling),
// unless aws.Config's RetryMaxAttempts says otherwise.
const DefaultMaxAttempts = 3

// DefaultMaxBody is the largest answer body a Client reads when the
// request sets no bound.
const DefaultMaxBody = 8 << 20

// ErrBodyTooLarge is returned, wrapped, for an answer whose body exceeds
// the request's bound.
var ErrBodyTooLarge = errors.New("answer body too large")

// Service describes an AWS service to a Client.
type Service struct {
	// SDKID is the service's SDK ID, which names its endpoint setting for
	// awsenv.Endpoint: "Bedrock Runtime" is AWS_ENDPOINT_URL_BEDROCK_RUNTIME.
	SDKID string
	// SigningName is the service's name in the SigV4 credential scope.
	SigningName string
	// EndpointPrefix is the first label of the regional endpoint's host,
	// https://<prefix>.<region>.amazonaws.com.
	EndpointPrefix string
	// S3Signing signs as Amazon S3 expects: the path as sent (not escaped
	// a second time) and the payload's hash in X-Amz-Content-Sha256.
	S3Signing bool
}

// Client sends signed requests to one AWS service. Safe for concurrent use.
type Client struct {
	// Backoff returns how long to wait before retry n (1 for the first
	// retry). New sets a jittered exponential backoff; replace it, if at
	// all, before the first request.
	Backoff func(retry int) time.Duration

	svc        Service
	endpoint   url.URL
	configured bool // the endpoint comes from configuration
	region     string
	creds      aws.CredentialsProvider
	http       aws.HTTPClient
	signer     *v4.Signer
	attempts   int
	now        func() time.Time
}

// New returns a client for svc that uses cfg's region, credentials, HTTP
// client and RetryMaxAttempts. Its endpoint is the one configured in cfg
// for svc.SDKID (awsenv.Endpoint), else the regional one:
// https://<svc.EndpointPrefix>.<region>.amazonaws.com (amazonaws.com.cn in
// China).
func New(cfg aws.Config, svc Service) (*Client, error) {
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("%s client: no credentials in the AWS configuration", svc.SDKID)
	}
	if !hostLabel(cfg.Region) {
		return nil, fmt.Errorf("%s client: region %q is not a valid region name", svc.SDKID, cfg.Region)
	}
	endpoint := awsenv.Endpoint(cfg, svc.SDKID)
	configured := endpoint != ""
	if !configured {
		domain := "amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			domain = "amazonaws.com.cn"
		}
		endpoint = "https://" + svc.EndpointPrefix + "." + cfg.Region + "." + domain
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%s client: endpoint %q is not an http or https URL", svc.SDKID, endpoint)
	}
	c := &Client{
		Backoff:    Backoff,
		svc:        svc,
		endpoint:   *u,
		configured: configured,
		region:     cfg.Region,
		creds:      cfg.Credentials,
		http:       cfg.HTTPClient,
		signer:     v4.NewSigner(),
		attempts:   cfg.RetryMaxAttempts,
		now:        time.Now,
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.attempts <= 0 {
		c.attempts = DefaultMaxAttempts
	}
	return c, nil
}

// Endpoint returns the URL requests are sent to, and whether it was
// configured (true) or is the service's regional endpoint (false).
func (c *Client) Endpoint() (url.URL, bool) { return c.endpoint, c.configured }

// Backoff waits a random time up to 100 ms × 2^(retry-1), at most 2 s.
func Backoff(retry int) time.Duration {
	limit := min(100*time.Millisecond<<min(retry-1, 10), 2*time.Second)
	return rand.N(limit) + 1
}

// Request is one call of an operation.
type Request struct {
	Method string
	// Path is the operation's path, escaped (see EscapePath), below the
	// endpoint's own path; it starts with "/".
	Path string
	// HostPrefix is put before the endpoint's host ("bucket." for S3
	// virtual-hosted addressing).
	HostPrefix string
	Header     http.Header
	Body       []byte
	// MaxBody bounds the answer body read; 0 means DefaultMaxBody.
	MaxBody int64
	// Verify, when set, checks a 2xx answer before Do returns it (a
	// checksum, say). An answer it rejects counts as a failed attempt that
	// a retry may fix; the last one's error is returned.
	Verify func(*Response) error
}

// Response is a successful (2xx) answer, read whole.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Do signs and sends req, retrying transport errors, 5xx answers and
// throttling up to the configured number of attempts in all. An answer
// other than 2xx is a *ResponseError; a body beyond req.MaxBody wraps
// ErrBodyTooLarge; other errors are transport, credential or context
// errors.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	if !strings.HasPrefix(req.Path, "/") {
		return nil, fmt.Errorf("%s %s: path must start with /", req.Method, req.Path)
	}
	sum := sha256.Sum256(req.Body)
	payloadHash := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		resp, retry, err := c.send(ctx, req, payloadHash)
		if err == nil {
			return resp, nil
		}
		if !retry || attempt >= c.attempts || ctx.Err() != nil {
			return nil, err
		}
		t := time.NewTimer(c.Backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// send makes one attempt. retry reports whether a failure is one a retry
// may fix.
func (c *Client) send(ctx context.Context, req Request, payloadHash string) (resp *Response, retry bool, err error) {
	r, err := c.request(ctx, req, payloadHash)
	if err != nil {
		return nil, false, err
	}
	hr, err := c.http.Do(r)
	if err != nil {
		return nil, ctx.Err() == nil, err
	}
	defer hr.Body.Close()
	limit := req.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if hr.StatusCode/100 != 2 {
		e := responseError(hr, limit)
		return nil, retryable(e), e
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, limit+1))
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("%s %s: read answer: %w", req.Method, r.URL.Redacted(), err)
	}
	if int64(len(body)) > limit {
		return nil, false, fmt.Errorf("%s %s: %w (more than %d bytes)", req.Method, r.URL.Redacted(), ErrBodyTooLarge, limit)
	}
	resp = &Response{StatusCode: hr.StatusCode, Header: hr.Header, Body: body}
	if req.Verify != nil {
		if err := req.Verify(resp); err != nil {
			return nil, true, fmt.Errorf("%s %s: %w", req.Method, r.URL.Redacted(), err)
		}
	}
	return resp, false, nil
}

// request builds and signs the HTTP request of one attempt.
func (c *Client) request(ctx context.Context, req Request, payloadHash string) (*http.Request, error) {
	u := c.endpoint
	u.Host = req.HostPrefix + u.Host
	u.RawPath = strings.TrimSuffix(c.endpoint.EscapedPath(), "/") + req.Path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("%s %s: path is not escaped: %w", req.Method, req.Path, err)
	}
	u.Path = p
	r, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	for k, vs := range req.Header {
		r.Header[k] = append([]string(nil), vs...)
	}
	if err := c.sign(ctx, r, payloadHash, c.now()); err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	return r, nil
}

// sign adds the SigV4 Authorization header (and X-Amz-Date, the session
// token and, for S3, X-Amz-Content-Sha256) to r.
func (c *Client) sign(ctx context.Context, r *http.Request, payloadHash string, at time.Time) error {
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if c.svc.S3Signing {
		r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	}
	err = c.signer.SignHTTP(ctx, creds, r, payloadHash, c.svc.SigningName, c.region, at, func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = c.svc.S3Signing
	})
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	return nil
}

// EscapePath escapes s for a URL path, leaving '/' as it is when keepSlash
// is set: every byte but the unreserved characters A-Z a-z 0-9 - _ . ~ is
// percent-encoded, as the AWS SDKs encode path members.
func EscapePath(s string, keepSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if unreserved(ch) || (keepSlash && ch == '/') {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[ch>>4])
		b.WriteByte(hexDigits[ch&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}

// hostLabel reports whether s can stand in a host name: letters, digits
// and inner hyphens.
func hostLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ResponseError is an error answer from an AWS service. It implements
// smithy.APIError. Code is the error's name with any namespace removed
// ("ThrottlingException", "NoSuchKey"); it is "" when the answer named
// none.
type ResponseError struct {
	StatusCode int
	Code       string
	Message    string
	// Body is the answer's body, up to the request's bound. Some errors
	// carry data besides the message (DynamoDB's failed condition can
	// return the item); Error never includes it.
	Body []byte
}

var _ smithy.APIError = (*ResponseError)(nil)

func (e *ResponseError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// ErrorCode implements smithy.APIError.
func (e *ResponseError) ErrorCode() string { return e.Code }

// ErrorMessage implements smithy.APIError.
func (e *ResponseError) ErrorMessage() string { return e.Message }

// ErrorFault implements smithy.APIError.
func (e *ResponseError) ErrorFault() smithy.ErrorFault {
	switch {
	case e.StatusCode >= 500:
		return smithy.FaultServer
	case e.StatusCode >= 400:
		return smithy.FaultClient
	}
	return smithy.FaultUnknown
}

// throttled reports whether the answer asks the caller to slow down.
func (e *ResponseError) throttled() bool {
	switch e.Code {
	case "TooManyUpdates", "TooManyRequestsException", "RequestLimitExceeded", "SlowDown",
		"ProvisionedThroughputExceededException":
		return true
	}
	return strings.Contains(e.Code, "Throttl") || e.StatusCode == http.StatusTooManyRequests
}

// retryable reports whether an error answer may go away on its own.
func retryable(e *ResponseError) bool {
	switch e.Code {
	case "RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete":
		return true
	}
	return e.StatusCode >= 500 || e.throttled()
}

// responseError reads an error answer of any of the AWS protocols. The
// error's name comes from the X-Amzn-ErrorType header, else the body: the
// JSON members __type, code or Code, or the XML element Code. A namespace
// ("com.amazonaws.ssm#") and a trailing ":<uri>" are removed.
func responseError(resp *http.Response, limit int64) *ResponseError {
	e := &ResponseError{StatusCode: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	e.Body = raw
	raw = bytes.TrimSpace(raw)
	var code string
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var doc struct {
			Type     string `json:"__type"`
			Code     string `json:"code"`
			CodeUp   string `json:"Code"`
			Message  string `json:"message"`
			MessageU string `json:"Message"`
		}
		_ = json.Unmarshal(raw, &doc)
		code = firstOf(doc.Type, doc.Code, doc.CodeUp)
		e.Message = firstOf(doc.Message, doc.MessageU)
	case len(raw) > 0 && raw[0] == '<':
		code = xmlElement(raw, "Code")
		e.Message = xmlElement(raw, "Message")
	}
	if h := resp.Header.Get("X-Amzn-ErrorType"); h != "" {
		code = h
	}
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	e.Code = code
	return e
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// xmlElement returns the text of the first <name> element in doc, with
// the predefined XML entities decoded. S3's error documents are flat, so
// this is all their parsing needs.
func xmlElement(doc []byte, name string) string {
	start := bytes.Index(doc, []byte("<"+name+">"))
	if start < 0 {
		return ""
	}
	rest := doc[start+len(name)+2:]
	end := bytes.Index(rest, []byte("</"+name+">"))
	if end < 0 {
		return ""
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&").Replace(string(rest[:end]))
}
