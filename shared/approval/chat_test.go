package approval

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telegram/telegramtest"
)

const (
	chatOps   = "-1001234567890"
	chatOther = "-1009999999999"
	testBot   = "777001:AAF-approval-bot-token-q1w2e3"
	hookToken = "webhook-secret-token-5f6a7b"
)

func TestChatRef(t *testing.T) {
	s := &Signer{Key: testKey, Now: func() time.Time { return t0 }}
	id, _ := store.NewApprovalID()
	ap := s.ChatRef(id, "approve", chatOps)
	rj := s.ChatRef(id, "reject", chatOps)
	if ap == "" || rj == "" || len(ap) > MaxChatRef || len(rj) > telegram.MaxCallbackData || strings.Contains(ap, id+id) {
		t.Fatalf("refs %q %q", ap, rj)
	}
	for ref, want := range map[string]string{ap: "approve", rj: "reject"} {
		gotID, d, err := s.VerifyChatRef(ref, chatOps)
		if err != nil || gotID != id || d != want {
			t.Errorf("VerifyChatRef(%q) = %q %q %v", ref, gotID, d, err)
		}
	}
	parts := strings.Split(ap, ".")
	other, _ := store.NewApprovalID()
	flip := []byte(parts[2])
	flip[0] ^= 1
	tests := []struct {
		name, ref, chat string
		want            error
	}{
		{"approve turned reject", "r." + parts[1] + "." + parts[2], chatOps, ErrForged},
		{"other approval", "a." + other + "." + parts[2], chatOps, ErrForged},
		{"other chat", ap, chatOther, ErrForged},
		{"flipped MAC", "a." + parts[1] + "." + string(flip), chatOps, ErrForged},
		{"other key", (&Signer{Key: []byte("another key, 32 bytes long......")}).ChatRef(id, "approve", chatOps), chatOps, ErrForged},
		{"short MAC", "a." + parts[1] + "." + parts[2][:8], chatOps, ErrForged},
		{"unknown decision", "x." + parts[1] + "." + parts[2], chatOps, ErrForged},
		{"no MAC", "a." + parts[1], chatOps, ErrForged},
		{"link token", s.Sign(id, t0.Add(time.Hour)), chatOps, ErrForged},
		{"empty", "", chatOps, ErrForged},
		{"too long", ap + strings.Repeat("A", 64), chatOps, ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.VerifyChatRef(tt.ref, tt.chat); !errors.Is(err, tt.want) {
				t.Errorf("VerifyChatRef = %v, want %v", err, tt.want)
			}
		})
	}
	// The 64-byte bound: an ID of 45 bytes fits, 46 does not.
	if r := s.ChatRef(strings.Repeat("i", 45), "approve", chatOps); len(r) != 64 {
		t.Errorf("45-byte ID: %q (%d)", r, len(r))
	}
	if r := s.ChatRef(strings.Repeat("i", 46), "approve", chatOps); r != "" {
		t.Errorf("46-byte ID: %q", r)
	}
	if r := s.ChatRef(id, "maybe", chatOps); r != "" {
		t.Errorf("bad decision: %q", r)
	}
	_ = base64.RawURLEncoding
}

// botHarness is a TelegramBot over the harness's Service and a fake Bot API.
type botHarness struct {
	*harness
	fake *telegramtest.Bot
	bot  *TelegramBot
	msg  telegram.Message // the request message sent
}

func newBotHarness(t *testing.T) *botHarness {
	t.Helper()
	h := newHarness(t)
	fake := telegramtest.New(t, testBot)
	bot := &TelegramBot{
		Service: h.svc, Client: &telegram.Client{Token: testBot, API: fake.URL}, Chats: []string{chatOps}, Secret: hookToken,
		Link: func(a store.Approval) string { return h.svc.Link("https://stepline.example.com", a) }, Logger: h.svc.Logger,
	}
	if err := bot.Request(context.Background(), h.a, chatOps, h.svc.Link("https://stepline.example.com", h.a)); err != nil {
		t.Fatal(err)
	}
	sent := fake.Calls("sendMessage")
	if len(sent) != 1 {
		t.Fatalf("sent %+v", sent)
	}
	id, _ := strconv.ParseInt(chatOps, 10, 64)
	return &botHarness{harness: h, fake: fake, bot: bot, msg: telegram.Message{MessageID: 101, Chat: telegram.Chat{ID: id}}}
}

