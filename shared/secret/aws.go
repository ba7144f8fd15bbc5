package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/fault"
)

// SecretsManagerAPI is the Secrets Manager call the AWS resolver makes
// (satisfied by *SecretsManager).
type SecretsManagerAPI interface {
	// GetSecretValue returns the current value of the secret with the
	// given name or ARN. Errors answered by the service implement
	// smithy.APIError; other errors are transport or context errors.
	GetSecretValue(ctx context.Context, id string) (SecretValue, error)
}

// ParameterStoreAPI is the SSM call the AWS resolver makes (satisfied by
// *ParameterStore).
type ParameterStoreAPI interface {
	// GetParameter returns the value of the parameter with the given name
	// or ARN, decrypting a SecureString when decrypt is true. Errors as
	// for GetSecretValue.
	GetParameter(ctx context.Context, name string, decrypt bool) (string, error)
}

// SecretValue is the current value of a Secrets Manager secret.
type SecretValue struct {
	String string // SecretString
	Binary []byte // SecretBinary: non-nil for a binary secret
}

var (
	_ SecretsManagerAPI = (*SecretsManager)(nil)
	_ ParameterStoreAPI = (*ParameterStore)(nil)
)

// Stores a Ref can point into.
const (
	SourceSecretsManager = "secretsmanager"
	SourceSSM            = "ssm"
)

// DefaultTTL is how long the AWS resolver keeps a fetched value.
const DefaultTTL = 5 * time.Minute

// Ref locates a secret in AWS: "secretsmanager:<secret-id>[#json-key]" or
// "ssm:<parameter-name>[#json-key]". With a key, the stored value is a JSON
// object and the secret is that key's value.
type Ref struct {
	Source string // SourceSecretsManager or SourceSSM
	ID     string // secret name or ARN; parameter name or ARN
	Key    string // JSON key inside the value, "" for the whole value
}

// String returns the reference in the form ParseRef reads.
func (r Ref) String() string {
	s := r.Source + ":" + r.ID
	if r.Key != "" {
		s += "#" + r.Key
	}
	return s
}

// ParseRef reads "secretsmanager:<id>[#key]" or "ssm:<name>[#key]".
func ParseRef(s string) (Ref, error) {
	src, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Ref{}, fmt.Errorf("secret reference %q: want secretsmanager:<id> or ssm:<name>", s)
	}
	if src != SourceSecretsManager && src != SourceSSM {
		return Ref{}, fmt.Errorf("secret reference %q: unknown store %q (want secretsmanager or ssm)", s, src)
	}
	id, key, hasKey := strings.Cut(rest, "#")
	if id == "" {
		return Ref{}, fmt.Errorf("secret reference %q: empty id", s)
	}
	if hasKey && key == "" {
		return Ref{}, fmt.Errorf("secret reference %q: empty key after #", s)
	}
	return Ref{Source: src, ID: id, Key: key}, nil
}

// ParseRefs reads a mapping from secret names to references, written as
// NAME=ref pairs separated by commas or newlines, e.g.
//
//	OPENAI_API_KEY=secretsmanager:prod/openai#api_key, SLACK_URL=ssm:/stepline/slack
//
// Blank entries are ignored; a name given twice is an error.
func ParseRefs(s string) (map[string]Ref, error) {
	out := map[string]Ref{}
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, ref, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("secret mapping %q: want NAME=ref", part)
		}
		if !ValidName(name) {
			return nil, fmt.Errorf("secret mapping %q: %q is not a valid secret name", part, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("secret mapping: %q given twice", name)
		}
		r, err := ParseRef(ref)
		if err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, nil
}

// AWSConfig configures an AWS resolver.
type AWSConfig struct {
	SecretsManager SecretsManagerAPI // needed when a Ref points into Secrets Manager
	SSM            ParameterStoreAPI // needed when a Ref points into Parameter Store
	Refs           map[string]Ref    // secret name → where it is stored
	TTL            time.Duration     // cache lifetime; 0 → DefaultTTL, negative → no cache
	Now            func() time.Time  // clock for the cache; nil → time.Now
	Fallback       Resolver          // resolves names not in Refs; nil → they are missing
}

// AWS resolves secrets from Secrets Manager and Parameter Store. Values
// are cached per container (per process) for the TTL; concurrent lookups
// of one secret share one request. Safe for concurrent use.
type AWS struct {
	cfg AWSConfig

	mu       sync.Mutex
	cache    map[string]cached
	inflight map[string]*fetch
}

type cached struct {
	value   string
	fetched time.Time
}

type fetch struct {
	done  chan struct{}
	value string
	err   error
}

var _ Resolver = (*AWS)(nil)

