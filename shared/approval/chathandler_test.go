package approval

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// TestChatHandler: the routes a ChatHandler serves and refuses, with
// secrets resolved per request.
func TestChatHandler(t *testing.T) {
	h := newHarness(t)
	fake := telegramtest.New(t, testBot)
	env := map[string]string{"OPS_BOT": testBot, "OPS_HOOK": hookToken, "SIGN": "slack-signing"}
	routes := Routes{
		Default: &Channel{Kind: ChannelTelegram, Telegram: &TelegramChannel{BotToken: "${OPS_BOT}", ChatID: chatOps, WebhookSecret: "${OPS_HOOK}"}},
		Teams: map[string]Channel{
			"polled":   {Kind: ChannelTelegram, Telegram: &TelegramChannel{BotToken: "${POLLED_BOT}", ChatID: "5"}},
			"payments": {Kind: ChannelSlack, Slack: &SlackChannel{BotToken: "${SB}", SigningSecret: "${SIGN}", ChannelID: "C0PAY"}},
			"broken":   {Kind: ChannelSlack, Slack: &SlackChannel{BotToken: "${SB}", SigningSecret: "${MISSING}", ChannelID: "C0BRK"}},
		},
	}
	ch := &ChatHandler{Routes: routes, Service: h.svc, Secrets: secret.Env(func(k string) string { return env[k] }), TelegramAPI: fake.URL,
		BaseURL: "https://api.example.com", Logger: h.svc.Logger}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	chat, _ := strconv.ParseInt(chatOps, 10, 64)
	ref := h.svc.Signer.ChatRef(h.a.ID, "approve", chatOps)
	update := fmt.Sprintf(`{"update_id":1,"callback_query":{"id":"q","from":{"id":1,"username":"erin"},"message":{"message_id":3,"chat":{"id":%d}},"data":%q}}`, chat, ref)
	post := func(path, secretToken, body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if secretToken != "" {
			req.Header.Set(telegram.SecretHeader, secretToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, path, secret string
		status             int
	}{
		{"unknown bot", "/telegram/OTHER", hookToken, 404},
		{"polled bot has no webhook", "/telegram/POLLED_BOT", hookToken, 404},
		{"nested path", "/telegram/OPS_BOT/x", hookToken, 404},
		{"not a chat route", "/approvals/x", "", 404},
		{"unknown app", "/slack/NOPE", "", 404},
		{"app secret missing", "/slack/MISSING", "", 503},
		{"slack unsigned", "/slack/SIGN", "", 401},
		{"telegram without secret", "/telegram/OPS_BOT", "", 401},
		{"telegram", "/telegram/OPS_BOT", hookToken, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(tt.path, tt.secret, update); got != tt.status {
				t.Errorf("status %d, want %d", got, tt.status)
			}
		})
	}
	if got := h.resumed(); len(got) != 1 || got[0] != taskToken+"|approve|@erin (Telegram)" {
		t.Errorf("resumed %v", got)
	}
	if edits := fake.Calls("editMessageText"); len(edits) != 1 || !strings.Contains(edits[0].Params["text"].(string), `href="https://api.example.com/approvals/`) {
		t.Errorf("edits %+v", edits)
	}
}
