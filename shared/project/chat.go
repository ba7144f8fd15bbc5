package project

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/internal/yamlread"
)

// MaxTeams bounds human_approval.teams.
const MaxTeams = 200

// Notifications are stepline.yaml's notifications: defaults of the
// pipelines' notification channels.
type Notifications struct {
	// Telegram is the bot and chat of `channel: telegram` notifications
	// that name neither (the compiler writes them into the pipeline).
	Telegram TelegramDefaults
}

// TelegramDefaults is notifications.telegram.
type TelegramDefaults struct {
	BotToken string // a ${NAME} reference, or ""
	ChatID   string // or ""
	// Teams send the runs of a team to its own chat (and bot, when it
	// names one): notifications.telegram.teams.<team>.
	Teams map[string]TelegramTeam
}

// TelegramTeam is notifications.telegram.teams.<team>.
type TelegramTeam struct {
	BotToken string // a ${NAME} reference, or "": the default bot
	ChatID   string
}

var (
	chatIDRE    = lazyregexp.New(`^(-?[1-9][0-9]{0,18}|@[A-Za-z][A-Za-z0-9_]{4,31})$`)
	slackChanRE = lazyregexp.New(`^[CGD][A-Z0-9]{2,30}$`)
	teamNameRE  = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
)

// ChatID reads a Telegram chat_id: a whole number (a group's is
// negative) or an @channel name. It reports whether s is one.
func ChatID(s string) bool { return chatIDRE.MatchString(s) }

// chatID reads a chat_id written as a number or a string.
func (d *decoder) chatID(n *yaml.Node, field string) (string, bool) {
	n = yamlread.Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!str") {
		d.fail(n, "%s: want a chat ID (a number such as -1001234567890, or @channelname), got %s", field, yamlread.Kind(n))
		return "", false
	}
	if !ChatID(n.Value) {
		d.fail(n, "%s: %q is not a chat ID (a number such as -1001234567890, or @channelname)", field, n.Value)
		return "", false
	}
	return n.Value, true
}

// notifications reads notifications: telegram {bot_token, chat_id}.
func (d *decoder) notifications(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "notifications")
	if !ok {
		return
	}
	for _, e := range es {
		if e.Key != "telegram" {
			d.unknown(e, "notifications", []string{"telegram"})
			continue
		}
		fs, ok := d.r.Mapping(e.Value, "notifications.telegram")
		if !ok {
			continue
		}
		t := &d.p.Notifications.Telegram
		for _, f := range fs {
			key := "notifications.telegram." + f.Key
			switch f.Key {
			case "bot_token":
				t.BotToken, _ = d.secretRef(f.Value, key, false)
			case "chat_id":
				t.ChatID, _ = d.chatID(f.Value, key)
			case "team":
				d.fail(f.KeyAt, "%s: the reference's /run chat command is not part of Stepline: start runs with stepline serve's POST /pipelines/{name}/runs or a webhook", key)
			case "teams":
				d.telegramTeams(f.Value, t)
			default:
				d.unknown(f, "notifications.telegram", []string{"bot_token", "chat_id", "teams"})
			}
		}
	}
}

// telegramTeams reads notifications.telegram.teams: <team>: {chat_id,
// bot_token}.
func (d *decoder) telegramTeams(n *yaml.Node, t *TelegramDefaults) {
	ts, ok := d.r.Mapping(n, "notifications.telegram.teams")
	if !ok {
		return
	}
	if len(ts) > MaxTeams {
		d.fail(n, "notifications.telegram.teams: %d teams, more than %d", len(ts), MaxTeams)
		return
	}
	for _, e := range ts {
		where := "notifications.telegram.teams." + e.Key
		if !teamNameRE.MatchString(e.Key) {
			d.fail(e.KeyAt, "%s: %q is not a team name (letters, digits, _ . -, at most 63)", where, e.Key)
			continue
		}
		fs, ok := d.r.Mapping(e.Value, where)
		if !ok {
			continue
		}
		var team TelegramTeam
		good := true
		for _, f := range fs {
			switch f.Key {
			case "bot_token":
				team.BotToken, ok = d.secretRef(f.Value, where+".bot_token", false)
			case "chat_id":
				team.ChatID, ok = d.chatID(f.Value, where+".chat_id")
			default:
				d.unknown(f, where, []string{"chat_id", "bot_token"})
				ok = false
			}
			good = good && ok
		}
		if good && team.ChatID == "" {
			d.fail(e.KeyAt, "%s: chat_id: required", where)
			good = false
		}
		if good {
			if t.Teams == nil {
				t.Teams = map[string]TelegramTeam{}
			}
			t.Teams[e.Key] = team
		}
	}
}

// humanApproval reads human_approval: default and teams.<team>, each a
// channel.
func (d *decoder) humanApproval(n *yaml.Node) {
	es, ok := d.r.Mapping(n, "human_approval")
	if !ok {
		return
	}
	r := &d.p.HumanApproval
	for _, e := range es {
		switch e.Key {
		case "default":
			if c, ok := d.approvalChannel(e.Value, "human_approval.default"); ok {
				r.Default = &c
			}
		case "teams":
			ts, ok := d.r.Mapping(e.Value, "human_approval.teams")
			if !ok {
				continue
			}
			if len(ts) > MaxTeams {
				d.fail(e.Value, "human_approval.teams: %d teams, more than %d", len(ts), MaxTeams)
				continue
			}
			for _, t := range ts {
				where := "human_approval.teams." + t.Key
				if !teamNameRE.MatchString(t.Key) {
					d.fail(t.KeyAt, "%s: %q is not a team name (letters, digits, _ . -, at most 63)", where, t.Key)
					continue
				}
				if c, ok := d.approvalChannel(t.Value, where); ok {
					if r.Teams == nil {
						r.Teams = map[string]approval.Channel{}
					}
					r.Teams[t.Key] = c
				}
			}
		case "ui_base_url":
			d.fail(e.KeyAt, "human_approval.ui_base_url: approval links start with stepline serve's --url locally and with the HTTP API's URL on AWS")
		default:
			d.unknown(e, "human_approval", []string{"default", "teams"})
		}
	}
	if _, err := r.TelegramBots(); err != nil {
		d.fail(n, "%s: channels sharing a bot must share its webhook_secret", err.Error())
	}
}