// NewAWS returns an AWS resolver. It fails when a Ref needs a client that
// cfg lacks.
func NewAWS(cfg AWSConfig) (*AWS, error) {
	names := make([]string, 0, len(cfg.Refs))
	for n := range cfg.Refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := cfg.Refs[n]
		switch {
		case !ValidName(n):
			return nil, fmt.Errorf("secret mapping: %q is not a valid secret name", n)
		case r.Source == SourceSecretsManager && cfg.SecretsManager == nil:
			return nil, fmt.Errorf("secret %q is in Secrets Manager but no Secrets Manager client was given", n)
		case r.Source == SourceSSM && cfg.SSM == nil:
			return nil, fmt.Errorf("secret %q is in Parameter Store but no SSM client was given", n)
		case r.Source != SourceSecretsManager && r.Source != SourceSSM:
			return nil, fmt.Errorf("secret %q: unknown store %q", n, r.Source)
		case r.ID == "":
			return nil, fmt.Errorf("secret %q: empty id", n)
		}
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &AWS{cfg: cfg, cache: map[string]cached{}, inflight: map[string]*fetch{}}, nil
}

// Resolve returns the value of the named secret.
func (a *AWS) Resolve(ctx context.Context, name string) (string, error) {
	ref, ok := a.cfg.Refs[name]
	if !ok {
		if a.cfg.Fallback != nil {
			return a.cfg.Fallback.Resolve(ctx, name)
		}
		return "", fault.Errorf[fault.ConfigError]("secret %q is not set (no secretsmanager: or ssm: mapping for it)", name)
	}
	raw, err := a.stored(ctx, name, ref)
	if err != nil {
		return "", err
	}
	if ref.Key == "" {
		if raw == "" {
			return "", fault.Errorf[fault.ConfigError]("secret %q: %s:%s is empty", name, ref.Source, ref.ID)
		}
		return raw, nil
	}
	return jsonKey(name, ref, raw)
}

// jsonKey extracts ref.Key from a JSON object. Parse errors are reported
// without the parser's text, which quotes the offending input.
func jsonKey(name string, ref Ref, raw string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return "", fault.Errorf[fault.ConfigError]("secret %q: %s:%s is not a JSON object, so key %q cannot be read", name, ref.Source, ref.ID, ref.Key)
	}
	v, ok := obj[ref.Key]
	if !ok {
		return "", fault.Errorf[fault.ConfigError]("secret %q: key %q not found in %s:%s", name, ref.Key, ref.Source, ref.ID)
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		if s == "" {
			return "", fault.Errorf[fault.ConfigError]("secret %q: key %q of %s:%s is empty", name, ref.Key, ref.Source, ref.ID)
		}
		return s, nil
	}
	t := strings.TrimSpace(string(v))
	if t == "null" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "", fault.Errorf[fault.ConfigError]("secret %q: key %q of %s:%s is not a string, number or boolean", name, ref.Key, ref.Source, ref.ID)
	}
	return t, nil
}

// stored returns the whole stored value of ref, from the cache when fresh.
func (a *AWS) stored(ctx context.Context, name string, ref Ref) (string, error) {
	key := ref.Source + ":" + ref.ID
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && a.cfg.TTL > 0 && a.cfg.Now().Sub(c.fetched) < a.cfg.TTL {
		a.mu.Unlock()
		return c.value, nil
	}
	if f, ok := a.inflight[key]; ok {
		a.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil {
				return "", a.describe(name, ref, f.err)
			}
			return f.value, nil
		case <-ctx.Done():
			return "", a.describe(name, ref, ctx.Err())
		}
	}
	f := &fetch{done: make(chan struct{})}
	a.inflight[key] = f
	a.mu.Unlock()

	f.value, f.err = a.get(ctx, ref)

	a.mu.Lock()
	delete(a.inflight, key)
	if f.err == nil && a.cfg.TTL > 0 {
		a.cache[key] = cached{value: f.value, fetched: a.cfg.Now()}
	}
	a.mu.Unlock()
	close(f.done)
	if f.err != nil {
		return "", a.describe(name, ref, f.err)
	}
	return f.value, nil
}

// get fetches ref from its store.
func (a *AWS) get(ctx context.Context, ref Ref) (string, error) {
	switch ref.Source {
	case SourceSecretsManager:
		v, err := a.cfg.SecretsManager.GetSecretValue(ctx, ref.ID)
		if err != nil {
			return "", err
		}
		if v.Binary == nil {
			return v.String, nil
		}
		if utf8.Valid(v.Binary) {
			return string(v.Binary), nil
		}
		return "", errNotText
	case SourceSSM:
		return a.cfg.SSM.GetParameter(ctx, ref.ID, true)
	}
	return "", fmt.Errorf("unknown store %q", ref.Source)
}

