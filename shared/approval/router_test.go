package approval

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// TestRouter: a request goes to the channel of its run's team (teams.<t>,
// else default), nothing is sent in stage testing, and secrets never show
// in errors.
func TestRouter(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	bot := telegramtest.New(t, testBot)
	slack := newFakeSlack(t, "xoxb-router-slack-token")
	var mu sync.Mutex
	var teams []string
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "no such workflow "+r.URL.RawQuery, http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		teams = append(teams, string(b))
		mu.Unlock()
		w.WriteHeader(202)
	}))
	defer hook.Close()
	env := map[string]string{"OPS_BOT": testBot, "PAY_SLACK": "xoxb-router-slack-token", "PAY_SIGN": "sign", "SEARCH_HOOK": hook.URL + "/workflows/1?sig=s3cr3t"}
	routes := Routes{
		Default: &Channel{Kind: ChannelTelegram, Telegram: &TelegramChannel{BotToken: "${OPS_BOT}", ChatID: chatOps}},
		Teams: map[string]Channel{
			"payments": {Kind: ChannelSlack, Slack: &SlackChannel{BotToken: "${PAY_SLACK}", SigningSecret: "${PAY_SIGN}", ChannelID: "C0PAY"}},
			"search":   {Kind: ChannelMSTeams, MSTeams: &TeamsChannel{WebhookURL: "${SEARCH_HOOK}"}},
			"broken":   {Kind: ChannelTelegram, Telegram: &TelegramChannel{BotToken: "${MISSING_BOT}", ChatID: chatOps}},
		},
	}
	r := &Router{Routes: routes, Service: h.svc, BaseURL: "https://stepline.example.com", Runs: h.st, Logger: h.svc.Logger,
		Secrets: secret.Env(func(k string) string { return env[k] }), TelegramAPI: bot.URL, SlackAPI: slack.URL + "/api", HTTP: hook.Client()}
	for id, team := range map[string]string{"run-ops": "", "run-pay": "payments", "run-search": "search", "run-broken": "broken", "run-other": "nobody"} {
		if err := h.st.CreateRun(ctx, store.Run{ID: id, Pipeline: "p", Status: store.RunWaiting, Team: team, StartedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		run, stage, kind string
		wantErr          string
	}{
		{"run-ops", "production", "telegram", ""},
		{"run-other", "production", "telegram", ""},
		{"run-pay", "production", "slack", ""},
		{"run-search", "production", "msteams", ""},
		{"run-pay", "testing", "", ""},
		{"run-broken", "production", "telegram", "MISSING_BOT"},
	}
	for _, tt := range tests {
		a := h.a
		a.RunID, a.TaskToken = tt.run, ""
		kind, err := r.Request(ctx, a, tt.stage)
		if kind != tt.kind || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s/%s: %q, %v", tt.run, tt.stage, kind, err)
		}
	}
	if n := len(bot.Calls("sendMessage")); n != 2 {
		t.Errorf("telegram messages: %d", n)
	}
	if len(slack.posts) != 1 {
		t.Errorf("slack posts: %d", len(slack.posts))
	}
	var msg struct{ Text string }
	if len(teams) != 1 || json.Unmarshal([]byte(teams[0]), &msg) != nil || !strings.Contains(msg.Text, "https://stepline.example.com/approvals/") || !strings.Contains(msg.Text, "<script>") {
		t.Errorf("teams %q", teams)
	}
	// Where nothing long-polls, a bot without a webhook gets no buttons.
	r.WebhooksOnly = true
	a := h.a
	a.RunID, a.TaskToken = "run-ops", ""
	if _, err := r.Request(ctx, a, "production"); err != nil {
		t.Fatal(err)
	}
	sent := bot.Calls("sendMessage")
	if last := sent[len(sent)-1].Params; last["reply_markup"] != nil || !strings.Contains(last["text"].(string), "/approvals/") {
		t.Errorf("webhooks only: %v", last)
	}
	// A Teams URL that is not https, and one that answers an error: the
	// error names neither URL.
	env["SEARCH_HOOK"] = "http://teams.example.com/hook?sig=s3cr3t"
	a.RunID = "run-search"
	if _, err := r.Request(ctx, a, "production"); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "https") {
		t.Errorf("http Teams URL: %v", err)
	}
	env["SEARCH_HOOK"] = hook.URL + "/missing?sig=s3cr3t"
	if _, err := r.Request(ctx, a, "production"); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "404") {
		t.Errorf("refused by Teams: %v", err)
	}
	if _, err := (&Router{Service: h.svc}).Request(ctx, h.a, "production"); !errors.Is(err, ErrNoRoute) {
		t.Errorf("no routes: %v", err)
	}
}
