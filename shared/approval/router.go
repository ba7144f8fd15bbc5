package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telemetry"
)

// RunReader reads a run (for its team).
type RunReader interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
}

// Router sends approval requests to the chat channel of the run's team
// (Routes): a Telegram message or a Slack message with Approve and Reject
// buttons, or a Microsoft Teams message linking to the approval page.
// Secrets are resolved through Secrets when a request is sent and
// scrubbed from every error.
type Router struct {
	Routes  Routes
	Service *Service // its Signer signs the buttons and links
	BaseURL string   // the public URL approval links start with
	Secrets secret.Resolver
	Runs    RunReader
	HTTP    *http.Client
	// TelegramAPI and SlackAPI are the APIs' base URLs; "": the public
	// ones.
	TelegramAPI string
	SlackAPI    string
	// WebhooksOnly says no process long-polls Telegram (on AWS): a
	// Telegram channel without a webhook_secret then gets its requests
	// without buttons, which nothing would answer; its link decides.
	WebhooksOnly bool
	Logger       *slog.Logger
}

func (r *Router) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// ErrNoRoute: no channel is configured for the run's team.
var ErrNoRoute = errors.New("no approval channel for the run's team")

// Request sends a's request on the channel of its run's team and returns
// the channel's kind. In stage testing nothing is sent (the approval is
// decided on its page or with stepline approve) and the kind is "". a
// must carry no task token.
func (r *Router) Request(ctx context.Context, a store.Approval, stage string) (string, error) {
	team := ""
	if r.Runs != nil {
		run, err := r.Runs.GetRun(ctx, a.RunID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("approval request: run %s: %w", a.RunID, err)
		}
		team = run.Team
	}
	c, ok := r.Routes.For(team)
	if !ok {
		return "", ErrNoRoute
	}
	if stage != string(pipeline.StageProduction) {
		r.log().InfoContext(ctx, "approval request muted: stage testing", "approval", a.ID, "run", a.RunID, "channel", c.Kind, "team", team)
		return "", nil
	}
	red := secret.NewRedactor(r.Secrets)
	link := r.Service.Link(r.BaseURL, a)
	var err error
	switch c.Kind {
	case ChannelTelegram:
		err = r.telegram(ctx, red, c.Telegram, a, link)
	case ChannelSlack:
		err = r.slack(ctx, red, c.Slack, a, link)
	case ChannelMSTeams:
		err = r.msteams(ctx, red, c.MSTeams, a, link)
	default:
		err = fmt.Errorf("unknown approval channel %q", c.Kind)
	}
	if err != nil {
		return c.Kind, red.Error(fmt.Errorf("approval request via %s: %w", c.Kind, err))
	}
	return c.Kind, nil
}

// NotifyApproval sends a's request (it satisfies steprun.Notifier): the
// approval link is logged, and the request goes to the run's team's
// channel when one is configured.
func (r *Router) NotifyApproval(ctx context.Context, a store.Approval, stage string) error {
	link := r.Service.Link(r.BaseURL, a)
	r.log().InfoContext(ctx, "approval requested", "approval", a.ID, "run", a.RunID, "step", a.Step, "pipeline", a.Pipeline,
		"stage", stage, "link", link)
	kind, err := r.Request(ctx, a, stage)
	switch {
	case errors.Is(err, ErrNoRoute):
		return nil
	case err != nil:
		return err
	case kind != "":
		r.log().InfoContext(ctx, "approval request sent", "approval", a.ID, "channel", kind)
	}
	return nil
}

func (r *Router) telegram(ctx context.Context, red *secret.Redactor, t *TelegramChannel, a store.Approval, link string) error {
	if t == nil {
		return errors.New("telegram: no bot_token and chat_id")
	}
	tok, err := secret.Expand(ctx, red, t.BotToken)
	if err != nil {
		return fmt.Errorf("bot_token: %w", err)
	}
	bot := &TelegramBot{Service: r.Service, Client: &telegram.Client{Token: tok, API: r.TelegramAPI, HTTP: r.HTTP},
		NoButtons: r.WebhooksOnly && t.WebhookSecret == ""}
	return bot.Request(ctx, a, t.ChatID, link)
}

func (r *Router) slack(ctx context.Context, red *secret.Redactor, s *SlackChannel, a store.Approval, link string) error {
	if s == nil {
		return errors.New("slack: no bot_token and channel_id")
	}
	tok, err := secret.Expand(ctx, red, s.BotToken)
	if err != nil {
		return fmt.Errorf("bot_token: %w", err)
	}
	app := &SlackApp{Service: r.Service, Client: &SlackClient{Token: tok, API: r.SlackAPI, HTTP: r.HTTP}}
	return app.Request(ctx, a, s.ChannelID, link)
}

// msteams posts {"text": request and link} to the Teams incoming webhook
// (its URL a ${NAME} secret: the URL is the credential).
func (r *Router) msteams(ctx context.Context, red *secret.Redactor, m *TeamsChannel, a store.Approval, link string) error {
	if m == nil || m.WebhookURL == "" {
		return errors.New("msteams: no webhook_url")
	}
	u, err := secret.Expand(ctx, red, m.WebhookURL)
	if err != nil {
		return fmt.Errorf("webhook_url: %w", err)
	}
	if pu, err := url.Parse(u); err != nil || pu.Scheme != "https" || pu.Host == "" {
		return errors.New("webhook_url is not an absolute https URL")
	}
	text := fmt.Sprintf("%s run %s waits for approval at step %s:\n\n%s\n\nApprove or reject: %s (open until %s)",
		a.Pipeline, a.RunID, a.Step, cutText(a.Message, 20000), link, when(a.ExpiresAt))
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return errors.New("webhook_url: bad request URL")
	}
	req.Header.Set("Content-Type", "application/json")
	telemetry.Inject(ctx, req.Header)
	hc := r.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the URL, the credential
		}
		return fmt.Errorf("msteams: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("msteams: the webhook answered %s", resp.Status)
	}
	return nil
}
