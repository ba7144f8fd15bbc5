package secret

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"

	"github.com/stepline/stepline/shared/awsenv"

	"github.com/stepline/stepline/shared/fault"
)

// fakeSM is a Secrets Manager holding fixed secrets, with optional errors
// and a gate that holds calls until released.
type fakeSM struct {
	secrets map[string]string
	binary  map[string][]byte
	errs    map[string]error
	gate    chan struct{}
	calls   atomic.Int32
}

func (f *fakeSM) GetSecretValue(ctx context.Context, id string) (SecretValue, error) {
	f.calls.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return SecretValue{}, ctx.Err()
		}
	}
	if err := f.errs[id]; err != nil {
		return SecretValue{}, err
	}
	if b, ok := f.binary[id]; ok {
		return SecretValue{Binary: b}, nil
	}
	s, ok := f.secrets[id]
	if !ok {
		return SecretValue{}, &ResponseError{StatusCode: 400, Code: "ResourceNotFoundException", Message: "Secrets Manager can't find the specified secret."}
	}
	return SecretValue{String: s}, nil
}

type fakeSSM struct {
	params  map[string]string
	decrypt []bool
}

func (f *fakeSSM) GetParameter(_ context.Context, name string, decrypt bool) (string, error) {
	f.decrypt = append(f.decrypt, decrypt)
	v, ok := f.params[name]
	if !ok {
		return "", &ResponseError{StatusCode: 400, Code: "ParameterNotFound"}
	}
	return v, nil
}

func mustRefs(t *testing.T, s string) map[string]Ref {
	t.Helper()
	refs, err := ParseRefs(s)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

func TestParseRefs(t *testing.T) {
	refs := mustRefs(t, "A=secretsmanager:prod/openai#api_key,\n B = ssm:/stepline/slack ,,C=secretsmanager:arn:aws:secretsmanager:eu-west-1:1:secret:x-AbC")
	want := map[string]string{
		"A": "secretsmanager:prod/openai#api_key",
		"B": "ssm:/stepline/slack",
		"C": "secretsmanager:arn:aws:secretsmanager:eu-west-1:1:secret:x-AbC",
	}
	if len(refs) != len(want) {
		t.Fatalf("refs = %v", refs)
	}
	for n, w := range want {
		if refs[n].String() != w {
			t.Errorf("%s = %q, want %q", n, refs[n].String(), w)
		}
	}
	bad := []struct{ in, want string }{
		{"A", "want NAME=ref"},
		{"1A=ssm:/x", "not a valid secret name"},
		{"A=vault:x", `unknown store "vault"`},
		{"A=ssm:", "empty id"},
		{"A=secretsmanager:x#", "empty key"},
		{"A=ssm:/x,A=ssm:/y", "given twice"},
		{"A=nocolon", "want secretsmanager:<id>"},
	}
	for _, b := range bad {
		if _, err := ParseRefs(b.in); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseRefs(%q) err = %v, want %q", b.in, err, b.want)
		}
	}
}

