package secret

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

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

func (f *fakeSM) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.calls.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	id := *in.SecretId
	if err := f.errs[id]; err != nil {
		return nil, err
	}
	if b, ok := f.binary[id]; ok {
		return &secretsmanager.GetSecretValueOutput{SecretBinary: b}, nil
	}
	s, ok := f.secrets[id]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: strPtr("Secrets Manager can't find the specified secret.")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &s}, nil
}

type fakeSSM struct {
	params  map[string]string
	decrypt []bool
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.decrypt = append(f.decrypt, in.WithDecryption != nil && *in.WithDecryption)
	v, ok := f.params[*in.Name]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: &v}}, nil
}

func strPtr(s string) *string { return &s }

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
THROTTLED=secretsmanager:throttled, DENIED=secretsmanager:denied, INTERNAL=secretsmanager:internal,
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
			t.Error("GetParameter called without WithDecryption")
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