// buttons returns the callback data of the request's two buttons.
func (b *botHarness) buttons(t *testing.T) (approve, reject string) {
	t.Helper()
	p := b.fake.Calls("sendMessage")[0].Params
	rows := p["reply_markup"].(map[string]any)["inline_keyboard"].([]any)
	row := rows[0].([]any)
	return row[0].(map[string]any)["callback_data"].(string), row[1].(map[string]any)["callback_data"].(string)
}

func (b *botHarness) press(data string, chat int64, user telegram.User) telegram.Update {
	m := b.msg
	m.Chat.ID = chat
	return telegram.Update{UpdateID: 1, CallbackQuery: &telegram.CallbackQuery{ID: fmt.Sprintf("q-%d", time.Now().UnixNano()), From: user, Message: &m, Data: data}}
}

var alice = telegram.User{ID: 11, FirstName: "Alice", Username: "alice_ops"}
var mallory = telegram.User{ID: 66, FirstName: "<b>Mallory</b>"}

func TestTelegramRequestMessage(t *testing.T) {
	b := newBotHarness(t)
	p := b.fake.Calls("sendMessage")[0].Params
	text := p["text"].(string)
	if p["chat_id"] != chatOps || p["parse_mode"] != "HTML" || !strings.Contains(text, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(text, "<script>") {
		t.Errorf("request %v", p)
	}
	if !strings.Contains(text, `<a href="https://stepline.example.com/approvals/`) || strings.Contains(text, taskToken) {
		t.Errorf("request text %s", text)
	}
	ap, rj := b.buttons(t)
	if len(ap) > telegram.MaxCallbackData || len(rj) > telegram.MaxCallbackData || strings.Contains(ap, taskToken) {
		t.Errorf("buttons %q %q", ap, rj)
	}
}

func TestTelegramDecisions(t *testing.T) {
	ctx := context.Background()
	chat, _ := strconv.ParseInt(chatOps, 10, 64)
	other, _ := strconv.ParseInt(chatOther, 10, 64)
	tests := []struct {
		name     string
		setup    func(b *botHarness)
		press    func(b *botHarness, ap, rj string) telegram.Update
		want     error  // nil: decided
		answer   string // what the presser is told
		resumed  string // "" none
		edited   string // the edited message says
		decision store.Decision
	}{
		{"approve", nil, func(b *botHarness, ap, _ string) telegram.Update { return b.press(ap, chat, alice) },
			nil, answerApproved, taskToken + "|approve|@alice_ops (Telegram)", "✅ <b>Approved</b> by @alice_ops (Telegram)", store.DecisionApproved},
		{"reject", nil, func(b *botHarness, _, rj string) telegram.Update { return b.press(rj, chat, mallory) },
			nil, answerRejected, taskToken + "|reject|<b>Mallory</b> (Telegram)", "❌ <b>Rejected</b> by &lt;b&gt;Mallory&lt;/b&gt; (Telegram)", store.DecisionRejected},
		{"forged", nil, func(b *botHarness, ap, _ string) telegram.Update {
			forged := (&Signer{Key: []byte("a different key of enough length")}).ChatRef(b.a.ID, "approve", chatOps)
			return b.press(forged, chat, mallory)
		}, ErrForged, answerForged, "", "", store.DecisionPending},
		{"expired", func(b *botHarness) { b.clock.set(b.a.ExpiresAt) }, func(b *botHarness, ap, _ string) telegram.Update { return b.press(ap, chat, alice) },
			ErrExpired, answerExpired, "", "⌛ <b>Expired</b>", store.DecisionPending},
		{"wrong chat", nil, func(b *botHarness, ap, _ string) telegram.Update { return b.press(ap, other, alice) },
			ErrWrongChat, answerWrong, "", "", store.DecisionPending},
		{"no message", nil, func(b *botHarness, ap, _ string) telegram.Update {
			u := b.press(ap, chat, alice)
			u.CallbackQuery.Message = nil
			return u
		}, ErrWrongChat, answerWrong, "", "", store.DecisionPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBotHarness(t)
			if tt.setup != nil {
				tt.setup(b)
			}
			ap, rj := b.buttons(t)
			err := b.bot.Handle(ctx, tt.press(b, ap, rj))
			if (tt.want == nil && err != nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Handle = %v, want %v", err, tt.want)
			}
			answers := b.fake.Calls("answerCallbackQuery")
			if len(answers) != 1 || answers[0].Params["text"] != tt.answer {
				t.Errorf("answers %+v, want %q", answers, tt.answer)
			}
			got := b.resumed()
			if (tt.resumed == "" && len(got) != 0) || (tt.resumed != "" && (len(got) != 1 || got[0] != tt.resumed)) {
				t.Errorf("resumed %v, want %q", got, tt.resumed)
			}
			edits := b.fake.Calls("editMessageText")
			if tt.edited == "" && len(edits) != 0 {
				t.Errorf("edited %+v", edits)
			}
			if tt.edited != "" {
				if len(edits) != 1 || !strings.Contains(edits[0].Params["text"].(string), tt.edited) {
					t.Errorf("edits %+v, want %q", edits, tt.edited)
				} else if kb := edits[0].Params["reply_markup"].(map[string]any)["inline_keyboard"].([]any); len(kb) != 0 {
					t.Errorf("the edited message keeps its buttons: %v", kb)
				}
			}
			if a, _ := b.st.GetApproval(ctx, b.a.ID); a.Decision != tt.decision {
				t.Errorf("stored decision %q, want %q", a.Decision, tt.decision)
			}
		})
	}
}

