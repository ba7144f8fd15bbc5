package awsrest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"

	"github.com/stepline/stepline/shared/awsenv"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", SessionToken: "session-token"}

// testConfig is a configuration with static credentials, one attempt per
// request unless changed, and endpoint as the base endpoint when set.
func testConfig(endpoint string) aws.Config {
	cfg := aws.Config{
		Region:           "eu-west-1",
		Credentials:      credentials.NewStaticCredentialsProvider(testCreds.AccessKeyID, testCreds.SecretAccessKey, testCreds.SessionToken),
		RetryMaxAttempts: 1,
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	return cfg
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/eu-west-1/([a-z0-9-]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// checkSigned verifies r's Signature Version 4 Authorization header: its
// shape, the service it names, the headers it signs, and the signature,
// recomputed from the request as the server received it.
func checkSigned(r *http.Request, body []byte, service string, s3 bool, mustSign ...string) error {
	auth := r.Header.Get("Authorization")
	m := authHeader.FindStringSubmatch(auth)
	if m == nil {
		return fmt.Errorf("authorization header %q", auth)
	}
	if m[2] != service {
		return fmt.Errorf("signed for %q, want %q", m[2], service)
	}
	signed := strings.Split(m[3], ";")
	for _, h := range append([]string{"host", "x-amz-date", "x-amz-security-token"}, mustSign...) {
		if !slices.Contains(signed, h) {
			return fmt.Errorf("header %s is not signed (%s)", h, m[3])
		}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != m[1] {
		return fmt.Errorf("X-Amz-Date %q does not match the credential scope %s", r.Header.Get("X-Amz-Date"), m[1])
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if s3 && r.Header.Get("X-Amz-Content-Sha256") != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 %q, want the body's hash %s", r.Header.Get("X-Amz-Content-Sha256"), hash)
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	err = v4.NewSigner().SignHTTP(context.Background(), testCreds, again, hash, service, "eu-west-1", at, func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = s3
	})
	if err != nil {
		return err
	}
	if again.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature does not verify:\n got %s\nwant %s", auth, again.Header.Get("Authorization"))
	}
	return nil
}

// received is a request a test server saw.
type received struct {
	method, rawPath, host string
	header                http.Header
	body                  []byte
}

// fakeService answers with one handler per request (the last repeats)
// and records the requests.
type fakeService struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
}

func newFake(t *testing.T, handlers ...http.HandlerFunc) *fakeService {
	t.Helper()
	f := &fakeService{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, received{r.Method, r.URL.EscapedPath(), r.Host, r.Header.Clone(), body})
		f.mu.Unlock()
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeService) seen() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.requests...)
}

func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

var testService = Service{SDKID: "Bedrock Runtime", SigningName: "bedrock", EndpointPrefix: "bedrock-runtime"}

func TestDoSignsAndSends(t *testing.T) {
	f := newFake(t, reply(200, `{"ok":true}`, "Content-Type", "application/json"))
	c, err := New(testConfig(f.URL+"/base/"), testService)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	resp, err := c.Do(context.Background(), Request{Method: "POST", Path: "/model/" + EscapePath("m:0", false) + "/converse", Header: h, Body: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(resp.Body) != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("response = %d %q %v", resp.StatusCode, resp.Body, resp.Header)
	}
	got := f.seen()[0]
	if got.method != "POST" || got.rawPath != "/base/model/m%3A0/converse" || string(got.body) != `{"a":1}` {
		t.Errorf("request = %s %s %s", got.method, got.rawPath, got.body)
	}
	r, _ := http.NewRequest(got.method, "http://"+got.host+got.rawPath, nil)
	r.Header = got.header
	if err := checkSigned(r, got.body, "bedrock", false, "content-type"); err != nil {
		t.Error(err)
	}
	if got.header.Get("X-Amz-Content-Sha256") != "" {
		t.Error("X-Amz-Content-Sha256 set outside S3")
	}
}

// TestS3SigningKnownAnswer signs the GET Object example of the S3
// documentation ("Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk") and compares with its
// published signature.
func TestS3SigningKnownAnswer(t *testing.T) {
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
		BaseEndpoint: aws.String("https://s3.amazonaws.com"),
	}
	c, err := New(cfg, Service{SDKID: "S3", SigningName: "s3", EndpointPrefix: "s3", S3Signing: true})
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC) }
	h := http.Header{}
	h.Set("Range", "bytes=0-9")
	sum := sha256.Sum256(nil)
	r, err := c.request(context.Background(), Request{Method: "GET", Path: "/test.txt", HostPrefix: "examplebucket.", Header: h}, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	const want = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := r.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization\n got %s\nwant %s", got, want)
	}
	if r.URL.String() != "https://examplebucket.s3.amazonaws.com/test.txt" {
		t.Errorf("URL = %s", r.URL)
	}
}

