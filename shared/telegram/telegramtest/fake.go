// Package telegramtest is a fake Telegram Bot API for tests: an
// httptest server that speaks the Bot API's wire format for the methods
// Stepline calls (sendMessage, editMessageText, answerCallbackQuery,
// getUpdates) and refuses what the real one refuses (a wrong token, text
// over 4096 characters, callback_data over 64 bytes, malformed HTML).
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/telegram"
)

// Call is one Bot API call the fake received.
type Call struct {
	Method string
	Params map[string]any
}

// Bot is a fake Bot API serving one bot.
type Bot struct {
	*httptest.Server
	Token string

	mu      sync.Mutex
	calls   []Call
	updates []telegram.Update
	nextID  int64
	nextUpd int64
	arrived chan struct{}
}

// New starts a fake Bot API for token, closed when t ends.
func New(t testing.TB, token string) *Bot {
	t.Helper()
	b := &Bot{Token: token, nextID: 100, nextUpd: 1, arrived: make(chan struct{}, 1)}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

// Calls returns the calls of method received so far ("" for all).
func (b *Bot) Calls(method string) []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Call
	for _, c := range b.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Push queues an update for getUpdates, numbering it, and returns it.
func (b *Bot) Push(u telegram.Update) telegram.Update {
	b.mu.Lock()
	u.UpdateID = b.nextUpd
	b.nextUpd++
	b.updates = append(b.updates, u)
	b.mu.Unlock()
	select {
	case b.arrived <- struct{}{}:
	default:
	}
	return u
}

// Pending returns the updates not yet confirmed by a getUpdates offset.
func (b *Bot) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.updates)
}

func fail(w http.ResponseWriter, code int, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": code, "description": desc})
}

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func (b *Bot) serve(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + b.Token + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		fail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	raw, _ := io.ReadAll(r.Body)
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: can't parse JSON")
		return
	}
	if method != "getUpdates" {
		b.mu.Lock()
		b.calls = append(b.calls, Call{Method: method, Params: p})
		b.mu.Unlock()
	}
	switch method {
	case "sendMessage", "editMessageText":
		text, _ := p["text"].(string)
		if text == "" {
			fail(w, http.StatusBadRequest, "Bad Request: message text is empty")
			return
		}
		if utf8.RuneCountInString(text) > telegram.MaxMessageRunes {
			fail(w, http.StatusBadRequest, "Bad Request: message is too long")
			return
		}
		if p["parse_mode"] == telegram.ParseHTML && telegram.Sanitize(text) != text {
			fail(w, http.StatusBadRequest, "Bad Request: can't parse entities: unsupported start tag")
			return
		}
		if kb, _ := p["reply_markup"].(map[string]any); kb != nil {
			rows, _ := kb["inline_keyboard"].([]any)
			for _, row := range rows {
				for _, btn := range row.([]any) {
					d, _ := btn.(map[string]any)["callback_data"].(string)
					if len(d) > telegram.MaxCallbackData {
						fail(w, http.StatusBadRequest, "Bad Request: BUTTON_DATA_INVALID")
						return
					}
				}
			}
		}
		chat := fmt.Sprint(p["chat_id"])
		var id int64
		fmt.Sscan(chat, &id)
		b.mu.Lock()
		b.nextID++
		mid := b.nextID
		b.mu.Unlock()
		if method == "editMessageText" {
			ok(w, true)
			return
		}
		ok(w, telegram.Message{MessageID: mid, Chat: telegram.Chat{ID: id, Type: "supergroup"}, Date: time.Now().Unix(), Text: text})
	case "answerCallbackQuery":
		if q, _ := p["callback_query_id"].(string); q == "" {
			fail(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid")
			return
		}
		ok(w, true)
	case "getUpdates":
		b.getUpdates(w, r, p)
	default:
		fail(w, http.StatusNotFound, "Not Found: method not found")
	}
}

// getUpdates confirms the updates below offset and answers the rest,
// waiting up to timeout seconds for one.
func (b *Bot) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]any) {
	offset, _ := p["offset"].(float64)
	wait, _ := p["timeout"].(float64)
	deadline := time.After(time.Duration(wait * float64(time.Second)))
	for {
		b.mu.Lock()
		kept := b.updates[:0]
		for _, u := range b.updates {
			if float64(u.UpdateID) >= offset {
				kept = append(kept, u)
			}
		}
		b.updates = kept
		out := append([]telegram.Update(nil), kept...)
		b.mu.Unlock()
		if len(out) > 0 || wait <= 0 {
			ok(w, out)
			return
		}
		select {
		case <-b.arrived:
		case <-deadline:
			ok(w, []telegram.Update{})
			return
		case <-r.Context().Done():
			return
		}
	}
}
