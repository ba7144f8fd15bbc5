package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

const (
	chatBotToken = "5151:AAG-serve-chat-bot-token-9z8y"
	chatHookKey  = "serve-webhook-secret-1a2b3c"
	opsChat      = int64(-1004242424242)
	otherChat    = int64(-1000000000001)
)

// gatePipeline waits for a human before a scripted step; its approval
// message pastes the event's summary, which is data.
func gatePipeline(timeout int) string {
	return fmt.Sprintf(`name: gate
stage: production
context_template: {include: [summary]}
steps:
  - {name: approve-restart, executor: human, timeout_seconds: %d, prompt_template: "Restart checkout? {{ summary }}"}
  - {name: after, executor: scripted}
`, timeout)
}

// chatServer serves a Server whose human steps ask on Telegram through a
// fake Bot API: by long polling, or at /telegram/BOT when webhook is set.
type chatServer struct {
	url    string
	bot    *telegramtest.Bot
	runner *Runner
}

func startChatServer(t *testing.T, pipelineSrc string, webhook bool) *chatServer {
	t.Helper()
	tg := &approval.TelegramChannel{BotToken: "${BOT}", ChatID: fmt.Sprint(opsChat)}
	if webhook {
		tg.WebhookSecret = "${BOT_HOOK}"
	}
	routes := approval.Routes{Default: &approval.Channel{Kind: approval.ChannelTelegram, Telegram: tg}}
	return startRoutedServer(t, pipelineSrc, routes, "")
}