func TestDoRetries(t *testing.T) {
	throttled := reply(400, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
	cases := []struct {
		name     string
		handlers []http.HandlerFunc
		requests int
		ok       bool
		code     string // of the final *ResponseError
	}{
		{name: "5xx then success", handlers: []http.HandlerFunc{reply(500, `{"message":"oops"}`), reply(200, `{}`)}, requests: 2, ok: true},
		{name: "throttled every time", handlers: []http.HandlerFunc{throttled}, requests: DefaultMaxAttempts, code: "ThrottlingException"},
		{name: "429 without a code", handlers: []http.HandlerFunc{reply(429, ``)}, requests: DefaultMaxAttempts},
		{name: "S3 slow down", handlers: []http.HandlerFunc{reply(503, `<Error><Code>SlowDown</Code></Error>`)}, requests: DefaultMaxAttempts, code: "SlowDown"},
		{name: "request timeout then success", handlers: []http.HandlerFunc{reply(408, `{"__type":"RequestTimeoutException"}`), reply(200, `{}`)}, requests: 2, ok: true},
		{name: "client error is final", handlers: []http.HandlerFunc{reply(400, `{"__type":"ValidationException","message":"bad"}`)}, requests: 1, code: "ValidationException"},
		{name: "not found is final", handlers: []http.HandlerFunc{reply(404, `<Error><Code>NoSuchKey</Code></Error>`)}, requests: 1, code: "NoSuchKey"},
		{name: "DynamoDB throughput exceeded", handlers: []http.HandlerFunc{reply(400, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}`), reply(200, `{}`)}, requests: 2, ok: true},
		{name: "DynamoDB failed condition is final", handlers: []http.HandlerFunc{reply(400, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}`)}, requests: 1, code: "ConditionalCheckFailedException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, c.handlers...)
			cfg := testConfig(f.URL)
			cfg.RetryMaxAttempts = 0 // the default
			cl, err := New(cfg, testService)
			if err != nil {
				t.Fatal(err)
			}
			var waits []int
			cl.Backoff = func(retry int) time.Duration { waits = append(waits, retry); return 0 }
			_, err = cl.Do(context.Background(), Request{Method: "POST", Path: "/x"})
			if n := len(f.seen()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
			if len(waits) != c.requests-1 {
				t.Errorf("backoff before retries %v", waits)
			}
			if c.ok {
				if err != nil {
					t.Fatalf("err = %v, want success", err)
				}
				return
			}
			var re *ResponseError
			if !errors.As(err, &re) || re.Code != c.code {
				t.Fatalf("err = %v, want a ResponseError %q", err, c.code)
			}
		})
	}
}

