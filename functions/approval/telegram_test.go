package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stepline/stepline/functions/rietest"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

// TestTelegramThroughEmulator: with HUMAN_APPROVAL routing to Telegram,
// the approval bootstrap under the emulator sends the request to the
// chat with Approve and Reject buttons whose references verify for that
// chat, the message text escaped, and neither the bot token nor the task
// token in its logs.
func TestTelegramThroughEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap and runs the emulator")
	}
	const botToken = "777002:AAH-approval-fn-bot-token-k3j4"
	const chat = "-1007000000001"
	endpoint := dynamotest.Endpoint(t)
	table := dynamotest.NewTable(t)
	st := dynamo.New(dynamotest.Client(t), table)
	sm := rietest.FakeSecretsManager(t, map[string]string{keyARN: rieKey})
	bot := telegramtest.New(t, botToken)
	hook := newHook(t, 200)
	e := rietest.Start(t, rietest.Build(t, "."),
		"TABLE_NAME="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+sm.URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"APPROVAL_KEY_SECRET_ARN="+keyARN,
		"API_BASE_URL="+apiBase,
		"APPROVAL_HOOK_URL="+hook.srv.URL,
		`HUMAN_APPROVAL={"default":{"channel":"telegram","telegram":{"bot_token":"${OPS_BOT}","chat_id":"`+chat+`","webhook_secret":"${OPS_HOOK}"}}}`,
		"OPS_BOT="+botToken, // unmapped secrets resolve from the environment
		"TELEGRAM_API_URL="+bot.URL,
	)
	event := readEvent(t, eventFile)
	res := e.Invoke(t, encode(t, event))
	if res.ErrorType != "" {
		t.Fatalf("errorType %s: %s", res.ErrorType, res.Message)
	}
	sent := bot.Calls("sendMessage")
	if len(sent) != 1 {
		t.Fatalf("Bot API calls %+v", bot.Calls(""))
	}
	p := sent[0].Params
	text, _ := p["text"].(string)
	if p["chat_id"] != chat || p["parse_mode"] != "HTML" || !strings.Contains(text, "checkout-api is saturated") || !strings.Contains(text, `<a href="`+apiBase+`/approvals/`) {
		t.Errorf("request %v", p)
	}
	row := p["reply_markup"].(map[string]any)["inline_keyboard"].([]any)[0].([]any)
	signer := &approval.Signer{Key: []byte(rieKey)}
	id, d, err := signer.VerifyChatRef(row[0].(map[string]any)["callback_data"].(string), chat)
	if err != nil || d != "approve" {
		t.Fatalf("approve button: %q %q %v", id, d, err)
	}
	if a, err := st.GetApproval(context.Background(), id); err != nil || a.Step != "approve_remediation" {
		t.Errorf("the button names approval %q: %+v %v", id, a, err)
	}
	if len(hook.received()) != 1 {
		t.Errorf("the pipeline's approval webhook got %d messages, want 1 besides the chat", len(hook.received()))
	}
	taskToken := event["task_token"].(string)
	if out := e.Output(); strings.Contains(out, botToken) || strings.Contains(out, taskToken) || strings.Contains(out, rieKey) {
		t.Errorf("a secret appears in the function's logs:\n%s", out)
	}
}
