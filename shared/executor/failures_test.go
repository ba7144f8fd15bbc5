package executor

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
)

const (
	okChat     = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"{\"confidence\":0.9,\"summary\":\"disk full\",\"next_step_context\":\"db-1\"}","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`
	okMessages = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"llm_output","input":{"confidence":0.9,"summary":"disk full","next_step_context":"db-1"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":200,"output_tokens":40}}`
)

// httpExecutor describes an HTTP executor for the shared failure table.
type httpExecutor struct {
	name   string
	config func(url string) map[string]any
	ok     string // a 200 body it accepts
}

func httpExecutors() []httpExecutor {
	return []httpExecutor{
		{Gateway, func(u string) map[string]any {
			return map[string]any{"base_url": u + "/v1", "model": "gpt-4o", "api_key": "${API_KEY}"}
		}, okChat},
		{Anthropic, func(u string) map[string]any {
			return map[string]any{"base_url": u, "model": "claude-sonnet-4-5", "api_key": "${API_KEY}"}
		}, okMessages},
		{Webhook, func(u string) map[string]any {
			return map[string]any{"url": u + "/hook/${TOKEN}", "headers": map[string]any{"Authorization": "Bearer ${API_KEY}"}}
		}, "accepted"},
		{Notify, func(u string) map[string]any {
			return map[string]any{"url": u + "/notify?token=${TOKEN}", "headers": map[string]any{"X-Api-Key": "${API_KEY}"}, "payload": map[string]any{"text": "disk full"}}
		}, "ok"},
	}
}

// TestHTTPFailures runs every HTTP executor against the same misbehaving
// servers and pins the fault (ASL error name) each failure maps to.
func TestHTTPFailures(t *testing.T) {
	type tc struct {
		name       string
		handlers   []http.HandlerFunc
		timeout    time.Duration
		fault      string // "" = success
		contains   []string
		retryAfter time.Duration
		sleeps     []time.Duration
		requests   int
	}
	cases := []tc{
		{name: "500 with an API error", handlers: h(answer(500, `{"error":{"message":"upstream exploded","type":"server_error"}}`)),
			fault: fault.NameExecutorUnavailable, contains: []string{"HTTP 500", "upstream exploded"}, requests: 1},
		{name: "503 plain text", handlers: h(answer(503, "Service Unavailable\nretry later", "Content-Type", "text/plain")),
			fault: fault.NameExecutorUnavailable, contains: []string{"HTTP 503", "Service Unavailable"}, requests: 1},
		{name: "529 overloaded", handlers: h(answer(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)),
			fault: fault.NameExecutorUnavailable, contains: []string{"overloaded_error: Overloaded"}, requests: 1},
		{name: "408", handlers: h(answer(408, "")), fault: fault.NameExecutorUnavailable, contains: []string{"HTTP 408"}, requests: 1},
		{name: "401 echoing the key", handlers: h(answer(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`"}}`)),
			fault: fault.NameExecutorRejected, contains: []string{"HTTP 401", "Incorrect API key provided: [REDACTED]"}, requests: 1},
		{name: "403", handlers: h(answer(403, `{"message":"forbidden"}`)), fault: fault.NameExecutorRejected, contains: []string{"HTTP 403", "forbidden"}, requests: 1},
		{name: "404 unknown model", handlers: h(answer(404, `{"error":{"message":"The model does-not-exist does not exist","type":"invalid_request_error"}}`)),
			fault: fault.NameExecutorRejected, contains: []string{"HTTP 404", "does not exist"}, requests: 1},
		{name: "400", handlers: h(answer(400, `{"error":"bad request"}`)), fault: fault.NameExecutorRejected, contains: []string{"bad request"}, requests: 1},
		{name: "422", handlers: h(answer(422, `{"detail":"unprocessable"}`)), fault: fault.NameExecutorRejected, contains: []string{"unprocessable"}, requests: 1},
		{name: "429 then success", timeout: 30 * time.Second,
			handlers: h(answer(429, `{"error":{"message":"slow down"}}`, "Retry-After", "2"), nil),
			sleeps:   []time.Duration{2 * time.Second}, requests: 2},
		{name: "429 with retry-after-ms then success", timeout: 30 * time.Second,
			handlers: h(answer(429, "", "Retry-After-Ms", "1500"), nil),
			sleeps:   []time.Duration{1500 * time.Millisecond}, requests: 2},
		{name: "429 twice", timeout: 30 * time.Second, handlers: h(answer(429, `{"error":{"message":"slow down"}}`, "Retry-After", "1")),
			fault: fault.NameRateLimited, contains: []string{"HTTP 429", "slow down"}, retryAfter: time.Second,
			sleeps: []time.Duration{time.Second}, requests: 2},
		{name: "429 asking for more than the deadline", timeout: 5 * time.Second, handlers: h(answer(429, "", "Retry-After", "120")),
			fault: fault.NameRateLimited, retryAfter: 120 * time.Second, requests: 1},
		{name: "429 asking for more than MaxRetryWait", handlers: h(answer(429, "", "Retry-After", "60")),
			fault: fault.NameRateLimited, retryAfter: 60 * time.Second, requests: 1},
		{name: "429 without Retry-After", handlers: h(answer(429, "")), fault: fault.NameRateLimited, requests: 1},
		{name: "slow past the deadline", timeout: 150 * time.Millisecond, handlers: h(stall),
			fault: fault.NameExecutorTimeout, contains: []string{"within 150ms"}, requests: 1},
		{name: "connection reset mid-body", handlers: h(resetMidBody), fault: fault.NameExecutorUnavailable, contains: []string{"unexpected EOF"}, requests: 1},
		{name: "connection reset before headers", handlers: h(resetBeforeHeaders), fault: fault.NameExecutorUnavailable, requests: 1},
	}
	for _, ex := range httpExecutors() {
		for _, c := range cases {
			t.Run(ex.name+"/"+c.name, func(t *testing.T) {
				handlers := append([]http.HandlerFunc(nil), c.handlers...)
				for i := range handlers {
					if handlers[i] == nil {
						handlers[i] = answer(200, ex.ok)
					}
				}
				srv := newServer(t, handlers...)
				reg, sl := newRegistry(t, Deps{HTTP: srv.Client()})
				p := provider(t, reg, Call{Executor: ex.name, Step: "s", Config: ex.config(srv.URL), Stage: StageProduction, Timeout: c.timeout})
				start := time.Now()
				comp, err := p.Complete(context.Background(), request())
				if c.timeout > 0 && c.timeout < time.Second && time.Since(start) > 3*time.Second {
					t.Errorf("call took %s past a %s deadline", time.Since(start), c.timeout)
				}
				if c.fault == "" {
					if err != nil {
						t.Fatalf("Complete: %v", err)
					}
					if comp.Content == "" {
						t.Error("empty content")
					}
				} else {
					assertFault(t, err, c.fault, c.contains...)
					if c.fault == fault.NameRateLimited {
						var rl *fault.RateLimited
						errors.As(err, &rl)
						if rl.RetryAfter != c.retryAfter {
							t.Errorf("RetryAfter = %s, want %s", rl.RetryAfter, c.retryAfter)
						}
					}
				}
				if got := sl.all(); !reflect.DeepEqual(got, c.sleeps) && !(len(got) == 0 && len(c.sleeps) == 0) {
					t.Errorf("waits = %v, want %v", got, c.sleeps)
				}
				if got := len(srv.seen()); got != c.requests {
					t.Errorf("requests = %d, want %d", got, c.requests)
				}
			})
		}
	}
}

func h(hs ...http.HandlerFunc) []http.HandlerFunc { return hs }

func TestConnectionRefused(t *testing.T) {
	for _, ex := range httpExecutors() {
		t.Run(ex.name, func(t *testing.T) {
			srv := newServer(t, answer(200, ex.ok))
			url := srv.URL
			srv.Close()
			reg, _ := newRegistry(t, Deps{})
			p := provider(t, reg, Call{Executor: ex.name, Step: "s", Config: ex.config(url), Stage: StageProduction})
			_, err := p.Complete(context.Background(), request())
			assertFault(t, err, fault.NameExecutorUnavailable, "connection refused")
		})
	}
}

func TestMissingSecretSendsNothing(t *testing.T) {
	for _, ex := range httpExecutors() {
		t.Run(ex.name, func(t *testing.T) {
			srv := newServer(t, answer(200, ex.ok))
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client(), Secrets: secretNone()})
			p := provider(t, reg, Call{Executor: ex.name, Step: "s", Config: ex.config(srv.URL), Stage: StageProduction})
			_, err := p.Complete(context.Background(), request())
			assertFault(t, err, fault.NameConfigError, "is not set", "executor_config.")
			if n := len(srv.seen()); n != 0 {
				t.Errorf("%d requests sent without their secrets", n)
			}
		})
	}
}

func TestCallerCancellation(t *testing.T) {
	for _, ex := range httpExecutors() {
		t.Run(ex.name, func(t *testing.T) {
			srv := newServer(t, stall)
			reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
			p := provider(t, reg, Call{Executor: ex.name, Step: "s", Config: ex.config(srv.URL), Stage: StageProduction})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := p.Complete(ctx, request())
			if !errors.Is(err, context.Canceled) || fault.Name(err) != "" {
				t.Errorf("err = %v (%s), want context.Canceled without a fault", err, fault.Name(err))
			}
		})
	}
}
