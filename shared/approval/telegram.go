package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telegram"
)

// PollWait is how long one getUpdates long poll waits for an update.
const PollWait = 25 * time.Second

// TelegramBot takes the decisions made with the inline buttons of one
// bot's approval messages: from long polling (Poll) or from the bot's
// webhook (ServeHTTP). Each button press is checked (its chat is one the
// bot sends approvals to, its reference verifies for that chat), decided
// once through the Service, answered with answerCallbackQuery, and the
// message edited to show the outcome.
type TelegramBot struct {
	Service *Service
	Client  *telegram.Client
	// Chats are the chat IDs the bot sends approval requests to: a press
	// in any other chat is refused.
	Chats []string
	// Secret is the webhook's secret_token; ServeHTTP refuses every
	// request without it, and every request when it is "".
	Secret string
	// Link returns an approval's page link for the edited message ("" or
	// nil: none).
	Link func(a store.Approval) string
	// NoButtons sends requests with their link only: nothing takes this
	// bot's button presses.
	NoButtons bool
	Logger    *slog.Logger
}

func (b *TelegramBot) log() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}

// Answers shown to the person who pressed a button.
const (
	answerApproved = "Approved. The run goes on."
	answerRejected = "Rejected. The run goes on with the rejection."
	answerForged   = "This button is not valid: no decision was made."
	answerWrong    = "Approvals are not taken in this chat: no decision was made."
	answerExpired  = "This approval has expired: no decision was made."
	answerDecided  = "Already decided"
	answerNotFound = "There is no such approval."
	answerResume   = "Your decision is recorded, but the run could not be resumed with it. Tell the pipeline's operators."
	answerFailed   = "The decision could not be recorded. Try again later."
)

// Handle takes one update: a button press of an approval message is
// decided and answered; any other update is ignored. It returns what
// happened to the press (nil: decided), for the log and for tests.
func (b *TelegramBot) Handle(ctx context.Context, u telegram.Update) error {
	q := u.CallbackQuery
	if q == nil {
		return nil
	}
	chat := ""
	if q.Message != nil {
		chat = strconv.FormatInt(q.Message.Chat.ID, 10)
	}
	if chat == "" || !slices.Contains(b.Chats, chat) {
		b.answer(ctx, q.ID, answerWrong, true)
		b.log().WarnContext(ctx, "telegram approval: button pressed in a chat that takes no approvals", "chat", chat, "user", q.From.ID)
		return fmt.Errorf("chat %s: %w", chat, ErrWrongChat)
	}
	by := q.From.Name() + " (Telegram)"
	a, decision, err := b.Service.DecideChat(ctx, q.Data, chat, by)
	switch {
	case err == nil:
		text := answerApproved
		if decision == task.Reject {
			text = answerRejected
		}
		b.answer(ctx, q.ID, text, false)
		b.edit(ctx, q.Message, a)
		return nil
	case errors.Is(err, ErrForged):
		b.answer(ctx, q.ID, answerForged, true)
	case errors.Is(err, ErrExpired):
		b.answer(ctx, q.ID, answerExpired, true)
		b.edit(ctx, q.Message, a)
	case errors.Is(err, ErrDecided):
		b.answer(ctx, q.ID, fmt.Sprintf("%s: %s by %s.", answerDecided, a.Decision, a.DecidedBy), true)
		b.edit(ctx, q.Message, a)
	case errors.Is(err, ErrNotFound):
		b.answer(ctx, q.ID, answerNotFound, true)
	case errors.Is(err, ErrResume):
		b.answer(ctx, q.ID, answerResume, true)
		b.edit(ctx, q.Message, a)
	default:
		b.answer(ctx, q.ID, answerFailed, true)
	}
	b.log().WarnContext(ctx, "telegram approval refused", "chat", chat, "user", q.From.ID, "error", err.Error())
	return err
}

func (b *TelegramBot) answer(ctx context.Context, id, text string, alert bool) {
	if err := b.Client.Answer(ctx, id, text, alert); err != nil {
		b.log().WarnContext(ctx, "telegram: answer button press", "error", err.Error())
	}
}

// edit shows the approval's state in its message, without buttons.
func (b *TelegramBot) edit(ctx context.Context, m *telegram.Message, a store.Approval) {
	if m == nil || a.ID == "" {
		return
	}
	link := ""
	if b.Link != nil {
		link = b.Link(a)
	}
	text := TelegramText(a, link, b.Service.Signer.now())
	if err := b.Client.Edit(ctx, m.Chat.ID, m.MessageID, text); err != nil {
		b.log().WarnContext(ctx, "telegram: edit approval message", "approval", a.ID, "error", err.Error())
	}
}

