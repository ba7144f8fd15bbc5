package approval

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telegram"
)

// ChatHandler serves the chat routes of Routes where no process long-polls
// (behind the HTTP API on AWS): POST /telegram/{bot}, the webhook of each
// Telegram bot whose channels name a webhook_secret, and POST
// /slack/{app}, the request URL of each Slack app ({bot} and {app}: the
// names of the bot token's and the signing secret's secrets). The bots'
// secrets are resolved per request through Secrets (the AWS resolver
// caches them); one that does not resolve is a 503 and a log line naming
// it. Anything else is a 404.
type ChatHandler struct {
	Routes  Routes
	Service *Service
	Secrets secret.Resolver
	HTTP    *http.Client
	// TelegramAPI is the Bot API's base URL; "": telegram.DefaultAPI.
	TelegramAPI string
	// SlackResponseURL is what a response_url must start with; "":
	// DefaultSlackResponseURL.
	SlackResponseURL string
	BaseURL          string // starts the page links of edited messages; "": none
	Logger           *slog.Logger
}

func (h *ChatHandler) log() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

var _ http.Handler = (*ChatHandler)(nil)

// ServeHTTP implements http.Handler.
func (h *ChatHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := chatRoute(r.URL.Path)
	var handler http.Handler
	var err error
	if ok {
		switch kind {
		case "telegram":
			handler, err = h.telegram(r.Context(), name)
		case "slack":
			handler, err = h.slack(r.Context(), name)
		}
	}
	switch {
	case err != nil:
		h.log().ErrorContext(r.Context(), "chat approvals: secret", "route", kind+"/"+name, "error", err.Error())
		http.Error(w, "chat approvals are not configured correctly", http.StatusServiceUnavailable)
	case handler == nil:
		http.Error(w, "not found", http.StatusNotFound)
	default:
		handler.ServeHTTP(w, r)
	}
}

// chatRoute splits /telegram/{name} or /slack/{name}.
func chatRoute(path string) (kind, name string, ok bool) {
	for _, k := range []string{"telegram", "slack"} {
		if n, found := strings.CutPrefix(path, "/"+k+"/"); found && n != "" && !strings.Contains(n, "/") {
			return k, n, true
		}
	}
	return "", "", false
}

func (h *ChatHandler) link() func(a store.Approval) string {
	if h.BaseURL == "" {
		return nil
	}
	return func(a store.Approval) string { return h.Service.Link(h.BaseURL, a) }
}

func (h *ChatHandler) resolve(ctx context.Context, ref string) (string, error) {
	v, err := secret.Expand(ctx, h.Secrets, ref)
	if err == nil && v == "" {
		err = fmt.Errorf("%s is empty", ref)
	}
	return v, err
}

// telegram returns the webhook of the bot named name; nil when there is
// none (no such bot, or a bot without a webhook secret).
func (h *ChatHandler) telegram(ctx context.Context, name string) (http.Handler, error) {
	bots, err := h.Routes.TelegramBots()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(bots, func(b BotConfig) bool { return b.Name == name })
	if i < 0 || bots[i].WebhookSecret == "" {
		return nil, nil
	}
	b := bots[i]
	tok, err := h.resolve(ctx, b.BotToken)
	if err != nil {
		return nil, err
	}
	hook, err := h.resolve(ctx, b.WebhookSecret)
	if err != nil {
		return nil, err
	}
	return &TelegramBot{Service: h.Service, Client: &telegram.Client{Token: tok, API: h.TelegramAPI, HTTP: h.HTTP},
		Chats: b.Chats, Secret: hook, Link: h.link(), Logger: h.log()}, nil
}

// slack returns the request URL handler of the app named name; nil when
// there is none.
func (h *ChatHandler) slack(ctx context.Context, name string) (http.Handler, error) {
	apps := h.Routes.SlackApps()
	i := slices.IndexFunc(apps, func(a AppConfig) bool { return a.Name == name })
	if i < 0 {
		return nil, nil
	}
	sig, err := h.resolve(ctx, apps[i].SigningSecret)
	if err != nil {
		return nil, err
	}
	return &SlackApp{Service: h.Service, SigningSecret: sig, Channels: apps[i].Channels, HTTP: h.HTTP,
		ResponseURL: h.SlackResponseURL, Link: h.link(), Logger: h.log()}, nil
}
