package approval

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

// Slack bounds and defaults.
const (
	// DefaultSlackAPI is the Slack Web API's base URL.
	DefaultSlackAPI = "https://slack.com/api"
	// DefaultSlackResponseURL is what a button press's response_url must
	// start with: Slack's own hooks.
	DefaultSlackResponseURL = "https://hooks.slack.com/"
	// SlackMaxSkew is how far a request's X-Slack-Request-Timestamp may
	// be from now, either way: an older request is refused as a replay.
	SlackMaxSkew = 5 * time.Minute
	// MaxSlackBodyBytes bounds an interaction request's body.
	MaxSlackBodyBytes = 64 << 10
)

// Errors of VerifySlack.
var (
	ErrSlackSignature = errors.New("slack request signature does not verify")
	ErrSlackStale     = errors.New("slack request timestamp is more than 5 minutes from now")
)

// VerifySlack checks a Slack request's signature: X-Slack-Signature must
// be "v0=" and the hex HMAC-SHA256, keyed with the app's signing secret,
// of "v0:" + X-Slack-Request-Timestamp + ":" + body (compared in constant
// time), and the timestamp at most SlackMaxSkew from now.
func VerifySlack(signingSecret string, h http.Header, body []byte, now time.Time) error {
	if signingSecret == "" {
		return fmt.Errorf("%w: no signing secret", ErrSlackSignature)
	}
	ts := h.Get("X-Slack-Request-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp", ErrSlackSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > SlackMaxSkew || d < -SlackMaxSkew {
		return ErrSlackStale
	}
	sig, ok := strings.CutPrefix(h.Get("X-Slack-Signature"), "v0=")
	got, err := hex.DecodeString(sig)
	if !ok || err != nil {
		return ErrSlackSignature
	}
	if !hmac.Equal(got, slackMAC(signingSecret, ts, body)) {
		return ErrSlackSignature
	}
	return nil
}

func slackMAC(signingSecret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(signingSecret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// SignSlack returns the X-Slack-Signature of body at ts, as Slack makes it
// (for tests and tools that speak for Slack).
func SignSlack(signingSecret, ts string, body []byte) string {
	return "v0=" + hex.EncodeToString(slackMAC(signingSecret, ts, body))
}

// SlackClient calls the Slack Web API as a bot. Errors never hold the
// token.
type SlackClient struct {
	Token string
	API   string       // "": DefaultSlackAPI
	HTTP  *http.Client // nil: http.DefaultClient
}

// Post calls chat.postMessage with text and blocks in channel.
func (c *SlackClient) Post(ctx context.Context, channel, text string, blocks []any) error {
	body, err := json.Marshal(map[string]any{"channel": channel, "text": text, "blocks": blocks, "unfurl_links": false})
	if err != nil {
		return err
	}
	base := strings.TrimRight(c.API, "/")
	if base == "" {
		base = DefaultSlackAPI
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat.postMessage", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("slack chat.postMessage: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	telemetry.Inject(ctx, req.Header)
	red := secret.NewRedactor(nil)
	red.Add(c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return red.Error(fmt.Errorf("slack chat.postMessage: %w", err))
	}
	defer resp.Body.Close()
	var ans struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans); err != nil {
		return fmt.Errorf("slack chat.postMessage: HTTP %d, not a Web API answer", resp.StatusCode)
	}
	if !ans.OK {
		return red.Error(fmt.Errorf("slack chat.postMessage: %s", cutText(ans.Error, 200)))
	}
	return nil
}

func cutText(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// slackCut cuts escaped text to at most n characters without cutting an
// entity (a section's text holds 3,000).
func slackCut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	r = r[:n]
	if i := strings.LastIndexByte(string(r[max(len(r)-5, 0):]), '&'); i >= 0 {
		tail := string(r[max(len(r)-5, 0):])
		if !strings.Contains(tail[i:], ";") {
			r = []rune(strings.TrimSuffix(string(r), tail[i:]))
		}
	}
	return string(r) + "…"
}

// SlackEscape escapes text for Slack's mrkdwn: &, < and >, so that data
// can make no link and no @channel mention.
func SlackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackText is an approval's message in Slack mrkdwn.
func slackText(a store.Approval, link string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*Approval needed*: `%s` › `%s` (run `%s`)\n\n%s\n\n",
		SlackEscape(a.Pipeline), SlackEscape(a.Step), SlackEscape(a.RunID), slackCut(SlackEscape(a.Message), 2500))
	switch {
	case a.Decision == store.DecisionApproved:
		fmt.Fprintf(&b, ":white_check_mark: *Approved* by %s", SlackEscape(a.DecidedBy))
	case a.Decision == store.DecisionRejected:
		fmt.Fprintf(&b, ":x: *Rejected* by %s", SlackEscape(a.DecidedBy))
	case !now.Before(a.ExpiresAt):
		fmt.Fprintf(&b, ":hourglass: *Expired* at %s", when(a.ExpiresAt))
	default:
		fmt.Fprintf(&b, "Open until %s", when(a.ExpiresAt))
	}
	if link != "" {
		fmt.Fprintf(&b, " · <%s|Approval page>", link)
	}
	return b.String()
}

// SlackApp takes the decisions made with the buttons of one Slack app's
// approval messages, which Slack posts to the app's request URL
// (ServeHTTP).
type SlackApp struct {
	Service       *Service
	Client        *SlackClient // posts requests; nil on a receiver that sends none
	SigningSecret string
	// Channels are the channel IDs approval requests go to: a press in
	// another channel is refused.
	Channels []string
	// HTTP posts to a press's response_url; nil: http.DefaultClient.
	HTTP *http.Client
	// ResponseURL is what a response_url must start with; "":
	// DefaultSlackResponseURL.
	ResponseURL string
	Now         func() time.Time
	Link        func(a store.Approval) string
	Logger      *slog.Logger
}

func (s *SlackApp) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *SlackApp) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Request posts a's request to channel with Approve and Reject buttons.
func (s *SlackApp) Request(ctx context.Context, a store.Approval, channel, link string) error {
	text := slackText(a, link, s.Service.Signer.now())
	blocks := []any{map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}}}
	ap, rj := s.Service.Signer.ChatRef(a.ID, task.Approve, channel), s.Service.Signer.ChatRef(a.ID, task.Reject, channel)
	if ap != "" && rj != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{
			map[string]any{"type": "button", "action_id": "stepline_approve", "style": "primary", "value": ap, "text": map[string]any{"type": "plain_text", "text": "Approve"}},
			map[string]any{"type": "button", "action_id": "stepline_reject", "style": "danger", "value": rj, "text": map[string]any{"type": "plain_text", "text": "Reject"}},
		}})
	}
	if err := s.Client.Post(ctx, channel, text, blocks); err != nil {
		return fmt.Errorf("slack approval request to %s: %w", channel, err)
	}
	return nil
}