func TestDoVerify(t *testing.T) {
	errBad := errors.New("checksum mismatch")
	verify := func(r *Response) error {
		if string(r.Body) != "good" {
			return errBad
		}
		return nil
	}
	cases := []struct {
		name     string
		bodies   []string
		requests int
		ok       bool
	}{
		{"accepted at once", []string{"good"}, 1, true},
		{"rejected, then accepted", []string{"bad", "good"}, 2, true},
		{"rejected every time", []string{"bad"}, DefaultMaxAttempts, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hs []http.HandlerFunc
			for _, b := range c.bodies {
				hs = append(hs, reply(200, b))
			}
			f := newFake(t, hs...)
			cfg := testConfig(f.URL)
			cfg.RetryMaxAttempts = 0
			cl, _ := New(cfg, testService)
			cl.Backoff = func(int) time.Duration { return 0 }
			resp, err := cl.Do(context.Background(), Request{Method: "POST", Path: "/", Verify: verify})
			if n := len(f.seen()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
			switch {
			case c.ok && (err != nil || string(resp.Body) != "good"):
				t.Errorf("Do = %v, %v; want the good answer", resp, err)
			case !c.ok && !errors.Is(err, errBad):
				t.Errorf("err = %v, want the verification's error", err)
			}
		})
	}
}