// TelegramText is an approval's message in Telegram HTML: what is asked
// (escaped: it was rendered from data), where, until when, the page link,
// and the decision once made.
func TelegramText(a store.Approval, link string, now time.Time) string {
	var tail strings.Builder
	b := &tail
	switch {
	case a.Decision == store.DecisionApproved:
		fmt.Fprintf(b, "✅ <b>Approved</b> by %s", telegram.Escape(a.DecidedBy))
	case a.Decision == store.DecisionRejected:
		fmt.Fprintf(b, "❌ <b>Rejected</b> by %s", telegram.Escape(a.DecidedBy))
	case !now.Before(a.ExpiresAt):
		fmt.Fprintf(b, "⌛ <b>Expired</b> at %s", when(a.ExpiresAt))
	default:
		fmt.Fprintf(b, "Open until %s", when(a.ExpiresAt))
	}
	if a.DecidedAt != nil {
		fmt.Fprintf(b, " at %s", when(*a.DecidedAt))
	}
	if link != "" {
		fmt.Fprintf(b, "\n<a href=\"%s\">Approval page</a>", telegram.Escape(link))
	}
	head := fmt.Sprintf("<b>Approval needed</b>: <code>%s</code> › <code>%s</code>\nRun <code>%s</code>\n\n",
		telegram.Escape(cutRunes(a.Pipeline, 200)), telegram.Escape(cutRunes(a.Step, 200)), telegram.Escape(cutRunes(a.RunID, 200)))
	// Cut the request, never the outcome or the link: the message text
	// gets what the rest leaves, and Cut keeps its entities whole.
	room := telegram.MaxMessageRunes - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail.String()) - 2
	return head + telegram.Cut(telegram.Escape(a.Message), max(room, 0)) + "\n\n" + tail.String()
}

// cutRunes cuts s to at most n characters.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Request sends a's approval request to chat with Approve and Reject
// buttons (none with NoButtons, or when the key cannot sign them: the
// link decides).
func (b *TelegramBot) Request(ctx context.Context, a store.Approval, chat, link string) error {
	var kb *telegram.Keyboard
	ap, rj := b.Service.Signer.ChatRef(a.ID, task.Approve, chat), b.Service.Signer.ChatRef(a.ID, task.Reject, chat)
	if ap != "" && rj != "" && !b.NoButtons {
		kb = &telegram.Keyboard{InlineKeyboard: [][]telegram.Button{{
			{Text: "✅ Approve", CallbackData: ap},
			{Text: "❌ Reject", CallbackData: rj},
		}}}
	}
	if _, err := b.Client.Send(ctx, chat, TelegramText(a, link, b.Service.Signer.now()), kb); err != nil {
		return fmt.Errorf("telegram approval request to chat %s: %w", chat, err)
	}
	return nil
}

// Poll long-polls the bot's updates and handles them until ctx ends,
// waiting a little longer after each failed poll (up to a minute). Every
// update handled is confirmed by the next poll's offset; a press handled
// twice (after a restart) is refused as already decided.
func (b *TelegramBot) Poll(ctx context.Context, wait time.Duration) error {
	var offset int64
	backoff := time.Second
	for {
		us, err := b.Client.Updates(ctx, offset, wait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			b.log().WarnContext(ctx, "telegram: getUpdates", "error", err.Error(), "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			backoff = min(backoff*2, time.Minute)
			continue
		}
		backoff = time.Second
		for _, u := range us {
			_ = b.Handle(ctx, u)
			offset = max(offset, u.UpdateID+1)
		}
	}
}

var _ http.Handler = (*TelegramBot)(nil)

// ServeHTTP takes the bot's webhook: POST with the secret_token header
// (compared in constant time) and one update as JSON, at most
// telegram.MaxUpdateBytes. A handled update is answered 200 whatever the
// decision (Telegram would resend anything else); a request without the
// secret 401, one too large 413, one not an update 400.
func (b *TelegramBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if !telegram.CheckSecret(r, b.Secret) {
		b.log().WarnContext(r.Context(), "telegram webhook: request without the secret token refused", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, telegram.MaxUpdateBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "update too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read update", http.StatusBadRequest)
		return
	}
	var u telegram.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		http.Error(w, "not a Telegram update", http.StatusBadRequest)
		return
	}
	_ = b.Handle(r.Context(), u)
	w.WriteHeader(http.StatusOK)
}
