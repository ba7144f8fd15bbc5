package local

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telegram"
)

// startChat builds the chat receivers of cfg: a webhook route or a long
// poll (on ctx) per Telegram bot, a request URL route per Slack app. A
// secret that does not resolve is an error: a bot that cannot be heard
// would leave its buttons dead.
func (s *Server) startChat(ctx context.Context, cfg ChatConfig, signer *approval.Signer) error {
	s.chat = map[string]http.Handler{}
	if cfg.Routes.Empty() {
		return nil
	}
	if s.approvals == nil {
		return errors.New("chat approvals: no signing key")
	}
	bots, err := cfg.Routes.TelegramBots()
	if err != nil {
		return err
	}
	resolve := func(ref, what string) (string, error) {
		v, err := secret.Expand(ctx, cfg.Secrets, ref)
		if err == nil && v == "" {
			err = fmt.Errorf("%s is empty", ref)
		}
		if err != nil {
			return "", fmt.Errorf("chat approvals: %s: %w", what, err)
		}
		return v, nil
	}
	client := cfg.HTTP
	wait := cfg.PollWait
	if wait <= 0 {
		wait = approval.PollWait
	}
	if client == nil {
		client = &http.Client{Timeout: wait + 30*time.Second}
	}
	link := func(a store.Approval) string { return s.approvals.Link(cfg.BaseURL, a) }
	if cfg.BaseURL == "" {
		link = nil
	}
	for _, b := range bots {
		tok, err := resolve(b.BotToken, "telegram bot "+b.Name)
		if err != nil {
			return err
		}
		bot := &approval.TelegramBot{Service: s.approvals, Client: &telegram.Client{Token: tok, API: cfg.TelegramAPI, HTTP: client},
			Chats: b.Chats, Link: link, Logger: s.log}
		if b.WebhookSecret != "" {
			if bot.Secret, err = resolve(b.WebhookSecret, "telegram bot "+b.Name+" webhook_secret"); err != nil {
				return err
			}
			s.chat["/telegram/"+b.Name] = bot
			s.log.Info("telegram approvals by webhook", "bot", b.Name, "path", "/telegram/"+b.Name)
			continue
		}
		s.log.Info("telegram approvals by long polling", "bot", b.Name)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = bot.Poll(ctx, wait)
		}()
	}
	for _, app := range cfg.Routes.SlackApps() {
		sig, err := resolve(app.SigningSecret, "slack app "+app.Name+" signing_secret")
		if err != nil {
			return err
		}
		s.chat["/slack/"+app.Name] = &approval.SlackApp{Service: s.approvals, SigningSecret: sig, Channels: app.Channels, HTTP: client,
			ResponseURL: cfg.SlackResponseURL, Link: link, Logger: s.log}
		s.log.Info("slack approvals at the request URL", "app", app.Name, "path", "/slack/"+app.Name)
	}
	return nil
}
