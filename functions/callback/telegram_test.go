package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// The button press in events/lambda/apigw-telegram-callback.json approves
// telegramApprovalID in chat telegramChat, signed with rieKey; it carries
// the webhook's secret token telegramHook.
const (
	telegramApprovalID = "rie-telegram-approval-0001-Zk3m9QpLx2Vb7NcT"
	telegramChat       = "-1001234567890"
	telegramBotToken   = "777001:AAF-rie-telegram-bot-token-x9y8"
	telegramHook       = "rie-telegram-webhook-secret-7Hq2"
	telegramTaskToken  = "AQCEAAAAKgAAAAMAAAAAAAAAAVRFTEVHUkFNLVRBU0stVE9LRU4tMDAwMQ=="
)

// withUpdate returns ev with its update's callback data, chat and secret
// header replaced ("" keeps each).
func withUpdate(t *testing.T, ev events.APIGatewayV2HTTPRequest, data string, chat int64, secretToken string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var u telegram.Update
	if err := json.Unmarshal([]byte(ev.Body), &u); err != nil {
		t.Fatal(err)
	}
	if data != "" {
		u.CallbackQuery.Data = data
	}
	if chat != 0 {
		u.CallbackQuery.Message.Chat.ID = chat
	}
	b, _ := json.Marshal(u)
	ev.Body = string(b)
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = v
	}
	switch secretToken {
	case "":
	case "-":
		delete(h, "x-telegram-bot-api-secret-token")
	default:
		h["x-telegram-bot-api-secret-token"] = secretToken
	}
	delete(h, "content-length")
	ev.Headers = h
	return ev
}

// TestTelegramThroughEmulator: the callback bootstrap under the Runtime
// Interface Emulator takes a Telegram bot's webhook at POST
// /telegram/{bot}: the secret token is required, a press in another chat
// or with a forged reference decides nothing, a genuine press resumes the
// run through SendTaskSuccess once, and a replay is refused; every press
// is answered on the fake Bot API and no secret reaches the logs.
func TestTelegramThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	endpoint := dynamotest.Endpoint(t)
	table := dynamotest.NewTable(t)
	st := dynamo.New(dynamotest.Client(t), table)
	sm := rietest.FakeSecretsManager(t, map[string]string{keyARN: rieKey})
	sf := newFakeStepFunctions(t)
	bot := telegramtest.New(t, telegramBotToken)
	ctx := context.Background()
	now := time.Now()
	if err := st.CreateApproval(ctx, store.Approval{ID: telegramApprovalID, RunID: "run-rie-telegram", Step: "approve_remediation", Pipeline: "sre-alert-triage",
		Message: "Restart checkout-api? <b>now</b>", TaskToken: telegramTaskToken, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	press := readEvent(t, "apigw-telegram-callback.json")
	var u telegram.Update
	_ = json.Unmarshal([]byte(press.Body), &u)
	signer := &approval.Signer{Key: []byte(rieKey)}
	if id, d, err := signer.VerifyChatRef(u.CallbackQuery.Data, telegramChat); err != nil || id != telegramApprovalID || d != "approve" {
		t.Fatalf("the press in apigw-telegram-callback.json carries %q %q, %v: re-sign it with the test key", id, d, err)
	}
	routes := `{"default":{"channel":"telegram","telegram":{"bot_token":"${TELEGRAM_BOT_TOKEN}","chat_id":"` + telegramChat + `","webhook_secret":"${TELEGRAM_WEBHOOK_SECRET}"}}}`
	bin := rietest.Build(t, ".")
	e := rietest.Start(t, bin,
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_ENDPOINT_URL_SFN="+sf.srv.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN,
		"HUMAN_APPROVAL="+routes,
		// Unmapped secrets resolve from the environment.
		"TELEGRAM_BOT_TOKEN="+telegramBotToken, "TELEGRAM_WEBHOOK_SECRET="+telegramHook,
		"TELEGRAM_API_URL="+bot.URL,
		"API_BASE_URL=https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
	)
	forged := (&approval.Signer{Key: []byte("another key of at least 16 bytes")}).ChatRef(telegramApprovalID, "approve", telegramChat)
	unknown := withUpdate(t, press, "", 0, "")
	unknown.RawPath, unknown.RequestContext.HTTP.Path = "/telegram/OTHER_BOT", "/telegram/OTHER_BOT"
	steps := []struct {
		name    string
		ev      events.APIGatewayV2HTTPRequest
		status  int
		answers []string // every answer so far
		sent    int      // SendTaskSuccess calls so far
	}{
		{"no secret token", withUpdate(t, press, "", 0, "-"), 401, nil, 0},
		{"wrong secret token", withUpdate(t, press, "", 0, telegramHook+"0"), 401, nil, 0},
		{"unknown bot", unknown, 404, nil, 0},
		{"another chat", withUpdate(t, press, "", -1009999999999, ""), 200, []string{"Approvals are not taken in this chat: no decision was made."}, 0},
		{"forged", withUpdate(t, press, forged, 0, ""), 200, []string{"This button is not valid: no decision was made."}, 0},
		{"approve", press, 200, []string{"Approved. The run goes on."}, 1},
		{"replay", press, 200, []string{"Already decided: approved by @alice_sre (Telegram)."}, 1},
	}
	answered := 0
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			resp := invoke(t, e, s.ev)
			if resp.StatusCode != s.status {
				t.Errorf("status %d %q, want %d", resp.StatusCode, resp.Body, s.status)
			}
			calls := bot.Calls("answerCallbackQuery")
			var got []string
			for _, c := range calls[answered:] {
				got = append(got, c.Params["text"].(string))
			}
			answered = len(calls)
			if strings.Join(got, "|") != strings.Join(s.answers, "|") {
				t.Errorf("answers %q, want %q", got, s.answers)
			}
			if n := len(sf.sent()); n != s.sent {
				t.Errorf("%d SendTaskSuccess calls, want %d", n, s.sent)
			}
		})
	}
	calls := sf.sent()
	var d task.Decision
	if len(calls) == 1 {
		out, _ := calls[0].Body["output"].(string)
		if calls[0].Body["taskToken"] != telegramTaskToken || json.Unmarshal([]byte(out), &d) != nil || d.Decision != "approve" || d.By != "@alice_sre (Telegram)" {
			t.Errorf("SendTaskSuccess %+v", calls[0])
		}
	}
	edits := bot.Calls("editMessageText")
	if len(edits) != 2 || !strings.Contains(edits[0].Params["text"].(string), "✅ <b>Approved</b> by @alice_sre (Telegram)") ||
		!strings.Contains(edits[0].Params["text"].(string), "&lt;b&gt;now&lt;/b&gt;") ||
		!strings.Contains(edits[0].Params["text"].(string), `<a href="https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/approvals/`) {
		t.Errorf("edits %+v", edits)
	}
	if out := e.Output(); strings.Contains(out, telegramBotToken) || strings.Contains(out, telegramHook) || strings.Contains(out, telegramTaskToken) || strings.Contains(out, rieKey) {
		t.Errorf("a secret appears in the function's logs:\n%s", out)
	}
}