func TestAWSResolve(t *testing.T) {
	sm := &fakeSM{
		secrets: map[string]string{
			"plain":   "sk-plain-value",
			"json":    `{"api_key":"sk-json-value","port":5432,"nested":{"a":1},"empty":""}`,
			"notjson": "sk-not-json-value",
		},
		binary: map[string][]byte{"bin": []byte("sk-binary-value"), "blob": {0xff, 0xfe}},
		errs: map[string]error{
			"throttled": &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"},
			"toomany":   &ResponseError{StatusCode: 429},
			"badgate":   &ResponseError{StatusCode: 502},
			"denied":    &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"},
			"internal":  &smithy.GenericAPIError{Code: "InternalServiceError", Message: "oops"},
			"network":   errors.New("dial tcp 10.0.0.1:443: connection refused"),
			"slow":      context.DeadlineExceeded,
		},
	}
	params := &fakeSSM{params: map[string]string{"/stepline/slack": "https://hooks.example/T0/B0/xyz", "/json": `{"k":"v-from-ssm"}`}}
	refs := mustRefs(t, `PLAIN=secretsmanager:plain, KEY=secretsmanager:json#api_key, PORT=secretsmanager:json#port,
NESTED=secretsmanager:json#nested, EMPTYKEY=secretsmanager:json#empty, NOKEY=secretsmanager:json#nope,
NOTJSON=secretsmanager:notjson#k, BIN=secretsmanager:bin, BLOB=secretsmanager:blob, GONE=secretsmanager:gone,
THROTTLED=secretsmanager:throttled, TOOMANY=secretsmanager:toomany, BADGATE=secretsmanager:badgate, DENIED=secretsmanager:denied, INTERNAL=secretsmanager:internal,
NETWORK=secretsmanager:network, SLOW=secretsmanager:slow, SLACK=ssm:/stepline/slack, SSMJSON=ssm:/json#k, NOPARAM=ssm:/nope`)
	a, err := NewAWS(AWSConfig{SecretsManager: sm, SSM: params, Refs: refs,
		Fallback: Env(func(k string) string { return map[string]string{"LOCAL": "from-env"}[k] })})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		fault      string
		msg        string
	}{
		{name: "PLAIN", want: "sk-plain-value"},
		{name: "KEY", want: "sk-json-value"},
		{name: "PORT", want: "5432"},
		{name: "BIN", want: "sk-binary-value"},
		{name: "SLACK", want: "https://hooks.example/T0/B0/xyz"},
		{name: "SSMJSON", want: "v-from-ssm"},
		{name: "LOCAL", want: "from-env"},
		{name: "NESTED", fault: fault.NameConfigError, msg: "not a string, number or boolean"},
		{name: "EMPTYKEY", fault: fault.NameConfigError, msg: `key "empty" of secretsmanager:json is empty`},
		{name: "NOKEY", fault: fault.NameConfigError, msg: `key "nope" not found in secretsmanager:json`},
		{name: "NOTJSON", fault: fault.NameConfigError, msg: "is not a JSON object"},
		{name: "BLOB", fault: fault.NameConfigError, msg: "holds no text value"},
		{name: "GONE", fault: fault.NameConfigError, msg: "ResourceNotFoundException"},
		{name: "NOPARAM", fault: fault.NameConfigError, msg: "ParameterNotFound"},
		{name: "DENIED", fault: fault.NameConfigError, msg: "AccessDeniedException"},
		{name: "THROTTLED", fault: fault.NameRateLimited, msg: "ThrottlingException"},
		{name: "TOOMANY", fault: fault.NameRateLimited, msg: "HTTP 429"},
		{name: "BADGATE", fault: fault.NameExecutorUnavailable, msg: "HTTP 502"},
		{name: "INTERNAL", fault: fault.NameExecutorUnavailable, msg: "InternalServiceError"},
		{name: "NETWORK", fault: fault.NameExecutorUnavailable, msg: "store unreachable"},
		{name: "SLOW", fault: fault.NameExecutorTimeout, msg: "deadline"},
		{name: "UNMAPPED", fault: fault.NameConfigError, msg: `secret "UNMAPPED" is not set`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := a.Resolve(context.Background(), c.name)
			if c.fault == "" {
				if err != nil || got != c.want {
					t.Fatalf("Resolve = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if fault.Name(err) != c.fault || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v (%s), want %s containing %q", err, fault.Name(err), c.fault, c.msg)
			}
			if !strings.Contains(err.Error(), `"`+c.name+`"`) {
				t.Errorf("error does not name the secret: %v", err)
			}
			for _, v := range []string{"sk-json-value", "sk-not-json-value", "5432"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error leaks a secret value: %v", err)
				}
			}
		})
	}
	for _, d := range params.decrypt {
		if !d {
			t.Error("GetParameter called without decryption")
		}
	}
}

func TestAWSCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	sm := &fakeSM{secrets: map[string]string{"j": `{"a":"value-a","b":"value-b"}`}}
	a, err := NewAWS(AWSConfig{SecretsManager: sm, Refs: mustRefs(t, "A=secretsmanager:j#a,B=secretsmanager:j#b"), TTL: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"A", "B", "A"} {
		if _, err := a.Resolve(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := sm.calls.Load(); got != 1 {
		t.Errorf("calls within TTL = %d, want 1 (one secret, two keys)", got)
	}
	now = now.Add(61 * time.Second)
	sm.secrets["j"] = `{"a":"rotated-a"}`
	if v, _ := a.Resolve(ctx, "A"); v != "rotated-a" {
		t.Errorf("after TTL A = %q, want the rotated value", v)
	}
	if got := sm.calls.Load(); got != 2 {
		t.Errorf("calls after TTL = %d, want 2", got)
	}

	noCache, _ := NewAWS(AWSConfig{SecretsManager: sm, Refs: mustRefs(t, "A=secretsmanager:j#a"), TTL: -1})
	before := sm.calls.Load()
	noCache.Resolve(ctx, "A")
	noCache.Resolve(ctx, "A")
	if got := sm.calls.Load() - before; got != 2 {
		t.Errorf("negative TTL: calls = %d, want 2", got)
	}
}

func TestAWSConcurrentLookupsShareOneRequest(t *testing.T) {
	sm := &fakeSM{secrets: map[string]string{"s": "shared-value"}, gate: make(chan struct{})}
	a, err := NewAWS(AWSConfig{SecretsManager: sm, Refs: mustRefs(t, "S=secretsmanager:s")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], _ = a.Resolve(context.Background(), "S")
		}(i)
	}
	// Wait until the first request is in flight, give the others time to
	// queue behind it, then let it answer.
	for sm.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(sm.gate)
	wg.Wait()
	for i, r := range results {
		if r != "shared-value" {
			t.Errorf("result %d = %q", i, r)
		}
	}
	if got := sm.calls.Load(); got != 1 {
		t.Errorf("GetSecretValue calls = %d, want 1", got)
	}
}

func TestNewAWSValidates(t *testing.T) {
	cases := []struct {
		name string
		cfg  AWSConfig
		want string
	}{
		{"secrets manager client missing", AWSConfig{Refs: map[string]Ref{"A": {Source: SourceSecretsManager, ID: "x"}}}, "no Secrets Manager client"},
		{"ssm client missing", AWSConfig{Refs: map[string]Ref{"A": {Source: SourceSSM, ID: "/x"}}}, "no SSM client"},
		{"bad name", AWSConfig{SSM: &fakeSSM{}, Refs: map[string]Ref{"a-b": {Source: SourceSSM, ID: "/x"}}}, "not a valid secret name"},
		{"bad store", AWSConfig{Refs: map[string]Ref{"A": {Source: "vault", ID: "x"}}}, "unknown store"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewAWS(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "example-secret-key", SessionToken: "example-session-token"}

func testConfig(endpoint string) aws.Config {
	cfg := aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider(testCreds.AccessKeyID, testCreds.SecretAccessKey, testCreds.SessionToken),
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	return cfg
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/eu-west-1/([a-z]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// checkSigned verifies r's Signature Version 4 Authorization header: its
// shape, the signed headers, and the signature itself, recomputed from
// the request as received.
func checkSigned(r *http.Request, body []byte, service string) error {
	auth := r.Header.Get("Authorization")
	m := authHeader.FindStringSubmatch(auth)
	if m == nil {
		return fmt.Errorf("authorization header %q", auth)
	}
	if m[2] != service {
		return fmt.Errorf("signed for %q, want %q", m[2], service)
	}
	signed := strings.Split(m[3], ";")
	for _, h := range []string{"content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"} {
		if !slices.Contains(signed, h) {
			return fmt.Errorf("header %s is not signed (%s)", h, m[3])
		}
	}
	if r.Header.Get("X-Amz-Security-Token") != testCreds.SessionToken {
		return fmt.Errorf("session token %q", r.Header.Get("X-Amz-Security-Token"))
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != m[1] {
		return fmt.Errorf("X-Amz-Date %q does not match the credential scope %s", r.Header.Get("X-Amz-Date"), m[1])
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), testCreds, again, hex.EncodeToString(sum[:]), service, "eu-west-1", at); err != nil {
		return err
	}
	if again.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature does not verify:\n got %s\nwant %s", auth, again.Header.Get("Authorization"))
	}
	return nil
}

// fakeAWS answers Secrets Manager and SSM calls over the JSON 1.1
// protocol; answer decides the reply to each operation's input.
func fakeAWS(t *testing.T, service, target string, answer func(w http.ResponseWriter, r *http.Request, in map[string]any)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var in map[string]any
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/":
			t.Errorf("%s %s, want POST /", r.Method, r.URL.Path)
		case r.Header.Get("Content-Type") != "application/x-amz-json-1.1":
			t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		case r.Header.Get("X-Amz-Target") != target:
			t.Errorf("X-Amz-Target %q, want %q", r.Header.Get("X-Amz-Target"), target)
		case json.Unmarshal(body, &in) != nil:
			t.Errorf("body is not JSON: %s", body)
		default:
			if err := checkSigned(r, body, service); err != nil {
				t.Error(err)
			} else {
				answer(w, r, in)
				return
			}
		}
		http.Error(w, `{"__type":"IncompleteSignatureException"}`, http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func noBackoff(c *jsonClient) { c.rest.Backoff = func(int) time.Duration { return 0 } }

func TestSecretsManagerClient(t *testing.T) {
	srv, calls := fakeAWS(t, "secretsmanager", "secretsmanager.GetSecretValue", func(w http.ResponseWriter, r *http.Request, in map[string]any) {
		if len(in) != 1 {
			t.Errorf("input %v, want only SecretId", in)
		}
		switch in["SecretId"] {
		case "prod/openai":
			fmt.Fprint(w, `{"ARN":"arn:aws:secretsmanager:eu-west-1:1:secret:prod/openai-AbC","Name":"prod/openai","SecretString":"{\"api_key\":\"sk-from-sm\"}","VersionId":"v1","VersionStages":["AWSCURRENT"],"CreatedDate":1.7e9}`)
		case "binary":
			fmt.Fprintf(w, `{"Name":"binary","SecretBinary":%q}`, base64.StdEncoding.EncodeToString([]byte("sk-binary")))
		case "empty":
			fmt.Fprint(w, `{"Name":"empty","SecretString":""}`)
		default:
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
		}
	})
	sm, err := NewSecretsManager(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		id   string
		want SecretValue
		code string
	}{
		{id: "prod/openai", want: SecretValue{String: `{"api_key":"sk-from-sm"}`}},
		{id: "binary", want: SecretValue{Binary: []byte("sk-binary")}},
		{id: "empty", want: SecretValue{}},
		{id: "gone", code: "ResourceNotFoundException"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			got, err := sm.GetSecretValue(ctx, c.id)
			if c.code != "" {
				var api smithy.APIError
				if !errors.As(err, &api) || api.ErrorCode() != c.code || api.ErrorMessage() != "Secrets Manager can't find the specified secret." {
					t.Fatalf("err = %v, want API error %s", err, c.code)
				}
				return
			}
			if err != nil || got.String != c.want.String || !bytes.Equal(got.Binary, c.want.Binary) || (got.Binary == nil) != (c.want.Binary == nil) {
				t.Fatalf("GetSecretValue = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	if calls.Load() != int32(len(cases)) {
		t.Errorf("%d requests for %d calls", calls.Load(), len(cases))
	}
}

func TestParameterStoreClient(t *testing.T) {
	srv, _ := fakeAWS(t, "ssm", "AmazonSSM.GetParameter", func(w http.ResponseWriter, r *http.Request, in map[string]any) {
		if in["WithDecryption"] != true {
			t.Errorf("input %v, want WithDecryption true", in)
		}
		switch in["Name"] {
		case "/stepline/slack":
			fmt.Fprint(w, `{"Parameter":{"ARN":"arn:aws:ssm:eu-west-1:1:parameter/stepline/slack","DataType":"text","Name":"/stepline/slack","Type":"SecureString","Value":"https://hooks.example/T0/B0/xyz","Version":3}}`)
		case "/novalue":
			fmt.Fprint(w, `{"Parameter":{"Name":"/novalue"}}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.ssm#ParameterNotFound"}`)
		}
	})
	ps, err := NewParameterStore(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := ps.GetParameter(ctx, "/stepline/slack", true); err != nil || v != "https://hooks.example/T0/B0/xyz" {
		t.Errorf("GetParameter = %q, %v", v, err)
	}
	if _, err := ps.GetParameter(ctx, "/novalue", true); !errors.Is(err, errNotText) {
		t.Errorf("parameter without a value: err = %v", err)
	}
	var api smithy.APIError
	if _, err := ps.GetParameter(ctx, "/nope", true); !errors.As(err, &api) || api.ErrorCode() != "ParameterNotFound" {
		t.Errorf("missing parameter: err = %v, want ParameterNotFound", err)
	}
}

// TestParametersByPath pages through GetParametersByPath (empty pages
// with a token included), and bounds the parameters and the pages.
func TestParametersByPath(t *testing.T) {
	var pages []string // the answers, in order; a page's token is its index+1
	srv, calls := fakeAWS(t, "ssm", "AmazonSSM.GetParametersByPath", func(w http.ResponseWriter, r *http.Request, in map[string]any) {
		if in["Path"] != "/stepline/Dep/pipelines" || in["Recursive"] != false || in["MaxResults"] != float64(10) {
			t.Errorf("input %v", in)
		}
		i := 0
		if tok, ok := in["NextToken"].(string); ok {
			fmt.Sscan(tok, &i)
		}
		fmt.Fprint(w, pages[i])
	})
	ps, err := NewParameterStore(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pages = []string{
		`{"Parameters":[{"Name":"/stepline/Dep/pipelines/00","Value":"s3://b/0","Version":1,"Type":"String"}],"NextToken":"1"}`,
		`{"Parameters":[],"NextToken":"2"}`,
		`{"Parameters":[{"Name":"/stepline/Dep/pipelines/01","Value":"s3://b/1"},{"Name":"/stepline/Dep/pipelines/core","Value":"s3://b/c"}]}`,
	}
	got, err := ps.ParametersByPath(ctx, "/stepline/Dep/pipelines", 3)
	want := map[string]string{"/stepline/Dep/pipelines/00": "s3://b/0", "/stepline/Dep/pipelines/01": "s3://b/1", "/stepline/Dep/pipelines/core": "s3://b/c"}
	if err != nil || !maps.Equal(got, want) || calls.Load() != 3 {
		t.Errorf("ParametersByPath = %v, %v in %d calls; want %v in 3", got, err, calls.Load(), want)
	}
	// One more than max: refused.
	if _, err := ps.ParametersByPath(ctx, "/stepline/Dep/pipelines", 2); err == nil || !strings.Contains(err.Error(), "more than 2 parameters") {
		t.Errorf("3 parameters with max 2: %v", err)
	}
	// A service answering the same token again, and one paging forever.
	pages = []string{`{"Parameters":[],"NextToken":"0"}`}
	if _, err := ps.ParametersByPath(ctx, "/stepline/Dep/pipelines", 3); err == nil || !strings.Contains(err.Error(), "same page token") {
		t.Errorf("a token repeated: %v", err)
	}
	pages = make([]string, maxPages+1)
	for i := range pages {
		pages[i] = fmt.Sprintf(`{"Parameters":[],"NextToken":"%d"}`, i+1)
	}
	before := calls.Load()
	if _, err := ps.ParametersByPath(ctx, "/stepline/Dep/pipelines", 3); err == nil || !strings.Contains(err.Error(), "more than 100 pages") || calls.Load()-before != maxPages {
		t.Errorf("endless pages: %v after %d calls", err, calls.Load()-before)
	}
}

// TestAWSClientsThroughResolver runs the resolver over the real clients
// against a fake service: error answers, retries and timeouts become the
// documented faults, and no error carries a secret value.
func TestAWSClientsThroughResolver(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv, _ := fakeAWS(t, "secretsmanager", "secretsmanager.GetSecretValue", func(w http.ResponseWriter, r *http.Request, in map[string]any) {
		id, _ := in["SecretId"].(string)
		mu.Lock()
		seen[id]++
		n := seen[id]
		mu.Unlock()
		fail := func(status int, body string) {
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
		switch id {
		case "ok":
			fmt.Fprint(w, `{"SecretString":"sk-ok-value"}`)
		case "flaky": // fails once, then answers
			if n == 1 {
				fail(http.StatusInternalServerError, `{"__type":"InternalServiceError","message":"try again"}`)
				return
			}
			fmt.Fprint(w, `{"SecretString":"sk-flaky-value"}`)
		case "denied":
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.coral.service/")
			fail(http.StatusBadRequest, `{"message":"User is not authorized"}`)
		case "invalid":
			fail(http.StatusBadRequest, `{"__type":"ValidationException","message":"bad id"}`)
		case "throttled":
			fail(http.StatusBadRequest, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
		case "timedout":
			fail(http.StatusBadRequest, `{"__type":"RequestTimeoutException","message":"request timed out"}`)
		case "internal":
			fail(http.StatusInternalServerError, `{"__type":"InternalServiceError","message":"oops"}`)
		case "gateway":
			fail(http.StatusBadGateway, `<html>bad gateway</html>`)
		case "malformed":
			fmt.Fprint(w, `{"SecretString":"sk-malformed-value`)
		case "slow": // answers after the caller gave up
			<-r.Context().Done()
		}
	})
	sm, err := NewSecretsManager(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	noBackoff(sm.c)
	a, err := NewAWS(AWSConfig{SecretsManager: sm, Refs: mustRefs(t, `OK=secretsmanager:ok, FLAKY=secretsmanager:flaky,
DENIED=secretsmanager:denied, INVALID=secretsmanager:invalid, THROTTLED=secretsmanager:throttled,
TIMEDOUT=secretsmanager:timedout, INTERNAL=secretsmanager:internal, GATEWAY=secretsmanager:gateway, MALFORMED=secretsmanager:malformed, SLOW=secretsmanager:slow`)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, id, want string
		fault, msg     string
		requests       int
	}{
		{name: "OK", id: "ok", want: "sk-ok-value", requests: 1},
		{name: "FLAKY", id: "flaky", want: "sk-flaky-value", requests: 2},
		{name: "DENIED", id: "denied", fault: fault.NameConfigError, msg: "secretsmanager:denied: AccessDeniedException", requests: 1},
		{name: "INVALID", id: "invalid", fault: fault.NameConfigError, msg: "ValidationException", requests: 1},
		{name: "THROTTLED", id: "throttled", fault: fault.NameRateLimited, msg: "ThrottlingException", requests: DefaultMaxAttempts},
		{name: "TIMEDOUT", id: "timedout", fault: fault.NameExecutorUnavailable, msg: "RequestTimeoutException", requests: DefaultMaxAttempts},
		{name: "INTERNAL", id: "internal", fault: fault.NameExecutorUnavailable, msg: "InternalServiceError", requests: DefaultMaxAttempts},
		{name: "GATEWAY", id: "gateway", fault: fault.NameExecutorUnavailable, msg: "HTTP 502", requests: DefaultMaxAttempts},
		{name: "MALFORMED", id: "malformed", fault: fault.NameExecutorUnavailable, msg: "malformed answer", requests: 1},
		{name: "SLOW", id: "slow", fault: fault.NameExecutorTimeout, msg: "deadline", requests: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			got, err := a.Resolve(ctx, c.name)
			mu.Lock()
			requests := seen[c.id]
			mu.Unlock()
			if requests != c.requests {
				t.Errorf("%d requests, want %d", requests, c.requests)
			}
			if c.fault == "" {
				if err != nil || got != c.want {
					t.Fatalf("Resolve = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if fault.Name(err) != c.fault || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v (%s), want %s containing %q", err, fault.Name(err), c.fault, c.msg)
			}
			if strings.Contains(err.Error(), "-value") {
				t.Errorf("error leaks a secret value: %v", err)
			}
		})
	}
}

func TestAWSClientUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens at this address any more
	ps, err := NewParameterStore(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var waits []int
	ps.c.rest.Backoff = func(retry int) time.Duration { waits = append(waits, retry); return 0 }
	a, err := NewAWS(AWSConfig{SSM: ps, Refs: mustRefs(t, "P=ssm:/p")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Resolve(context.Background(), "P")
	if fault.Name(err) != fault.NameExecutorUnavailable || !strings.Contains(err.Error(), "store unreachable") {
		t.Errorf("err = %v, want ExecutorUnavailable", err)
	}
	if !slices.Equal(waits, []int{1, 2}) {
		t.Errorf("backoff before retries %v, want [1 2]", waits)
	}

	cfg := testConfig(srv.URL)
	cfg.RetryMaxAttempts = 1
	once, _ := NewParameterStore(cfg)
	once.c.rest.Backoff = func(int) time.Duration { t.Error("retried with RetryMaxAttempts 1"); return 0 }
	if _, err := once.GetParameter(context.Background(), "/p", true); err == nil {
		t.Error("no error from an unreachable endpoint")
	}
}

func TestNewAWSClients(t *testing.T) {
	env := func(extra ...string) aws.Config {
		cfg, err := awsenv.Load(append([]string{"AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=x"}, extra...))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cn := testConfig("")
	cn.Region = "cn-north-1"
	cases := []struct {
		name    string
		cfg     aws.Config
		sm, ssm string // endpoints, or the error
	}{
		{"regional endpoints", testConfig(""), "https://secretsmanager.eu-west-1.amazonaws.com", "https://ssm.eu-west-1.amazonaws.com"},
		{"China", cn, "https://secretsmanager.cn-north-1.amazonaws.com.cn", "https://ssm.cn-north-1.amazonaws.com.cn"},
		{"base endpoint with a path", testConfig("http://localhost:4566/aws"), "http://localhost:4566/aws", "http://localhost:4566/aws"},
		{"per-service endpoints", env("AWS_ENDPOINT_URL_SECRETS_MANAGER=http://127.0.0.1:9001", "AWS_ENDPOINT_URL_SSM=http://127.0.0.1:9002"), "http://127.0.0.1:9001", "http://127.0.0.1:9002"},
		{"per-service wins over global", env("AWS_ENDPOINT_URL=http://127.0.0.1:4566", "AWS_ENDPOINT_URL_SSM=http://127.0.0.1:9002"), "http://127.0.0.1:4566", "http://127.0.0.1:9002"},
		{"no credentials", aws.Config{Region: "eu-west-1"}, "no credentials", "no credentials"},
		{"no region", aws.Config{Credentials: testConfig("").Credentials}, `region "" is not a valid region name`, `region "" is not a valid region name`},
		{"region that is not a host label", func() aws.Config { c := testConfig(""); c.Region = "eu-west-1.evil.example/"; return c }(), "not a valid region name", "not a valid region name"},
		{"endpoint that is not a URL", testConfig("localhost:4566"), `endpoint "localhost:4566" is not an http or https URL`, "is not an http or https URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got string
			if sm, err := NewSecretsManager(c.cfg); err != nil {
				got = err.Error()
			} else {
				u, _ := sm.c.rest.Endpoint()
				got = u.String()
			}
			if !strings.Contains(got, c.sm) {
				t.Errorf("Secrets Manager: %q, want %q", got, c.sm)
			}
			if ps, err := NewParameterStore(c.cfg); err != nil {
				got = err.Error()
			} else {
				u, _ := ps.c.rest.Endpoint()
				got = u.String()
			}
			if !strings.Contains(got, c.ssm) {
				t.Errorf("SSM: %q, want %q", got, c.ssm)
			}
		})
	}
}

func TestForFunction(t *testing.T) {
	srv, calls := fakeAWS(t, "secretsmanager", "secretsmanager.GetSecretValue", func(w http.ResponseWriter, _ *http.Request, in map[string]any) {
		if in["SecretId"] == "prod/model" {
			fmt.Fprint(w, `{"SecretString":"{\"key\":\"sk-from-sm\"}"}`)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"no such secret"}`)
	})
	env := map[string]string{"SECRET_REFS": "MODEL_API_KEY=secretsmanager:prod/model#key", "WEBHOOK_TOKEN": "from-env"}
	a, sm, err := ForFunction(testConfig(srv.URL), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := a.Resolve(ctx, "MODEL_API_KEY"); err != nil || v != "sk-from-sm" {
		t.Errorf("mapped secret = %q, %v", v, err)
	}
	if v, err := a.Resolve(ctx, "WEBHOOK_TOKEN"); err != nil || v != "from-env" {
		t.Errorf("unmapped secret = %q, %v; want it from the environment", v, err)
	}
	if _, err := sm.GetSecretValue(ctx, "prod/model"); err != nil {
		t.Errorf("the returned Secrets Manager client: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d Secrets Manager requests, want 2", n)
	}

	env["SECRET_REFS"] = "MODEL_API_KEY=vault:x"
	if _, _, err := ForFunction(testConfig(srv.URL), func(k string) string { return env[k] }); err == nil || !strings.HasPrefix(err.Error(), "SECRET_REFS: ") {
		t.Errorf("bad SECRET_REFS: err = %v", err)
	}
	if _, _, err := ForFunction(aws.Config{Region: "eu-west-1"}, func(string) string { return "" }); err == nil {
		t.Error("no error without credentials")
	}
}
