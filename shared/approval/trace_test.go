package approval

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telemetry"
)

// TestRequestsCarryTraceparent: an approval request sent to Telegram,
// Slack or a Teams webhook carries the sending span as its W3C
// traceparent, and none without tracing.
func TestRequestsCarryTraceparent(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	var mu sync.Mutex
	seen := map[string]string{} // channel → traceparent
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		channel := "teams"
		switch {
		case strings.HasSuffix(r.URL.Path, "/sendMessage"):
			channel = "telegram"
		case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
			channel = "slack"
		}
		mu.Lock()
		seen[channel] = r.Header.Get("traceparent")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch channel {
		case "telegram":
			_, _ = w.Write([]byte(`{"ok": true, "result": {"message_id": 1, "chat": {"id": 1}}}`))
		case "slack":
			_, _ = w.Write([]byte(`{"ok": true, "ts": "1.2"}`))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	env := map[string]string{"BOT": testBot, "SLACK": "xoxb-trace-token", "HOOK": srv.URL + "/hook"}
	r := &Router{
		Routes: Routes{Teams: map[string]Channel{
			"tg":    {Kind: ChannelTelegram, Telegram: &TelegramChannel{BotToken: "${BOT}", ChatID: chatOps}},
			"slack": {Kind: ChannelSlack, Slack: &SlackChannel{BotToken: "${SLACK}", SigningSecret: "s", ChannelID: "C0"}},
			"teams": {Kind: ChannelMSTeams, MSTeams: &TeamsChannel{WebhookURL: "${HOOK}"}},
		}},
		Service: h.svc, BaseURL: "https://stepline.example.com", Runs: h.st, Logger: h.svc.Logger,
		Secrets: secret.Env(func(k string) string { return env[k] }), TelegramAPI: srv.URL, SlackAPI: srv.URL + "/api", HTTP: srv.Client(),
	}
	for _, team := range []string{"tg", "slack", "teams"} {
		if err := h.st.CreateRun(ctx, store.Run{ID: "run-" + team, Pipeline: "p", Status: store.RunWaiting, Team: team, StartedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(ctx context.Context) {
		t.Helper()
		for _, team := range []string{"tg", "slack", "teams"} {
			a := h.a
			a.RunID = "run-" + team
			if _, err := r.Request(ctx, a, "production"); err != nil {
				t.Fatalf("%s: %v", team, err)
			}
		}
	}

	// Untraced: no header.
	send(ctx)
	for _, c := range []string{"telegram", "slack", "teams"} {
		if got, ok := seen[c]; !ok || got != "" {
			t.Errorf("%s untraced: traceparent %q (sent %v)", c, got, ok)
		}
	}

	exp := tracetest.NewInMemoryExporter()
	restore := telemetry.Install(telemetry.NewProvider("approval-test", sdktrace.WithSyncer(exp)))
	defer restore()
	sctx, span := telemetry.Start(ctx, "approval", trace.SpanKindInternal)
	send(sctx)
	span.End()
	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	for _, c := range []string{"telegram", "slack", "teams"} {
		if seen[c] != want {
			t.Errorf("%s: traceparent %q, want %q", c, seen[c], want)
		}
	}
}