var errNotText = errors.New("no text value")

// permanent reports whether a Secrets Manager or SSM error code is one a
// retry cannot fix.
func permanent(code string) bool {
	switch code {
	case "ResourceNotFoundException", "ParameterNotFound", "ParameterVersionNotFound",
		"AccessDeniedException", "UnrecognizedClientException", "InvalidParameterException",
		"InvalidRequestException", "DecryptionFailure", "InvalidKeyId", "ValidationException":
		return true
	}
	return false
}

// throttled reports whether an error answer means the caller is sending
// too many requests.
func throttled(code string, status int) bool {
	switch code {
	case "TooManyUpdates", "TooManyRequestsException", "RequestLimitExceeded":
		return true
	}
	return strings.Contains(code, "Throttl") || status == http.StatusTooManyRequests
}

// describe turns a store error into a fault naming the secret. Error
// codes name the secret id, never its value, so they may be kept.
func (a *AWS) describe(name string, ref Ref, err error) error {
	where := ref.Source + ":" + ref.ID
	if errors.Is(err, errNotText) {
		return fault.Errorf[fault.ConfigError]("secret %q: %s holds no text value", name, where)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fault.Errorf[fault.ExecutorTimeout]("secret %q: %s: no answer before the deadline", name, where)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("secret %q: %s: %w", name, where, err)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code, status := api.ErrorCode(), 0
		var re *ResponseError
		if errors.As(err, &re) {
			status = re.StatusCode
		}
		if code == "" {
			code = fmt.Sprintf("HTTP %d", status)
		}
		switch {
		case permanent(code):
			return fault.Errorf[fault.ConfigError]("secret %q: %s: %s", name, where, code)
		case throttled(code, status):
			return &fault.RateLimited{Msg: fmt.Sprintf("secret %q: %s: %s", name, where, code)}
		}
		return fault.Errorf[fault.ExecutorUnavailable]("secret %q: %s: %s", name, where, code)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fault.Errorf[fault.ExecutorTimeout]("secret %q: %s: timed out", name, where)
	}
	// The value was never fetched, so the transport error cannot hold it.
	return fault.Errorf[fault.ExecutorUnavailable]("secret %q: %s: store unreachable: %v", name, where, err)
}

// The two clients below speak the AWS JSON 1.1 protocol: a POST to the
// service's endpoint naming the operation in X-Amz-Target, signed with
// Signature Version 4 (package shared/awsrest sends it). They implement
// only the reads the resolver makes, so that a Lambda using them does not
// link the SDK's Secrets Manager and SSM packages, whose initialisers
// alone cost about a millisecond of every cold start.

// DefaultMaxAttempts is how many times the Secrets Manager and Parameter
// Store clients try a request that fails for a reason a retry can fix
// (transport errors, 5xx answers, throttling), unless aws.Config's
// RetryMaxAttempts says otherwise.
const DefaultMaxAttempts = awsrest.DefaultMaxAttempts

// maxResponse bounds a response body: a secret holds at most 64 KiB and a
// parameter 8 KiB.
const maxResponse = 1 << 20

// SecretsManager reads secrets from AWS Secrets Manager. Safe for
// concurrent use.
type SecretsManager struct{ c *jsonClient }

// NewSecretsManager returns a Secrets Manager client that uses cfg's
// region, credentials, HTTP client and RetryMaxAttempts. Its endpoint is
// the one configured in cfg for the SDK ID "Secrets Manager"
// (awsenv.Endpoint: AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL),
// else https://secretsmanager.<region>.amazonaws.com.
func NewSecretsManager(cfg aws.Config) (*SecretsManager, error) {
	c, err := newJSONClient(cfg, "Secrets Manager", "secretsmanager", "secretsmanager")
	if err != nil {
		return nil, err
	}
	return &SecretsManager{c: c}, nil
}

// GetSecretValue implements SecretsManagerAPI with the GetSecretValue
// operation.
func (s *SecretsManager) GetSecretValue(ctx context.Context, id string) (SecretValue, error) {
	var out struct {
		SecretString *string
		SecretBinary []byte // base64 on the wire
	}
	if err := s.c.call(ctx, "GetSecretValue", struct{ SecretId string }{id}, &out); err != nil {
		return SecretValue{}, err
	}
	if out.SecretString == nil && out.SecretBinary == nil {
		return SecretValue{}, errNotText
	}
	v := SecretValue{Binary: out.SecretBinary}
	if out.SecretString != nil {
		v.String = *out.SecretString
	}
	return v, nil
}

// ParameterStore reads parameters from AWS Systems Manager Parameter
// Store. Safe for concurrent use.
type ParameterStore struct{ c *jsonClient }