// approvalChannel reads one channel: {channel, telegram|slack|msteams}.
func (d *decoder) approvalChannel(n *yaml.Node, where string) (approval.Channel, bool) {
	fs, ok := d.r.Mapping(n, where)
	if !ok {
		return approval.Channel{}, false
	}
	var c approval.Channel
	var kindAt *yaml.Node
	blocks := map[string]yamlread.Entry{}
	for _, f := range fs {
		switch f.Key {
		case "channel":
			kindAt = f.Value
			if s, ok := d.r.NonEmpty(f.Value, where+".channel"); ok {
				if !slices.Contains(approval.Channels(), s) {
					d.fail(f.Value, "%s.channel: unknown channel %q%s (channels: %s)", where, s, agent.DidYouMean(s, approval.Channels()), strings.Join(approval.Channels(), ", "))
					return approval.Channel{}, false
				}
				c.Kind = s
			}
		case approval.ChannelTelegram, approval.ChannelSlack, approval.ChannelMSTeams:
			blocks[f.Key] = f
		default:
			d.unknown(f, where, append([]string{"channel"}, approval.Channels()...))
		}
	}
	if c.Kind == "" {
		if kindAt == nil {
			d.fail(n, "%s: channel: required (%s)", where, strings.Join(approval.Channels(), ", "))
		}
		return approval.Channel{}, false
	}
	for k, b := range blocks {
		if k != c.Kind {
			d.fail(b.KeyAt, "%s.%s: does not apply to channel %s", where, k, c.Kind)
		}
	}
	b, ok := blocks[c.Kind]
	if !ok {
		d.fail(kindAt, "%s: channel %s needs its %s block (%s)", where, c.Kind, c.Kind, channelFields[c.Kind])
		return approval.Channel{}, false
	}
	good := true
	at := where + "." + c.Kind
	fs, ok = d.r.Mapping(b.Value, at)
	if !ok {
		return approval.Channel{}, false
	}
	got := map[string]string{}
	for _, f := range fs {
		key := at + "." + f.Key
		var v string
		ok := false
		switch c.Kind + "." + f.Key {
		case "telegram.bot_token", "telegram.webhook_secret", "slack.bot_token", "slack.signing_secret":
			v, ok = d.secretRef(f.Value, key, false)
		case "telegram.chat_id":
			v, ok = d.chatID(f.Value, key)
		case "slack.channel_id":
			if v, ok = d.r.NonEmpty(f.Value, key); ok && !slackChanRE.MatchString(v) {
				d.fail(f.Value, "%s: %q is not a Slack channel ID (such as C0123456789; a channel's ID, not its #name)", key, v)
				ok = false
			}
		case "slack.app_token":
			d.fail(f.KeyAt, "%s: Stepline takes Slack's button presses at a request URL, verified with signing_secret; Socket Mode's app token is not used", key)
		case "msteams.webhook_url":
			if v, ok = d.url(f.Value, key, "https"); ok && !strings.Contains(v, "${") {
				d.warn(f.Value, "%s: the webhook URL is its credential: write it as a ${NAME} secret reference, or it is deployed in the functions' configuration", key)
			}
		default:
			d.unknown(f, at, strings.Split(channelFields[c.Kind], ", "))
			continue
		}
		if !ok {
			good = false
			continue
		}
		got[f.Key] = v
	}
	for _, req := range requiredFields[c.Kind] {
		if _, set := got[req]; !set && good {
			d.fail(b.KeyAt, "%s: %s: required", at, req)
			good = false
		}
	}
	if !good {
		return approval.Channel{}, false
	}
	switch c.Kind {
	case approval.ChannelTelegram:
		c.Telegram = &approval.TelegramChannel{BotToken: got["bot_token"], ChatID: got["chat_id"], WebhookSecret: got["webhook_secret"]}
	case approval.ChannelSlack:
		c.Slack = &approval.SlackChannel{BotToken: got["bot_token"], SigningSecret: got["signing_secret"], ChannelID: got["channel_id"]}
	case approval.ChannelMSTeams:
		c.MSTeams = &approval.TeamsChannel{WebhookURL: got["webhook_url"]}
	}
	return c, true
}

var channelFields = map[string]string{
	approval.ChannelTelegram: "bot_token, chat_id, webhook_secret",
	approval.ChannelSlack:    "bot_token, signing_secret, channel_id",
	approval.ChannelMSTeams:  "webhook_url",
}

var requiredFields = map[string][]string{
	approval.ChannelTelegram: {"bot_token", "chat_id"},
	approval.ChannelSlack:    {"bot_token", "signing_secret", "channel_id"},
	approval.ChannelMSTeams:  {"webhook_url"},
}

// ApprovalRoutes returns where approval requests go: human_approval, and,
// when it names no default, notifications.telegram as the default
// Telegram channel (as the reference falls back to it).
func (p *Project) ApprovalRoutes() approval.Routes {
	r := p.HumanApproval
	t := p.Notifications.Telegram
	if r.Default == nil && t.BotToken != "" && t.ChatID != "" {
		r.Default = &approval.Channel{Kind: approval.ChannelTelegram, Telegram: &approval.TelegramChannel{BotToken: t.BotToken, ChatID: t.ChatID}}
	}
	return r
}