// startRoutedServer serves a Server whose human steps ask where routes
// say, with a fake Bot API and, when slackAPI is set, Slack's API there.
func startRoutedServer(t *testing.T, pipelineSrc string, routes approval.Routes, slackAPI string) *chatServer {
	t.Helper()
	dir := t.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pipelines, "gate.yaml"), []byte(pipelineSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	responses, err := executor.ParseResponses("r.yaml", []byte("after: ["+reply(0.9, "restarted", "")+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	bot := telegramtest.New(t, chatBotToken)
	env := map[string]string{"BOT": chatBotToken, "BOT_HOOK": chatHookKey, "SLACK_BOT": slackBotToken, "SLACK_SIGNING": slackSigning}
	secrets := secret.Env(func(k string) string { return env[k] })
	signer := &approval.Signer{Key: []byte("0123456789abcdef0123456789abcdef")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Open(ctx, Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: responses}),
				Notifier: &approval.Router{Routes: routes, Service: &approval.Service{Signer: signer}, BaseURL: base, Logger: quiet,
					Secrets: secrets, Runs: st, TelegramAPI: bot.URL, SlackAPI: slackAPI + "/api"}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ctx, ServerConfig{
		Runner: r, PipelinesDir: pipelines, MaxRuns: 10, Signer: signer,
		Chat: ChatConfig{Routes: routes, Secrets: secrets, TelegramAPI: bot.URL, PollWait: time.Second, BaseURL: base, SlackResponseURL: slackAPI + "/actions/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		cancel()
		srv.Wait()
		r.Close()
	})
	return &chatServer{url: base, bot: bot, runner: r}
}

// start starts a run and waits for its approval request; it returns the
// run ID and the request's Approve and Reject callback data.
func (c *chatServer) start(t *testing.T) (runID, approve, reject string) {
	t.Helper()
	a := do(t, "POST", c.url+"/pipelines/gate/runs", "", "application/json", `{"summary": "<a href=\"https://evil.example\">now</a> & <b>fast"}`)
	if a.status != 202 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(a.body), &started)
	sent := waitFor(t, "the approval request", func() []telegramtest.Call { return c.bot.Calls("sendMessage") })
	p := sent[0].Params
	text, _ := p["text"].(string)
	if !strings.Contains(text, "Restart checkout? &lt;a href=&quot;https://evil.example&quot;&gt;now&lt;/a&gt; &amp; &lt;b&gt;fast") || strings.Contains(text, "evil.example\">") {
		t.Errorf("request text:\n%s", text)
	}
	row := p["reply_markup"].(map[string]any)["inline_keyboard"].([]any)[0].([]any)
	return started.RunID, row[0].(map[string]any)["callback_data"].(string), row[1].(map[string]any)["callback_data"].(string)
}

func waitFor[T any](t *testing.T, what string, get func() []T) []T {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := get(); len(got) > 0 {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s within 10s", what)
	return nil
}

func (c *chatServer) waitRun(t *testing.T, runID string, want store.RunStatus) store.Run {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var run store.Run
	for time.Now().Before(deadline) {
		run, _ = c.runner.Store.GetRun(context.Background(), runID)
		if run.Status == want {
			return run
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s is %q (%s), want %q", runID, run.Status, run.Reason, want)
	return run
}

func press(data string, chat int64, user telegram.User) telegram.Update {
	return telegram.Update{CallbackQuery: &telegram.CallbackQuery{
		ID: fmt.Sprintf("cbq-%d", time.Now().UnixNano()), From: user, Data: data,
		Message: &telegram.Message{MessageID: 101, Chat: telegram.Chat{ID: chat}},
	}}
}

var (
	tgAlice   = telegram.User{ID: 11, FirstName: "Alice", Username: "alice_sre"}
	tgMallory = telegram.User{ID: 66, FirstName: "Mallory"}
)

func (c *chatServer) answers(n int) func() []string {
	return func() []string {
		var out []string
		for _, a := range c.bot.Calls("answerCallbackQuery") {
			out = append(out, a.Params["text"].(string))
		}
		if len(out) < n {
			return nil
		}
		return out
	}
}

// TestTelegramApprovalPolling: serve long-polls the bot; a press in a
// chat that takes no approvals and a forged one decide nothing; Approve
// resumes the run, which completes with the approver named; a second
// press is refused as already decided.
func TestTelegramApprovalPolling(t *testing.T) {
	c := startChatServer(t, gatePipeline(3600), false)
	runID, approve, _ := c.start(t)
	forged := (&approval.Signer{Key: []byte("another signing key, 32 bytes..")}).ChatRef(strings.Split(approve, ".")[1], "approve", fmt.Sprint(opsChat))
	c.bot.Push(press(approve, otherChat, tgMallory))
	c.bot.Push(press(forged, opsChat, tgMallory))
	got := waitFor(t, "two answers", c.answers(2))
	if got[0] != "Approvals are not taken in this chat: no decision was made." || got[1] != "This button is not valid: no decision was made." {
		t.Errorf("answers %q", got)
	}
	if run, _ := c.runner.Store.GetRun(context.Background(), runID); run.Status != store.RunWaiting {
		t.Fatalf("run %q after refused presses", run.Status)
	}
	c.bot.Push(press(approve, opsChat, tgAlice))
	c.waitRun(t, runID, store.RunCompleted)
	steps, _ := c.runner.Store.ListSteps(context.Background(), runID)
	var summary string
	for _, s := range steps {
		if s.Name == "approve-restart" && s.Output != nil {
			var o struct {
				Summary string `json:"summary"`
			}
			_ = json.Unmarshal(s.Output, &o)
			summary = o.Summary
		}
	}
	if summary != "Approved by @alice_sre (Telegram)" {
		t.Errorf("human step summary %q", summary)
	}
	edits := waitFor(t, "the edited message", func() []telegramtest.Call { return c.bot.Calls("editMessageText") })
	if text := edits[0].Params["text"].(string); !strings.Contains(text, "✅ <b>Approved</b> by @alice_sre (Telegram)") || !strings.Contains(text, c.url+"/approvals/") {
		t.Errorf("edited:\n%s", text)
	}
	c.bot.Push(press(approve, opsChat, tgMallory))
	if got := waitFor(t, "the replay's answer", c.answers(4)); got[3] != "Already decided: approved by @alice_sre (Telegram)." {
		t.Errorf("replay answered %q", got[3])
	}
}

// TestTelegramApprovalWebhook: serve takes the bot's updates at
// /telegram/BOT, only with the secret token; Reject ends the run
// escalated, and a replay changes nothing.
func TestTelegramApprovalWebhook(t *testing.T) {
	c := startChatServer(t, gatePipeline(3600), true)
	runID, _, reject := c.start(t)
	post := func(secret string, u telegram.Update) int {
		t.Helper()
		b, _ := json.Marshal(u)
		req := do2(t, c.url+"/telegram/BOT", secret, string(b))
		return req
	}
	if got := post("", press(reject, opsChat, tgAlice)); got != 401 {
		t.Errorf("no secret: %d", got)
	}
	if got := post(chatHookKey+"x", press(reject, opsChat, tgAlice)); got != 401 {
		t.Errorf("wrong secret: %d", got)
	}
	if a := do(t, "POST", c.url+"/telegram/OTHER", "", "application/json", "{}"); a.status != 404 {
		t.Errorf("unknown bot: %d", a.status)
	}
	if run, _ := c.runner.Store.GetRun(context.Background(), runID); run.Status != store.RunWaiting {
		t.Fatalf("run %q after refused requests", run.Status)
	}
	if got := post(chatHookKey, press(reject, opsChat, tgAlice)); got != 200 {
		t.Errorf("decision: %d", got)
	}
	c.waitRun(t, runID, store.RunEscalated)
	if got := post(chatHookKey, press(strings.Replace(reject, "r.", "a.", 1), opsChat, tgMallory)); got != 200 {
		t.Errorf("altered replay: %d", got)
	}
	if got := post(chatHookKey, press(reject, opsChat, tgMallory)); got != 200 {
		t.Errorf("replay: %d", got)
	}
	got := waitFor(t, "three answers", c.answers(3))
	if got[0] != "Rejected. The run goes on with the rejection." || got[1] != "This button is not valid: no decision was made." || got[2] != "Already decided: rejected by @alice_sre (Telegram)." {
		t.Errorf("answers %q", got)
	}
	if run, _ := c.runner.Store.GetRun(context.Background(), runID); run.Status != store.RunEscalated {
		t.Errorf("run %q after the replay", run.Status)
	}
}

// TestTelegramApprovalExpired: a press after the approval expired (the
// run timed out) is answered as expired and decides nothing.
func TestTelegramApprovalExpired(t *testing.T) {
	c := startChatServer(t, gatePipeline(1), false)
	runID, approve, _ := c.start(t)
	run := c.waitRun(t, runID, store.RunFailed)
	c.bot.Push(press(approve, opsChat, tgAlice))
	if got := waitFor(t, "an answer", c.answers(1)); got[0] != "This approval has expired: no decision was made." {
		t.Errorf("answered %q", got)
	}
	if after, _ := c.runner.Store.GetRun(context.Background(), runID); after.Status != run.Status || after.Reason != run.Reason {
		t.Errorf("run changed: %+v", after)
	}
}

func do2(t *testing.T, url, secretToken, body string) int {
	t.Helper()
	req, _ := newRequest("POST", url, body)
	req.Header.Set("Content-Type", "application/json")
	if secretToken != "" {
		req.Header.Set(telegram.SecretHeader, secretToken)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func newRequest(method, url, body string) (*http.Request, error) {
	return http.NewRequest(method, url, strings.NewReader(body))
}

const (
	slackBotToken = "xoxb-serve-slack-bot-token-77"
	slackSigning  = "serve-slack-signing-secret-0a1b"
)

// TestSlackApprovalServe: serve takes a Slack app's button presses at
// /slack/{app}: a stale or unsigned request is refused, a signed press
// resumes the run, and the message is replaced through response_url.
func TestSlackApprovalServe(t *testing.T) {
	var mu sync.Mutex
	var posts, responses []string
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/chat.postMessage" && r.Header.Get("Authorization") == "Bearer "+slackBotToken:
			posts = append(posts, string(b))
			io.WriteString(w, `{"ok":true,"channel":"C0OPS","ts":"1.2"}`)
		case strings.HasPrefix(r.URL.Path, "/actions/"):
			responses = append(responses, string(b))
			io.WriteString(w, `{"ok":true}`)
		default:
			io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		}
	}))
	defer slack.Close()
	routes := approval.Routes{Default: &approval.Channel{Kind: approval.ChannelSlack,
		Slack: &approval.SlackChannel{BotToken: "${SLACK_BOT}", SigningSecret: "${SLACK_SIGNING}", ChannelID: "C0OPS"}}}
	c := startRoutedServer(t, gatePipeline(3600), routes, slack.URL)
	a := do(t, "POST", c.url+"/pipelines/gate/runs", "", "application/json", `{"summary": "<!channel> now"}`)
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(a.body), &started)
	sent := waitFor(t, "the Slack request", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), posts...) })
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Elements []struct {
				Value string `json:"value"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(sent[0]), &msg); err != nil || len(msg.Blocks) != 2 || strings.Contains(msg.Text, "<!channel>") || !strings.Contains(msg.Text, "&lt;!channel&gt;") {
		t.Fatalf("request %s (%v)", sent[0], err)
	}
	approve := msg.Blocks[1].Elements[0].Value
	payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":"U1","username":"carol"},"channel":{"id":"C0OPS"},"response_url":%q,"actions":[{"action_id":"stepline_approve","value":%q}]}`,
		slack.URL+"/actions/T1/2/x", approve)
	body := "payload=" + url.QueryEscape(payload)
	send := func(age time.Duration, key string) int {
		ts := strconv.FormatInt(time.Now().Add(-age).Unix(), 10)
		req, _ := http.NewRequest("POST", c.url+"/slack/SLACK_SIGNING", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", approval.SignSlack(key, ts, []byte(body)))
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(approval.SlackMaxSkew+time.Minute, slackSigning); got != 401 {
		t.Errorf("stale: %d", got)
	}
	if got := send(0, "not-the-secret"); got != 401 {
		t.Errorf("bad signature: %d", got)
	}
	if run, _ := c.runner.Store.GetRun(context.Background(), started.RunID); run.Status != store.RunWaiting {
		t.Fatalf("run %q after refused requests", run.Status)
	}
	if got := send(0, slackSigning); got != 200 {
		t.Errorf("press: %d", got)
	}
	c.waitRun(t, started.RunID, store.RunCompleted)
	got := waitFor(t, "the response", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), responses...) })
	if !strings.Contains(got[0], "Approved* by @carol (Slack)") || !strings.Contains(got[0], `"replace_original":true`) {
		t.Errorf("responses %q", got)
	}
}
