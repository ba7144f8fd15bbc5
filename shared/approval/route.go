package approval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Approval channels.
const (
	ChannelTelegram = "telegram"
	ChannelSlack    = "slack"
	ChannelMSTeams  = "msteams"
)

// Channels returns the approval channels.
func Channels() []string {
	return []string{ChannelTelegram, ChannelSlack, ChannelMSTeams}
}

// Channel is where a team's approval requests go: stepline.yaml's
// human_approval.default or human_approval.teams.<team>. Secrets are
// ${NAME} references, resolved where the request is sent or the answer
// taken.
type Channel struct {
	Kind     string           `json:"channel"`
	Telegram *TelegramChannel `json:"telegram,omitempty"`
	Slack    *SlackChannel    `json:"slack,omitempty"`
	MSTeams  *TeamsChannel    `json:"msteams,omitempty"`
}

// TelegramChannel is a chat a bot posts approval requests to, with
// Approve and Reject buttons.
type TelegramChannel struct {
	BotToken string `json:"bot_token"` // ${NAME}
	ChatID   string `json:"chat_id"`
	// WebhookSecret is the secret_token the bot's webhook was set with
	// (${NAME}); without it the bot's updates are long-polled (locally
	// only: on AWS the webhook route needs it).
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

// SlackChannel is a Slack channel an app's bot posts approval requests to,
// with Approve and Reject buttons whose presses Slack posts to the
// request URL, signed with the app's signing secret.
type SlackChannel struct {
	BotToken      string `json:"bot_token"`      // ${NAME}
	SigningSecret string `json:"signing_secret"` // ${NAME}
	ChannelID     string `json:"channel_id"`
}

// TeamsChannel is a Microsoft Teams incoming webhook (or Power Automate
// workflow) that gets a message linking to the approval page.
type TeamsChannel struct {
	WebhookURL string `json:"webhook_url"` // ${NAME}: the URL is the credential
}

// Routes route approval requests by the run's team, as stepline.yaml's
// human_approval: the team's channel, else the default. The zero value
// routes nothing (approvers find the link in the log).
type Routes struct {
	Default *Channel           `json:"default,omitempty"`
	Teams   map[string]Channel `json:"teams,omitempty"`
}

// For returns the channel of a run of team: teams.<team>, else default.
func (r Routes) For(team string) (Channel, bool) {
	if c, ok := r.Teams[team]; ok && team != "" {
		return c, true
	}
	if r.Default != nil {
		return *r.Default, true
	}
	return Channel{}, false
}

// Empty reports whether r routes nothing.
func (r Routes) Empty() bool { return r.Default == nil && len(r.Teams) == 0 }

// ParseRoutes reads Routes from JSON (how functions get them, in
// HUMAN_APPROVAL); "" is no routes.
func ParseRoutes(s string) (Routes, error) {
	var r Routes
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Routes{}, fmt.Errorf("approval routes: %w", err)
	}
	return r, nil
}

// each calls f with every channel of r: "default", then the teams in name
// order.
func (r Routes) each(f func(name string, c Channel)) {
	if r.Default != nil {
		f("default", *r.Default)
	}
	names := make([]string, 0, len(r.Teams))
	for n := range r.Teams {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f(n, r.Teams[n])
	}
}

// BotConfig is one Telegram bot the routes use: the chats its approval
// requests go to and its webhook secret.
type BotConfig struct {
	Name          string // the bot token's secret name: the webhook path is /telegram/<Name>
	BotToken      string // ${NAME}
	WebhookSecret string // ${NAME}, or "": long polling
	Chats         []string
}

// TelegramBots lists the Telegram bots of r, one per bot token, in the
// order their channels come (default first, then teams by name).
// Channels that share a bot must agree on its webhook_secret: an error
// says where they do not.
func (r Routes) TelegramBots() ([]BotConfig, error) {
	var out []BotConfig
	var err error
	r.each(func(name string, c Channel) {
		t := c.Telegram
		if c.Kind != ChannelTelegram || t == nil || err != nil {
			return
		}
		for i := range out {
			if out[i].BotToken != t.BotToken {
				continue
			}
			if out[i].WebhookSecret != t.WebhookSecret {
				err = fmt.Errorf("human_approval: %s uses the bot of %s with another webhook_secret", name, out[i].Name)
				return
			}
			if !slices.Contains(out[i].Chats, t.ChatID) {
				out[i].Chats = append(out[i].Chats, t.ChatID)
			}
			return
		}
		out = append(out, BotConfig{Name: secretName(t.BotToken), BotToken: t.BotToken, WebhookSecret: t.WebhookSecret, Chats: []string{t.ChatID}})
	})
	return out, err
}

// AppConfig is one Slack app the routes use: the channels its approval
// requests go to, and its signing secret.
type AppConfig struct {
	Name          string // the signing secret's secret name: the request URL is /slack/<Name>
	SigningSecret string // ${NAME}
	Channels      []string
}

// SlackApps lists the Slack apps of r, one per signing secret, in the
// order their channels come (default first, then teams by name).
func (r Routes) SlackApps() []AppConfig {
	var out []AppConfig
	r.each(func(_ string, c Channel) {
		s := c.Slack
		if c.Kind != ChannelSlack || s == nil {
			return
		}
		for i := range out {
			if out[i].SigningSecret == s.SigningSecret {
				if !slices.Contains(out[i].Channels, s.ChannelID) {
					out[i].Channels = append(out[i].Channels, s.ChannelID)
				}
				return
			}
		}
		out = append(out, AppConfig{Name: secretName(s.SigningSecret), SigningSecret: s.SigningSecret, Channels: []string{s.ChannelID}})
	})
	return out
}

// secretName returns NAME of "${NAME}".
func secretName(ref string) string {
	return strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
}
