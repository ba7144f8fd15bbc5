package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// bigBody streams n bytes of JSON-ish text after a prefix.
func bigBody(prefix string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, prefix)
		chunk := strings.Repeat("x", 64<<10)
		for written := len(prefix); written < n; written += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}
}

func TestOversizedBodies(t *testing.T) {
	t.Run("model reply past MaxBodyBytes", func(t *testing.T) {
		srv := newServer(t, bigBody(`{"choices":[{"message":{"content":"`, MaxBodyBytes+(1<<20)))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		_, err := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": srv.URL, "model": "m"}}).Complete(context.Background(), request())
		assertFault(t, err, fault.NameExecutorUnavailable, "reply larger than 8388608 bytes")
	})
	t.Run("webhook body past MaxBodyBytes is delivered, not trusted", func(t *testing.T) {
		srv := newServer(t, bigBody(`{"confidence":1,"summary":"s","next_step_context":"`, MaxBodyBytes+(1<<20)))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		c, err := provider(t, reg, Call{Executor: Webhook, Config: map[string]any{"url": srv.URL}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		ans := answerOf(t, c)
		if ans["summary"] != "Webhook delivered: HTTP 200" || len([]rune(ans["next_step_context"].(string))) != ContextChars {
			t.Errorf("answer = %.200v", ans)
		}
		var raw struct {
			Body      string `json:"body"`
			Truncated bool   `json:"truncated"`
		}
		if err := json.Unmarshal(c.Raw, &raw); err != nil || !raw.Truncated || len(c.Raw) > MaxRawBytes+100 {
			t.Errorf("raw: %d bytes, truncated=%v, err=%v", len(c.Raw), raw.Truncated, err)
		}
	})
	t.Run("large JSON reply is capped for audit", func(t *testing.T) {
		content := strings.Repeat("a", 100<<10)
		body := `{"model":"m","choices":[{"message":{"content":"` + content + `"},"finish_reason":"stop"}]}`
		srv := newServer(t, answer(200, body))
		reg, _ := newRegistry(t, Deps{HTTP: srv.Client()})
		c, err := provider(t, reg, Call{Executor: Gateway, Config: map[string]any{"base_url": srv.URL, "model": "m"}}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if c.Content != content {
			t.Error("the content was cut with the audit record")
		}
		var raw struct {
			Truncated bool   `json:"truncated"`
			Bytes     int    `json:"bytes"`
			Body      string `json:"body"`
		}
		if err := json.Unmarshal(c.Raw, &raw); err != nil || !raw.Truncated || raw.Bytes != len(body) || len(raw.Body) != MaxRawBytes {
			t.Errorf("raw record: truncated=%v bytes=%d body=%d err=%v", raw.Truncated, raw.Bytes, len(raw.Body), err)
		}
	})
}

func TestAuditRaw(t *testing.T) {
	cases := []struct {
		name, body string
		want       string
	}{
		{"json kept as is", ` {"a":1} `, `{"a":1}`},
		{"text wrapped", "plain", `{"truncated":false,"bytes":5,"body":"plain"}`},
		{"invalid utf-8 replaced", "a\xffb", "{\"truncated\":false,\"bytes\":3,\"body\":\"a\uFFFDb\"}"},
	}
	for _, c := range cases {
		if got := string(auditRaw([]byte(c.body), false)); got != c.want {
			t.Errorf("%s: auditRaw = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestSleepHonoursContext(t *testing.T) {
	if err := sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("sleep on a cancelled context = %v after %s", err, time.Since(start))
	}
}

func TestCheckUsage(t *testing.T) {
	for _, tc := range []struct {
		in, out int64
		want    string
	}{
		{0, 0, ""},
		{MaxReportedTokens, MaxReportedTokens, ""},
		{MaxReportedTokens + 1, 0, "gateway: malformed reply: it reports 1000000000001 input tokens (want 0 to 1000000000000)"},
		{0, MaxReportedTokens + 1, "it reports 1000000000001 output tokens"},
		{-1, 0, "it reports -1 input tokens"},
		{0, -1, "it reports -1 output tokens"},
	} {
		err := checkUsage("gateway", llmoutput.Usage{InputTokens: tc.in, OutputTokens: tc.out})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%d/%d: %v", tc.in, tc.out, err)
			}
			continue
		}
		assertFault(t, err, "ExecutorUnavailable", tc.want)
	}
}
