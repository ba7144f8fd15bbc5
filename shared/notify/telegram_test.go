package notify

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

const botToken = "4242:AAE-notify-bot-token-0f1e2d"

// TestTelegram: the telegram channel sends Telegram HTML whose markup is
// the template's and whose values are text, whatever they hold.
func TestTelegram(t *testing.T) {
	bot := telegramtest.New(t, botToken)
	var logs bytes.Buffer
	d := &Dispatcher{Secrets: env(map[string]string{"TELEGRAM_BOT_TOKEN": botToken}), Logger: quietLogger(&logs), TelegramAPI: bot.URL}
	hostile := escalation()
	hostile.StepSummary = `<a href="https://evil.example/">click</a> & <b>bold`
	tmpl := `<b>{{ pipeline_name }}</b> escalated at <code>{{ current_step }}</code>: {{ step_summary }} ({{ contradicts | join: ", " }}) {{ labels.service }}`
	n := pipeline.Notification{Channel: "telegram", Template: tmpl, Config: map[string]any{"bot_token": "${TELEGRAM_BOT_TOKEN}", "chat_id": -1001234567890}}
	ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", hostile)
	if len(ds) != 1 || ds[0].Err != nil || ds[0].Target != "chat -1001234567890" {
		t.Fatalf("deliveries %+v", ds)
	}
	calls := bot.Calls("sendMessage")
	if len(calls) != 1 {
		t.Fatalf("calls %+v", bot.Calls(""))
	}
	p := calls[0].Params
	want := `<b>sre-alert-triage</b> escalated at <code>first-line</code>: &lt;a href=&quot;https://evil.example/&quot;&gt;click&lt;/a&gt; &amp; &lt;b&gt;bold (error rate is flat) checkout-api`
	if p["text"] != want || p["parse_mode"] != "HTML" || p["chat_id"] != "-1001234567890" {
		t.Errorf("sent %v\nwant text %s", p, want)
	}
	if strings.Contains(logs.String(), botToken) {
		t.Error("the log holds the bot token")
	}
}

func TestTelegramLongAndRefused(t *testing.T) {
	bot := telegramtest.New(t, botToken)
	d := &Dispatcher{Secrets: env(map[string]string{"TELEGRAM_BOT_TOKEN": botToken, "WRONG": "9999:wrong-token-abcdef"}), Logger: quietLogger(&bytes.Buffer{}), TelegramAPI: bot.URL}
	long := escalation()
	long.StepSummary = strings.Repeat("<x>", 3000) // 12,000 characters escaped
	n := pipeline.Notification{Channel: "telegram", Template: "<i>{{ step_summary }}</i>", Config: map[string]any{"bot_token": "${TELEGRAM_BOT_TOKEN}", "chat_id": "@ops"}}
	ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", long)
	if len(ds) != 1 || ds[0].Err != nil {
		t.Fatalf("deliveries %+v", ds)
	}
	text := bot.Calls("sendMessage")[0].Params["text"].(string)
	if !strings.HasSuffix(text, "</i>"+telegram.TruncatedNote) || len([]rune(text)) > telegram.MaxMessageRunes {
		t.Errorf("long message: %d runes, ends %q", len([]rune(text)), text[len(text)-30:])
	}
	tests := []struct {
		name string
		cfg  map[string]any
		says string
	}{
		{"wrong token", map[string]any{"bot_token": "${WRONG}", "chat_id": 1}, "401"},
		{"missing secret", map[string]any{"bot_token": "${NOPE}", "chat_id": 1}, "NOPE"},
		{"no token", map[string]any{"chat_id": 1}, "config.bot_token is missing"},
		{"no chat", map[string]any{"bot_token": "${TELEGRAM_BOT_TOKEN}"}, "config.chat_id is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			d.Logger = quietLogger(&logs)
			n := pipeline.Notification{Channel: "telegram", Config: tt.cfg}
			ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", escalation())
			if len(ds) != 1 || ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), tt.says) {
				t.Fatalf("deliveries %+v", ds)
			}
			all := ds[0].Err.Error() + logs.String()
			if strings.Contains(all, "wrong-token") || strings.Contains(all, botToken) {
				t.Errorf("a token leaked: %s", all)
			}
		})
	}
	// Stage testing sends nothing.
	before := len(bot.Calls(""))
	ds = d.Fire(context.Background(), triagePipeline(pipeline.StageTesting, n), "escalate", escalation())
	if len(ds) != 1 || !ds[0].Muted || len(bot.Calls("")) != before {
		t.Errorf("testing: %+v", ds)
	}
}

func TestMSTeams(t *testing.T) {
	hook := newCapture(t, 202)
	d := &Dispatcher{Secrets: env(map[string]string{"TEAMS_WEBHOOK_URL": hook.URL + "/workflows/abc?sig=s3cr3t-sig"}), Logger: quietLogger(&bytes.Buffer{})}
	n := pipeline.Notification{Channel: "msteams", Template: "{{ step_summary }}", Config: map[string]any{"url": "${TEAMS_WEBHOOK_URL}"}}
	ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", escalation())
	if len(ds) != 1 || ds[0].Err != nil || ds[0].Status != 202 {
		t.Fatalf("deliveries %+v", ds)
	}
	reqs := hook.requests()
	if len(reqs) != 1 || reqs[0].body != `{"text":"probably the deploy"}` || reqs[0].contentType != "application/json" {
		t.Errorf("requests %+v", reqs)
	}
}

// TestTelegramTeams: a run of a team with its own chat goes there (with
// its own bot when it names one); other teams go to the default chat.
func TestTelegramTeams(t *testing.T) {
	const payBot = "5252:AAE-payments-bot-token-77aa"
	bot := telegramtest.New(t, botToken)
	pay := telegramtest.New(t, payBot)
	cfg := map[string]any{"bot_token": "${TELEGRAM_BOT_TOKEN}", "chat_id": -100, "teams": map[string]any{
		"checkout": map[string]any{"chat_id": -200},
		"payments": map[string]any{"chat_id": "@payments_ops", "bot_token": "${PAY_BOT}"},
	}}
	n := pipeline.Notification{Channel: "telegram", Template: "team: {{ team }}", Config: cfg}
	for _, tt := range []struct{ team, chat string }{{"checkout", "-200"}, {"search", "-100"}, {"", "-100"}, {"payments", "@payments_ops"}} {
		api := bot.URL
		if tt.team == "payments" {
			api = pay.URL
		}
		d := &Dispatcher{Secrets: env(map[string]string{"TELEGRAM_BOT_TOKEN": botToken, "PAY_BOT": payBot}), Logger: quietLogger(&bytes.Buffer{}), TelegramAPI: api}
		c := escalation()
		c.Trigger = []byte(`{"team": "` + tt.team + `"}`)
		ds := d.Fire(context.Background(), triagePipeline(pipeline.StageProduction, n), "escalate", c)
		if len(ds) != 1 || ds[0].Err != nil || ds[0].Target != "chat "+tt.chat {
			t.Errorf("team %q: %+v", tt.team, ds)
		}
	}
	chats := func(b *telegramtest.Bot) (out []string) {
		for _, c := range b.Calls("sendMessage") {
			out = append(out, c.Params["chat_id"].(string))
		}
		return out
	}
	if got := strings.Join(chats(bot), ","); got != "-200,-100,-100" {
		t.Errorf("default bot sent to %s", got)
	}
	if got := strings.Join(chats(pay), ","); got != "@payments_ops" {
		t.Errorf("payments bot sent to %s", got)
	}
}