// slackPayload is the part of a block_actions payload read here.
type slackPayload struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	ResponseURL string `json:"response_url"`
	Actions     []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

var _ http.Handler = (*SlackApp)(nil)

// ServeHTTP takes a button press Slack posts to the request URL: the
// signature is verified (VerifySlack) before the body is read as data, a
// press of an approval button is decided once, and the outcome replaces
// the message through the press's response_url (a refusal is shown to the
// presser alone). Answers: 200 once verified (Slack shows an error for
// anything else), 401 for a bad signature or a stale timestamp, 413 for a
// body over MaxSlackBodyBytes, 400 for a body that is no payload.
func (s *SlackApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSlackBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if err := VerifySlack(s.SigningSecret, r.Header, body, s.now()); err != nil {
		s.log().WarnContext(r.Context(), "slack request refused", "error", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	var p slackPayload
	if err != nil || json.Unmarshal([]byte(form.Get("payload")), &p) != nil {
		http.Error(w, "not a Slack interaction payload", http.StatusBadRequest)
		return
	}
	_ = s.Handle(r.Context(), p)
	w.WriteHeader(http.StatusOK)
}

// Handle decides a verified payload's approval button press. It returns
// what happened to it (nil: decided).
func (s *SlackApp) Handle(ctx context.Context, p slackPayload) error {
	if p.Type != "block_actions" || len(p.Actions) != 1 || !strings.HasPrefix(p.Actions[0].ActionID, "stepline_") {
		return nil
	}
	if !slices.Contains(s.Channels, p.Channel.ID) {
		s.respond(ctx, p.ResponseURL, answerWrong, store.Approval{})
		return fmt.Errorf("channel %s: %w", p.Channel.ID, ErrWrongChat)
	}
	who := p.User.Username
	if who == "" {
		who = p.User.Name
	}
	if who == "" {
		who = p.User.ID
	}
	a, _, err := s.Service.DecideChat(ctx, p.Actions[0].Value, p.Channel.ID, "@"+who+" (Slack)")
	switch {
	case err == nil:
		s.respond(ctx, p.ResponseURL, "", a)
		return nil
	case errors.Is(err, ErrForged):
		s.respond(ctx, p.ResponseURL, answerForged, store.Approval{})
	case errors.Is(err, ErrExpired):
		s.respond(ctx, p.ResponseURL, answerExpired, a)
	case errors.Is(err, ErrDecided):
		s.respond(ctx, p.ResponseURL, fmt.Sprintf("%s: %s by %s.", answerDecided, a.Decision, SlackEscape(a.DecidedBy)), store.Approval{})
	case errors.Is(err, ErrNotFound):
		s.respond(ctx, p.ResponseURL, answerNotFound, store.Approval{})
	case errors.Is(err, ErrResume):
		s.respond(ctx, p.ResponseURL, answerResume, store.Approval{})
	default:
		s.respond(ctx, p.ResponseURL, answerFailed, store.Approval{})
	}
	s.log().WarnContext(ctx, "slack approval refused", "channel", p.Channel.ID, "user", p.User.ID, "error", err.Error())
	return err
}

// respond posts to a press's response_url: the message replaced with the
// approval's state when a is set, and refusal, when set, shown to the
// presser alone.
func (s *SlackApp) respond(ctx context.Context, responseURL, refusal string, a store.Approval) {
	prefix := s.ResponseURL
	if prefix == "" {
		prefix = DefaultSlackResponseURL
	}
	if !strings.HasPrefix(responseURL, prefix) {
		s.log().WarnContext(ctx, "slack: response_url refused", "prefix", prefix)
		return
	}
	var msgs []map[string]any
	if a.ID != "" {
		link := ""
		if s.Link != nil {
			link = s.Link(a)
		}
		msgs = append(msgs, map[string]any{"replace_original": true, "text": slackText(a, link, s.Service.Signer.now())})
	}
	if refusal != "" {
		msgs = append(msgs, map[string]any{"response_type": "ephemeral", "replace_original": false, "text": refusal})
	}
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(b))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		telemetry.Inject(ctx, req.Header)
		resp, err := hc.Do(req)
		if err != nil {
			// Not the *url.Error: it spells out the response_url.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			s.log().WarnContext(ctx, "slack: response_url", "error", err.Error())
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}
