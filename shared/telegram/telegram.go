package telegram

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/telemetry"
)

// DefaultAPI is the Bot API's base URL.
const DefaultAPI = "https://api.telegram.org"

// Bounds.
const (
	// MaxMessageRunes bounds a message's text: the Bot API refuses longer
	// ones. Send cuts a longer text (see Cut).
	MaxMessageRunes = 4096
	// MaxCallbackData is the Bot API's bound on an inline button's
	// callback_data, in bytes.
	MaxCallbackData = 64
	// MaxAnswerBytes bounds a Bot API answer read; getUpdates with 100
	// updates of long messages stays well under it.
	MaxAnswerBytes = 4 << 20
	// MaxUpdateBytes bounds one update posted to a webhook.
	MaxUpdateBytes = 256 << 10
	// SecretHeader carries the webhook's secret_token on every update
	// Telegram posts.
	SecretHeader = "X-Telegram-Bot-Api-Secret-Token"
)

// Client calls the Bot API of one bot. Token is the bot's token as
// resolved (never written in config: a ${NAME} secret); it is part of every
// request URL, so every error a Client returns is scrubbed of it.
type Client struct {
	Token string
	API   string       // base URL; "" is DefaultAPI
	HTTP  *http.Client // nil: http.DefaultClient
}

// APIError is a refusal by the Bot API: {"ok": false, "error_code",
// "description"}.
type APIError struct {
	Method      string
	Code        int
	Description string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// ErrNoToken: the client has no bot token.
var ErrNoToken = errors.New("telegram: no bot token")

// Call posts params as JSON to the Bot API method and decodes the result
// into out (nil: ignored). Errors never hold the token.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	if c.Token == "" {
		return ErrNoToken
	}
	err := c.call(ctx, method, params, out)
	if err != nil {
		red := secret.NewRedactor(nil)
		red.Add(c.Token)
		msg := red.Redact(err.Error())
		var api *APIError
		if errors.As(err, &api) {
			api.Description = red.Redact(api.Description)
			return api
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s: %w", msg, context.Canceled)
		}
		return errors.New(msg)
	}
	return nil
}

func (c *Client) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	base := strings.TrimRight(c.API, "/")
	if base == "" {
		base = DefaultAPI
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bot"+c.Token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: bad API URL", method)
	}
	req.Header.Set("Content-Type", "application/json")
	telemetry.Inject(ctx, req.Header)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// *url.Error spells out the URL, which holds the token: keep only
		// the cause.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("telegram %s: read answer: %w", method, err)
	}
	if len(raw) > MaxAnswerBytes {
		return fmt.Errorf("telegram %s: answer larger than %d bytes", method, MaxAnswerBytes)
	}
	var ans struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("telegram %s: HTTP %d, not a Bot API answer", method, resp.StatusCode)
	}
	if !ans.OK {
		code := ans.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return &APIError{Method: method, Code: code, Description: cut(ans.Description, 300)}
	}
	if out != nil && len(ans.Result) > 0 {
		if err := json.Unmarshal(ans.Result, out); err != nil {
			return fmt.Errorf("telegram %s: result: %w", method, err)
		}
	}
	return nil
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// User is a Telegram user.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Name is how a user is named to people: @username, else the full name,
// else the numeric ID.
func (u User) Name() string {
	switch {
	case u.Username != "":
		return "@" + u.Username
	case strings.TrimSpace(u.FirstName+" "+u.LastName) != "":
		return strings.TrimSpace(u.FirstName + " " + u.LastName)
	}
	return fmt.Sprintf("user %d", u.ID)
}

// Chat is a chat.
type Chat struct {
	ID   int64  `json:"id"`
	Type string `json:"type,omitempty"`
}

// Message is a message (the fields Stepline reads).
type Message struct {
	MessageID int64  `json:"message_id"`
	Chat      Chat   `json:"chat"`
	Date      int64  `json:"date,omitempty"`
	Text      string `json:"text,omitempty"`
}

// CallbackQuery is a press of an inline button.
type CallbackQuery struct {
	ID      string   `json:"id"`
	From    User     `json:"from"`
	Message *Message `json:"message,omitempty"`
	Data    string   `json:"data,omitempty"`
}

// Update is one update of getUpdates or of a webhook.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message,omitempty"`
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
}

// Button is an inline keyboard button carrying callback data.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// Keyboard is an inline keyboard: rows of buttons.
type Keyboard struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

// SendMessage is sendMessage's parameters (HTML parse mode).
type SendMessage struct {
	ChatID      string    `json:"chat_id"`
	Text        string    `json:"text"`
	ParseMode   string    `json:"parse_mode,omitempty"`
	ReplyMarkup *Keyboard `json:"reply_markup,omitempty"`
	// LinkPreviewOptions off: a preview would fetch the approval link.
	LinkPreviewOptions *LinkPreviewOptions `json:"link_preview_options,omitempty"`
}

// LinkPreviewOptions is the Bot API's link_preview_options.
type LinkPreviewOptions struct {
	IsDisabled bool `json:"is_disabled"`
}

// ParseHTML is the HTML parse mode.
const ParseHTML = "HTML"

// Send sends text (Telegram HTML, cut to MaxMessageRunes with Cut) to
// chatID, with an inline keyboard when kb is not nil, link previews off.
func (c *Client) Send(ctx context.Context, chatID, text string, kb *Keyboard) (Message, error) {
	var m Message
	err := c.Call(ctx, "sendMessage", SendMessage{ChatID: chatID, Text: Cut(text, MaxMessageRunes), ParseMode: ParseHTML,
		ReplyMarkup: kb, LinkPreviewOptions: &LinkPreviewOptions{IsDisabled: true}}, &m)
	return m, err
}

// Edit replaces the text of a message the bot sent and removes its inline
// keyboard.
func (c *Client) Edit(ctx context.Context, chatID int64, messageID int64, text string) error {
	return c.Call(ctx, "editMessageText", map[string]any{
		"chat_id": chatID, "message_id": messageID, "text": Cut(text, MaxMessageRunes), "parse_mode": ParseHTML,
		"reply_markup":         Keyboard{InlineKeyboard: [][]Button{}},
		"link_preview_options": LinkPreviewOptions{IsDisabled: true},
	}, nil)
}

// Answer answers a callback query: text shows to the user who pressed the
// button (an alert when alert is true).
func (c *Client) Answer(ctx context.Context, queryID, text string, alert bool) error {
	return c.Call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": queryID, "text": cut(text, 190), "show_alert": alert}, nil)
}

// Updates long-polls getUpdates: the updates from offset on, waiting up
// to wait for one. Only callback queries are asked for.
func (c *Client) Updates(ctx context.Context, offset int64, wait time.Duration) ([]Update, error) {
	var us []Update
	err := c.Call(ctx, "getUpdates", map[string]any{
		"offset": offset, "timeout": int(wait / time.Second), "limit": 100,
		"allowed_updates": []string{"callback_query"},
	}, &us)
	return us, err
}

// CheckSecret reports whether the secret_token header of a webhook
// request equals want, in constant time. An empty want never matches.
func CheckSecret(r *http.Request, want string) bool {
	got := r.Header.Get(SecretHeader)
	if want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
