package executor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/secret"
)

// Secret values used in tests; no error, log or record may contain them.
const (
	testKey   = "sk-test-0123456789abcdef"
	testToken = "tok-9876543210fedcba"
)

func testSecrets() secret.Resolver {
	return secret.Env(func(k string) string {
		return map[string]string{"API_KEY": testKey, "TOKEN": testToken}[k]
	})
}

// sleeps records the Retry-After waits a registry takes, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newRegistry(t *testing.T, deps Deps) (*Registry, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	if deps.Secrets == nil {
		deps.Secrets = testSecrets()
	}
	if deps.Sleep == nil {
		deps.Sleep = sl.sleep
	}
	return NewRegistry(deps), sl
}

func provider(t *testing.T, reg *Registry, call Call) llmoutput.Provider {
	t.Helper()
	p, err := reg.Provider(call)
	if err != nil {
		t.Fatalf("Provider(%s): %v", call.Executor, err)
	}
	return p
}

// request is a typical structured-output request.
func request() llmoutput.Request {
	return llmoutput.Request{
		Messages: []llmoutput.Message{
			{Role: llmoutput.RoleSystem, Content: "Answer with the LLMOutput JSON."},
			{Role: llmoutput.RoleUser, Content: "Triage the alert: disk full on db-1."},
		},
		Schema: &llmoutput.SchemaSpec{
			Name: "llm_output",
			JSON: json.RawMessage(`{"type":"object","properties":{"confidence":{"type":"number"},"summary":{"type":"string"},"next_step_context":{"type":"string"}},"required":["confidence","summary","next_step_context"],"additionalProperties":false}`),
		},
	}
}

// recorded is a request a test server saw.
type recorded struct {
	method string
	path   string
	query  string
	header http.Header
	body   []byte
}

func (r recorded) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.body)
	}
	return m
}

// server is an httptest server answering with a list of handlers, one per
// request (the last one repeats), recording what it receives.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	handlers []http.HandlerFunc
}

func newServer(t testing.TB, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		h := s.handlers[min(n, len(s.handlers)-1)]
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) seen() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}

func (s *server) last(t *testing.T) recorded {
	t.Helper()
	seen := s.seen()
	if len(seen) == 0 {
		t.Fatal("the server saw no request")
	}
	return seen[len(seen)-1]
}

// answer answers with a status, headers and a body.
func answer(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// stall answers only when the client gives up (or after 10 s).
func stall(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// resetMidBody sends headers promising more body than it writes, then
// drops the connection.
func resetMidBody(w http.ResponseWriter, _ *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"par")
	buf.Flush()
}

// resetBeforeHeaders drops the connection without answering.
func resetBeforeHeaders(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	conn.Close()
}

// assertFault checks err's ASL name, that the name is the Go type name the
// Lambda runtime reports, and that no secret leaks through the message.
func assertFault(t *testing.T, err error, name string, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", name)
	}
	if got := fault.Name(err); got != name {
		t.Fatalf("fault = %q (%T: %v), want %q", got, err, err, name)
	}
	surfaced := fault.Surface(err)
	if got := reflect.TypeOf(surfaced).Elem().Name(); got != name {
		t.Errorf("Lambda errorType = %q, want %q", got, name)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("message %q does not contain %q", err.Error(), c)
		}
	}
	assertNoSecret(t, err.Error())
}

func assertNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, v := range []string{testKey, testToken} {
		if strings.Contains(s, v) {
			t.Errorf("a secret value leaked: %q", s)
		}
	}
}

// secretNone resolves nothing: every reference is missing.
func secretNone() secret.Resolver {
	return secret.Env(func(string) string { return "" })
}
