package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const botToken = "123456:AAH-secret-bot-token-xyz"

func TestEscapeAndSanitize(t *testing.T) {
	hostile := `<a href="https://evil.example">click</a> & <script>x</script> "q"`
	if got, want := Escape(hostile), `&lt;a href=&quot;https://evil.example&quot;&gt;click&lt;/a&gt; &amp; &lt;script&gt;x&lt;/script&gt; &quot;q&quot;`; got != want {
		t.Errorf("Escape = %q", got)
	}
	d := EscapeData(map[string]any{"s": "<b>", "l": []any{"a&b", 3}, "n": map[string]any{"k": ">"}, "ss": []string{"<"}})
	m := d.(map[string]any)
	type typed struct{ A []string }
	if got := EscapeData([]typed{{A: []string{"<i>"}}}); got.([]any)[0].(map[string]any)["A"].([]any)[0] != "&lt;i&gt;" {
		t.Errorf("typed value: %#v", got)
	}
	if m["s"] != "&lt;b&gt;" || m["l"].([]any)[0] != "a&amp;b" || m["l"].([]any)[1] != 3 || m["n"].(map[string]any)["k"] != "&gt;" || m["ss"].([]any)[0] != "&lt;" {
		t.Errorf("EscapeData = %#v", d)
	}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<b>bold</b> &amp; &#128512; &#x1F600;", "<b>bold</b> &amp; &#128512; &#x1F600;"},
		{"a & b < c > d", "a &amp; b &lt; c &gt; d"},
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"<b>open", "<b>open</b>"},
		{"<b><i>x</b>", "<b><i>x</i></b>"},
		{"</i>stray", "&lt;/i&gt;stray"},
		{`<a href="https://x.example/?a=1">l</a>`, `<a href="https://x.example/?a=1">l</a>`},
		{`<a href="x" onclick=y>l</a>`, `&lt;a href="x" onclick=y&gt;l&lt;/a&gt;`},
		{"&bogus; &lt", "&amp;bogus; &amp;lt"},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCut(t *testing.T) {
	const max = 40
	// At, below and above the bound.
	for _, n := range []int{max - 1, max, max + 1} {
		s := strings.Repeat("é", n)
		got := Cut(s, max)
		if n <= max && got != s {
			t.Errorf("%d runes: cut to %q", n, got)
		}
		if n > max && (utf8.RuneCountInString(got) != max || !strings.HasSuffix(got, TruncatedNote)) {
			t.Errorf("%d runes: %q (%d runes)", n, got, utf8.RuneCountInString(got))
		}
	}
	// Tags stay closed and entities whole.
	s := "<b>" + strings.Repeat("x", 20) + "&amp;&amp;&amp;" + strings.Repeat("y", 30) + "</b>"
	got := Cut(s, max)
	if !strings.HasPrefix(got, "<b>") || !strings.HasSuffix(got, "</b>"+TruncatedNote) || utf8.RuneCountInString(got) > max {
		t.Errorf("Cut = %q", got)
	}
	if body := strings.TrimSuffix(strings.TrimPrefix(got, "<b>"), "</b>"+TruncatedNote); strings.Count(body, "&") != strings.Count(body, "&amp;") {
		t.Errorf("an entity was cut: %q", got)
	}
}

// fakeBot is a Bot API server: it records calls and answers from a table.
type fakeBot struct {
	srv   *httptest.Server
	calls []string
}

func newFakeBot(t *testing.T, answer func(method string, params map[string]any) (int, string)) *fakeBot {
	t.Helper()
	f := &fakeBot{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := "/bot" + botToken + "/"
		if !strings.HasPrefix(r.URL.Path, prefix) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
			return
		}
		method := strings.TrimPrefix(r.URL.Path, prefix)
		var params map[string]any
		if err := json.NewDecoder(r.Body).Decode(&params); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: bad JSON"}`)
			return
		}
		f.calls = append(f.calls, method)
		code, body := answer(method, params)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	var sent map[string]any
	bot := newFakeBot(t, func(method string, p map[string]any) (int, string) {
		switch method {
		case "sendMessage":
			sent = p
			return 200, `{"ok":true,"result":{"message_id":77,"chat":{"id":-1001,"type":"supergroup"},"text":"x"}}`
		case "getUpdates":
			return 200, `{"ok":true,"result":[{"update_id":5,"callback_query":{"id":"q1","from":{"id":9,"username":"alice"},"data":"d","message":{"message_id":77,"chat":{"id":-1001}}}}]}`
		}
		return 400, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found for bot ` + botToken + `"}`
	})
	c := &Client{Token: botToken, API: bot.srv.URL}
	m, err := c.Send(ctx, "-1001", "<b>hi</b> <x>", &Keyboard{InlineKeyboard: [][]Button{{{Text: "A", CallbackData: "a"}}}})
	if err != nil || m.MessageID != 77 || m.Chat.ID != -1001 {
		t.Fatalf("Send = %+v, %v", m, err)
	}
	if sent["text"] != "<b>hi</b> &lt;x&gt;" || sent["parse_mode"] != "HTML" || sent["chat_id"] != "-1001" {
		t.Errorf("sent %v", sent)
	}
	us, err := c.Updates(ctx, 5, time.Second)
	if err != nil || len(us) != 1 || us[0].CallbackQuery.From.Name() != "@alice" || us[0].CallbackQuery.Message.Chat.ID != -1001 {
		t.Fatalf("Updates = %+v, %v", us, err)
	}
	err = c.Answer(ctx, "q1", "x", false)
	var api *APIError
	if !errors.As(err, &api) || api.Code != 400 || strings.Contains(err.Error(), botToken) {
		t.Errorf("refusal: %v", err)
	}
	// A network error names the URL, which holds the token.
	dead := &Client{Token: botToken, API: "http://127.0.0.1:1"}
	if _, err := dead.Send(ctx, "1", "x", nil); err == nil || strings.Contains(err.Error(), botToken) || strings.Contains(err.Error(), "123456") {
		t.Errorf("network error: %v", err)
	}
	// Not a Bot API answer.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>"+r.URL.Path) }))
	defer junk.Close()
	if _, err := (&Client{Token: botToken, API: junk.URL}).Send(ctx, "1", "x", nil); err == nil || strings.Contains(err.Error(), botToken) {
		t.Errorf("junk answer: %v", err)
	}
	if _, err := (&Client{}).Send(ctx, "1", "x", nil); !errors.Is(err, ErrNoToken) {
		t.Errorf("no token: %v", err)
	}
}

func TestCheckSecret(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/telegram/default", nil)
	if CheckSecret(r, "s3cret") {
		t.Error("no header accepted")
	}
	r.Header.Set(SecretHeader, "s3cret")
	if !CheckSecret(r, "s3cret") || CheckSecret(r, "s3cre") || CheckSecret(r, "s3cret!") || CheckSecret(r, "") {
		t.Error("secret compared wrongly")
	}
}