func TestTelegramReplay(t *testing.T) {
	ctx := context.Background()
	b := newBotHarness(t)
	chat, _ := strconv.ParseInt(chatOps, 10, 64)
	ap, rj := b.buttons(t)
	if err := b.bot.Handle(ctx, b.press(ap, chat, alice)); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{ap, rj} {
		if err := b.bot.Handle(ctx, b.press(data, chat, mallory)); !errors.Is(err, ErrDecided) {
			t.Errorf("replay: %v", err)
		}
	}
	if got := b.resumed(); len(got) != 1 {
		t.Errorf("resumed %v", got)
	}
	answers := b.fake.Calls("answerCallbackQuery")
	if len(answers) != 3 || answers[2].Params["text"] != "Already decided: approved by @alice_ops (Telegram)." || answers[2].Params["show_alert"] != true {
		t.Errorf("answers %+v", answers)
	}
}

func TestTelegramWebhook(t *testing.T) {
	b := newBotHarness(t)
	srv := httptest.NewServer(b.bot)
	defer srv.Close()
	ap, _ := b.buttons(t)
	chat, _ := strconv.ParseInt(chatOps, 10, 64)
	update := func(data string) string {
		u := b.press(data, chat, alice)
		return fmt.Sprintf(`{"update_id":9,"callback_query":{"id":%q,"from":{"id":11,"username":"alice_ops"},"message":{"message_id":101,"chat":{"id":%d}},"data":%q}}`, u.CallbackQuery.ID, chat, data)
	}
	post := func(secret, body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/telegram/OPS_BOT", strings.NewReader(body))
		if secret != "" {
			req.Header.Set(telegram.SecretHeader, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, secret, body string
		status             int
	}{
		{"no secret", "", update(ap), 401},
		{"wrong secret", hookToken + "x", update(ap), 401},
		{"secret prefix", hookToken[:len(hookToken)-1], update(ap), 401},
		{"not JSON", hookToken, "{", 400},
		{"at the size bound", hookToken, sized(telegram.MaxUpdateBytes), 200},
		{"a byte over the size bound", hookToken, sized(telegram.MaxUpdateBytes + 1), 413},
		{"not a button", hookToken, `{"update_id":3,"message":{"message_id":1,"chat":{"id":1},"text":"/start"}}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(tt.secret, tt.body); got != tt.status {
				t.Errorf("status %d, want %d", got, tt.status)
			}
			if len(b.resumed()) != 0 {
				t.Error("resumed")
			}
		})
	}
	if got := post(hookToken, update(ap)); got != 200 || len(b.resumed()) != 1 {
		t.Errorf("decision: %d, resumed %v", got, b.resumed())
	}
	if got := post(hookToken, update(ap)); got != 200 || len(b.resumed()) != 1 {
		t.Errorf("replay: %d, resumed %v", got, b.resumed())
	}
	resp, _ := http.Get(srv.URL + "/telegram/OPS_BOT")
	if resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	resp.Body.Close()
	// A bot with no secret configured takes no webhook at all.
	b.bot.Secret = ""
	if got := post("", update(ap)); got != 401 {
		t.Errorf("no secret configured: %d", got)
	}
}

// sized is an update (no button press) of exactly n bytes.
func sized(n int) string {
	const head, tail = `{"update_id":7,"message":{"message_id":1,"chat":{"id":1},"text":"`, `"}}`
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

func TestTelegramPoll(t *testing.T) {
	b := newBotHarness(t)
	chat, _ := strconv.ParseInt(chatOps, 10, 64)
	ap, _ := b.buttons(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.bot.Poll(ctx, time.Second) }()
	b.fake.Push(b.press(ap, chat, alice))
	deadline := time.Now().Add(5 * time.Second)
	for len(b.resumed()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// The next poll's offset confirms the update.
	for b.fake.Pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Poll = %v", err)
	}
	if got := b.resumed(); len(got) != 1 || got[0] != taskToken+"|approve|@alice_ops (Telegram)" || b.fake.Pending() != 0 {
		t.Errorf("resumed %v, pending %d", got, b.fake.Pending())
	}
}

func TestVerifySlack(t *testing.T) {
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	body := []byte("payload=%7B%22type%22%3A%22block_actions%22%7D")
	now := time.Unix(1_800_000_000, 0)
	header := func(ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
		h.Set("X-Slack-Signature", sig)
		return h
	}
	at := func(d time.Duration) http.Header {
		ts := now.Add(d).Unix()
		return header(ts, SignSlack(secret, strconv.FormatInt(ts, 10), body))
	}
	tests := []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"now", at(0), body, nil},
		{"5 min - 1 s old", at(-SlackMaxSkew + time.Second), body, nil},
		{"5 min old", at(-SlackMaxSkew), body, nil},
		{"5 min + 1 s old", at(-SlackMaxSkew - time.Second), body, ErrSlackStale},
		{"5 min - 1 s ahead", at(SlackMaxSkew - time.Second), body, nil},
		{"5 min + 1 s ahead", at(SlackMaxSkew + time.Second), body, ErrSlackStale},
		{"other body", at(0), append([]byte{}, append(body, '1')...), ErrSlackSignature},
		{"other secret", header(now.Unix(), SignSlack("another-secret", strconv.FormatInt(now.Unix(), 10), body)), body, ErrSlackSignature},
		{"other timestamp signed", header(now.Unix(), SignSlack(secret, strconv.FormatInt(now.Unix()-1, 10), body)), body, ErrSlackSignature},
		{"no v0", header(now.Unix(), strings.TrimPrefix(SignSlack(secret, strconv.FormatInt(now.Unix(), 10), body), "v0=")), body, ErrSlackSignature},
		{"not hex", header(now.Unix(), "v0=zz"), body, ErrSlackSignature},
		{"no timestamp", http.Header{"X-Slack-Signature": {"v0=00"}}, body, ErrSlackSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySlack(secret, tt.h, tt.body, now)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("VerifySlack = %v, want %v", err, tt.want)
			}
		})
	}
	if err := VerifySlack("", at(0), body, now); err == nil {
		t.Error("no secret verified")
	}
}

// fakeSlack is Slack's Web API (chat.postMessage) and its response URLs.
type fakeSlack struct {
	*httptest.Server
	mu        sync.Mutex
	posts     []map[string]string // chat.postMessage: auth, body
	responses []string
}

func newFakeSlack(t *testing.T, token string) *fakeSlack {
	f := &fakeSlack{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/chat.postMessage":
			if r.Header.Get("Authorization") != "Bearer "+token {
				io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
				return
			}
			f.posts = append(f.posts, map[string]string{"body": string(body)})
			io.WriteString(w, `{"ok":true,"channel":"C0OPS","ts":"1800000000.000100"}`)
		case strings.HasPrefix(r.URL.Path, "/actions/"):
			f.responses = append(f.responses, string(body))
			io.WriteString(w, `{"ok":true}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func TestSlackApp(t *testing.T) {
	const signing = "slack-signing-secret-0a9b8c7d"
	const token = "xoxb-slack-bot-token-1234"
	h := newHarness(t)
	slack := newFakeSlack(t, token)
	app := &SlackApp{Service: h.svc, Client: &SlackClient{Token: token, API: slack.URL + "/api"}, SigningSecret: signing,
		Channels: []string{"C0OPS"}, ResponseURL: slack.URL + "/actions/", Now: h.clock.now, Logger: h.svc.Logger}
	ctx := context.Background()
	if err := app.Request(ctx, h.a, "C0OPS", "https://stepline.example.com/approvals/x"); err != nil {
		t.Fatal(err)
	}
	var posted struct {
		Channel string `json:"channel"`
		Text    string `json:"text"`
	}
	if len(slack.posts) != 1 || json.Unmarshal([]byte(slack.posts[0]["body"]), &posted) != nil || posted.Channel != "C0OPS" ||
		!strings.Contains(posted.Text, "&lt;script&gt;") || strings.Contains(posted.Text, "<script>") {
		t.Fatalf("posts %v", slack.posts)
	}
	approve := h.svc.Signer.ChatRef(h.a.ID, "approve", "C0OPS")
	if !strings.Contains(slack.posts[0]["body"], approve) {
		t.Fatalf("no approve button in %s", slack.posts[0]["body"])
	}
	srv := httptest.NewServer(app)
	defer srv.Close()
	payload := func(value, channel string) []byte {
		p := fmt.Sprintf(`{"type":"block_actions","user":{"id":"U1","username":"bob"},"channel":{"id":%q},"response_url":%q,"actions":[{"action_id":"stepline_approve","value":%q}]}`,
			channel, slack.URL+"/actions/T1/1/xyz", value)
		return []byte("payload=" + url.QueryEscape(p))
	}
	send := func(body []byte, skew time.Duration, sigSecret string) int {
		ts := strconv.FormatInt(h.clock.now().Add(skew).Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/slack/SLACK_SIGNING_SECRET", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", SignSlack(sigSecret, ts, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := payload(approve, "C0OPS")
	if got := send(good, -SlackMaxSkew-time.Second, signing); got != 401 {
		t.Errorf("stale: %d", got)
	}
	if got := send(good, 0, "wrong"); got != 401 {
		t.Errorf("bad signature: %d", got)
	}
	if got := send(payload(approve, "C0OTHER"), 0, signing); got != 200 {
		t.Errorf("other channel: %d", got)
	}
	if len(h.resumed()) != 0 {
		t.Fatal("resumed before the decision")
	}
	if got := send(good, -SlackMaxSkew+time.Second, signing); got != 200 {
		t.Errorf("decision: %d", got)
	}
	if got := h.resumed(); len(got) != 1 || got[0] != taskToken+"|approve|@bob (Slack)" {
		t.Fatalf("resumed %v", got)
	}
	// The same signed request again, within the 5 minutes: refused as decided.
	if got := send(good, -SlackMaxSkew+time.Second, signing); got != 200 || len(h.resumed()) != 1 {
		t.Errorf("replay: %d, resumed %v", got, h.resumed())
	}
	r := slack.responses
	if len(r) != 3 || !strings.Contains(r[0], answerWrong) || !strings.Contains(r[1], `"replace_original":true`) || !strings.Contains(r[1], "Approved* by @bob (Slack)") ||
		!strings.Contains(r[2], "Already decided: approved by @bob (Slack)") || !strings.Contains(r[2], `"ephemeral"`) {
		t.Errorf("responses %q", r)
	}
	// The body's bound: a press padded to it is read, one byte more is 413.
	padded := func(n int) []byte {
		b := append([]byte(nil), good...)
		return append(b, []byte("&pad="+strings.Repeat("x", n-len(b)-5))...)
	}
	if got := send(padded(MaxSlackBodyBytes), 0, signing); got != 200 {
		t.Errorf("at the bound: %d", got)
	}
	if got := send(padded(MaxSlackBodyBytes+1), 0, signing); got != 413 {
		t.Errorf("over the bound: %d", got)
	}
	// A response_url elsewhere than Slack's hooks gets nothing.
	app.ResponseURL = "https://hooks.slack.com/"
	before := len(slack.responses)
	send(good, 0, signing)
	if len(slack.responses) != before {
		t.Error("posted to a response_url outside the prefix")
	}
}

func TestRoutes(t *testing.T) {
	r, err := ParseRoutes(`{"default":{"channel":"telegram","telegram":{"bot_token":"${OPS_BOT}","chat_id":"-1"}},
	"teams":{"payments":{"channel":"slack","slack":{"bot_token":"${PAY_SLACK}","signing_secret":"${PAY_SIGN}","channel_id":"C1"}},
	"search":{"channel":"telegram","telegram":{"bot_token":"${OPS_BOT}","chat_id":"-2"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]string{"payments": "slack", "search": "telegram", "": "telegram", "nobody": "telegram"} {
		if c, ok := r.For(team); !ok || c.Kind != want {
			t.Errorf("For(%q) = %+v", team, c)
		}
	}
	bots, err := r.TelegramBots()
	if err != nil || len(bots) != 1 || bots[0].Name != "OPS_BOT" || strings.Join(bots[0].Chats, ",") != "-1,-2" {
		t.Errorf("bots %+v %v", bots, err)
	}
	r.Teams["search"].Telegram.WebhookSecret = "${OTHER}"
	if _, err := r.TelegramBots(); err == nil || !strings.Contains(err.Error(), "search") {
		t.Errorf("disagreeing secrets: %v", err)
	}
	if apps := r.SlackApps(); len(apps) != 1 || apps[0].Name != "PAY_SIGN" || strings.Join(apps[0].Channels, ",") != "C1" {
		t.Errorf("apps %+v", apps)
	}
	if _, ok := (Routes{}).For("x"); ok {
		t.Error("empty routes route")
	}
}

// TestLongRequests: a very long request is cut, its outcome and link kept,
// no entity cut, within the channels' bounds.
func TestLongRequests(t *testing.T) {
	now := t0
	a := store.Approval{ID: "x", RunID: "run-1", Step: "s", Pipeline: "p", Message: strings.Repeat("<&>", 20000), ExpiresAt: now.Add(time.Hour),
		Decision: store.DecisionApproved, DecidedBy: "@alice (Telegram)"}
	text := TelegramText(a, "https://stepline.example.com/approvals/tok", now)
	if n := len([]rune(text)); n > telegram.MaxMessageRunes {
		t.Errorf("Telegram text of %d characters", n)
	}
	if !strings.Contains(text, "✅ <b>Approved</b> by @alice (Telegram)") || !strings.Contains(text, `<a href="https://stepline.example.com/approvals/tok">`) ||
		!strings.Contains(text, telegram.TruncatedNote) || telegram.Sanitize(text) != text {
		t.Errorf("Telegram text ends %q", text[len(text)-300:])
	}
	s := slackText(a, "https://stepline.example.com/approvals/tok", now)
	if n := len([]rune(s)); n > 3000 || !strings.Contains(s, "*Approved* by @alice (Telegram)") {
		t.Errorf("Slack text of %d characters ends %q", n, s[len(s)-200:])
	}
	body := s[strings.Index(s, "\n\n")+2 : strings.Index(s, "…")]
	if strings.Count(body, "&") != strings.Count(body, "&amp;")+strings.Count(body, "&lt;")+strings.Count(body, "&gt;") {
		t.Error("an entity was cut in the Slack text")
	}
}