// NewParameterStore returns a Parameter Store client configured as
// NewSecretsManager's, for the SDK ID "SSM" (AWS_ENDPOINT_URL_SSM); its
// default endpoint is https://ssm.<region>.amazonaws.com.
func NewParameterStore(cfg aws.Config) (*ParameterStore, error) {
	c, err := newJSONClient(cfg, "SSM", "ssm", "AmazonSSM")
	if err != nil {
		return nil, err
	}
	return &ParameterStore{c: c}, nil
}

// GetParameter implements ParameterStoreAPI with the GetParameter
// operation.
func (p *ParameterStore) GetParameter(ctx context.Context, name string, decrypt bool) (string, error) {
	in := struct {
		Name           string
		WithDecryption bool
	}{name, decrypt}
	var out struct {
		Parameter *struct{ Value *string }
	}
	if err := p.c.call(ctx, "GetParameter", in, &out); err != nil {
		return "", err
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", errNotText
	}
	return *out.Parameter.Value, nil
}

// maxPages bounds the pages of one ParametersByPath listing.
const maxPages = 100

// ParametersByPath lists the parameters directly under path (not
// recursively), name → value, with the GetParametersByPath operation, a
// page of ten at a time; more than max of them is an error. Values of
// SecureString parameters are not decrypted.
func (p *ParameterStore) ParametersByPath(ctx context.Context, path string, max int) (map[string]string, error) {
	out := map[string]string{}
	token := ""
	// Parameter Store may answer a page with fewer results than asked,
	// even none, and a token: the pages are bounded, not only the results.
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return nil, fmt.Errorf("GetParametersByPath %s: more than %d pages", path, maxPages)
		}
		in := struct {
			Path       string
			Recursive  bool
			MaxResults int
			NextToken  string `json:",omitempty"`
		}{path, false, 10, token}
		var page struct {
			Parameters []struct{ Name, Value string }
			NextToken  string
		}
		if err := p.c.call(ctx, "GetParametersByPath", in, &page); err != nil {
			return nil, err
		}
		for _, prm := range page.Parameters {
			out[prm.Name] = prm.Value
		}
		if len(out) > max {
			return nil, fmt.Errorf("GetParametersByPath %s: more than %d parameters", path, max)
		}
		if page.NextToken == "" {
			return out, nil
		}
		if page.NextToken == token {
			return nil, fmt.Errorf("GetParametersByPath %s: the same page token twice", path)
		}
		token = page.NextToken
	}
}

// ResponseError is an error answer from Secrets Manager or SSM. It
// implements smithy.APIError. Code is the exception name with any
// namespace removed ("ResourceNotFoundException"); it is "" when the
// answer named none.
type ResponseError = awsrest.ResponseError

// jsonClient makes signed AWS JSON 1.1 calls to one service.
type jsonClient struct {
	rest   *awsrest.Client
	target string // X-Amz-Target prefix
}

func newJSONClient(cfg aws.Config, sdkID, signingName, target string) (*jsonClient, error) {
	c, err := awsrest.New(cfg, awsrest.Service{SDKID: sdkID, SigningName: signingName, EndpointPrefix: signingName})
	if err != nil {
		return nil, err
	}
	return &jsonClient{rest: c, target: target}, nil
}

// call posts in as operation op and decodes the answer into out. The
// client retries transport errors, 5xx answers and throttling. The answer
// holds the secret, so a decoding error says only that it is malformed.
func (c *jsonClient) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amz-Target", c.target+"."+op)
	resp, err := c.rest.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: body, MaxBody: maxResponse})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if json.Unmarshal(resp.Body, out) != nil {
		return fmt.Errorf("%s: malformed answer (%d bytes)", op, len(resp.Body))
	}
	return nil
}

// ForFunction builds the secrets of a Lambda function from its
// environment: the names SECRET_REFS maps (see ParseRefs) are read from
// Secrets Manager and Parameter Store with cfg, any other name from the
// environment itself (getenv). It also returns the Secrets Manager client,
// for functions that read secrets of their own through it.
func ForFunction(cfg aws.Config, getenv func(string) string) (*AWS, *SecretsManager, error) {
	refs, err := ParseRefs(getenv("SECRET_REFS"))
	if err != nil {
		return nil, nil, fmt.Errorf("SECRET_REFS: %w", err)
	}
	sm, err := NewSecretsManager(cfg)
	if err != nil {
		return nil, nil, err
	}
	ps, err := NewParameterStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	a, err := NewAWS(AWSConfig{SecretsManager: sm, SSM: ps, Refs: refs, Fallback: Env(getenv)})
	if err != nil {
		return nil, nil, err
	}
	return a, sm, nil
}