func TestDoTransportErrors(t *testing.T) {
	t.Run("unreachable, retried", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		cfg := testConfig(srv.URL)
		cfg.RetryMaxAttempts = 2
		c, _ := New(cfg, testService)
		var waits []int
		c.Backoff = func(retry int) time.Duration { waits = append(waits, retry); return 0 }
		if _, err := c.Do(context.Background(), Request{Method: "GET", Path: "/"}); err == nil {
			t.Fatal("no error from a closed server")
		}
		if !slices.Equal(waits, []int{1}) {
			t.Errorf("backoff before retries %v, want [1]", waits)
		}
	})
	t.Run("deadline, not retried", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		cfg := testConfig(f.URL)
		cfg.RetryMaxAttempts = 3
		c, _ := New(cfg, testService)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Do(ctx, Request{Method: "GET", Path: "/"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the deadline", err)
		}
		if n := len(f.seen()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("body beyond the bound", func(t *testing.T) {
		f := newFake(t, reply(200, strings.Repeat("x", 101)))
		c, _ := New(testConfig(f.URL), testService)
		_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/", MaxBody: 100})
		if !errors.Is(err, ErrBodyTooLarge) {
			t.Errorf("err = %v, want ErrBodyTooLarge", err)
		}
		if resp, err := c.Do(context.Background(), Request{Method: "GET", Path: "/", MaxBody: 101}); err != nil || len(resp.Body) != 101 {
			t.Errorf("body at the bound: %v", err)
		}
	})
	t.Run("path without a leading slash", func(t *testing.T) {
		c, _ := New(testConfig("http://127.0.0.1:1"), testService)
		if _, err := c.Do(context.Background(), Request{Method: "GET", Path: "x"}); err == nil || !strings.Contains(err.Error(), "must start with /") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestResponseError(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		header  []string
		body    string
		code    string
		message string
	}{
		{"restJson1 header", 429, []string{"X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}, `{"message":"Too many requests"}`, "ThrottlingException", "Too many requests"},
		{"JSON __type with namespace", 400, nil, `{"__type":"com.amazonaws.ssm#ParameterNotFound","Message":"no"}`, "ParameterNotFound", "no"},
		{"JSON code member", 400, nil, `{"code":"ValidationException","message":"bad"}`, "ValidationException", "bad"},
		{"header wins over body", 403, []string{"X-Amzn-ErrorType", "AccessDeniedException"}, `{"__type":"Other"}`, "AccessDeniedException", ""},
		{"S3 XML", 404, nil, `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>NoSuchKey</Code><Message>The key &apos;a&amp;b&apos; does not exist.</Message><Key>a&amp;b</Key></Error>`, "NoSuchKey", "The key 'a&b' does not exist."},
		{"HTML from a proxy", 502, nil, `<html>bad gateway</html>`, "", ""},
		{"empty", 503, nil, ``, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(c.header); i += 2 {
				h.Set(c.header[i], c.header[i+1])
			}
			e := responseError(&http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(strings.NewReader(c.body))}, 1<<20)
			if e.StatusCode != c.status || e.Code != c.code || e.Message != c.message {
				t.Errorf("= %+v, want %d %q %q", e, c.status, c.code, c.message)
			}
			if string(e.Body) != c.body {
				t.Errorf("Body = %q, want the answer's body %q", e.Body, c.body)
			}
			if c.body != "" && strings.Contains(e.Error(), c.body) {
				t.Errorf("Error() = %q repeats the body", e.Error())
			}
			var api smithy.APIError = e
			if api.ErrorCode() != c.code {
				t.Errorf("ErrorCode = %q", api.ErrorCode())
			}
			if want := map[bool]smithy.ErrorFault{true: smithy.FaultServer, false: smithy.FaultClient}[c.status >= 500]; api.ErrorFault() != want {
				t.Errorf("ErrorFault = %v, want %v", api.ErrorFault(), want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	env := func(extra ...string) aws.Config {
		cfg, err := awsenv.Load(append([]string{"AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=x"}, extra...))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cn := testConfig("")
	cn.Region = "cn-north-1"
	badRegion := testConfig("")
	badRegion.Region = "eu-west-1.evil.example/"
	cases := []struct {
		name       string
		cfg        aws.Config
		want       string // endpoint, or a part of the error
		configured bool
	}{
		{"regional endpoint", testConfig(""), "https://bedrock-runtime.eu-west-1.amazonaws.com", false},
		{"China", cn, "https://bedrock-runtime.cn-north-1.amazonaws.com.cn", false},
		{"base endpoint with a path", testConfig("http://localhost:4566/aws"), "http://localhost:4566/aws", true},
		{"per-service endpoint", env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:9001"), "http://127.0.0.1:9001", true},
		{"per-service wins over global", env("AWS_ENDPOINT_URL=http://127.0.0.1:4566", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:9001"), "http://127.0.0.1:9001", true},
		{"other service's endpoint ignored", env("AWS_ENDPOINT_URL_S3=http://127.0.0.1:9001"), "https://bedrock-runtime.eu-west-1.amazonaws.com", false},
		{"no credentials", aws.Config{Region: "eu-west-1"}, "no credentials", false},
		{"no region", aws.Config{Credentials: testConfig("").Credentials}, `region "" is not a valid region name`, false},
		{"region that is not a host label", badRegion, "not a valid region name", false},
		{"endpoint that is not a URL", testConfig("localhost:4566"), `endpoint "localhost:4566" is not an http or https URL`, false},
		{"endpoint with a query", testConfig("http://localhost:4566/?x=1"), "is not an http or https URL", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(c.cfg, testService)
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("err = %v, want %q", err, c.want)
				}
				return
			}
			u, configured := cl.Endpoint()
			if u.String() != c.want || configured != c.configured {
				t.Errorf("endpoint = %s (configured %v), want %s (%v)", u.String(), configured, c.want, c.configured)
			}
		})
	}
}

func TestEscapePath(t *testing.T) {
	cases := []struct {
		in        string
		keepSlash bool
		want      string
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", false, "us.anthropic.claude-sonnet-4-20250514-v1%3A0"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3", false, "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.meta.llama3"},
		{"run-1/fan_0/report.md", true, "run-1/fan_0/report.md"},
		{"a b+c~é", true, "a%20b%2Bc~%C3%A9"},
	}
	for _, c := range cases {
		if got := EscapePath(c.in, c.keepSlash); got != c.want {
			t.Errorf("EscapePath(%q, %v) = %q, want %q", c.in, c.keepSlash, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for retry, limit := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 10: 2 * time.Second, 100: 2 * time.Second} {
		for range 50 {
			if d := Backoff(retry); d <= 0 || d > limit {
				t.Fatalf("Backoff(%d) = %v, want in (0, %v]", retry, d, limit)
			}
		}
	}
}
