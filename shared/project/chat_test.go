package project

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/approval"
)

func TestChatConfig(t *testing.T) {
	src := `notifications:
  telegram: {bot_token: "${OPS_BOT}", chat_id: -1001234567890}
human_approval:
  default:
    channel: telegram
    telegram: {bot_token: "${OPS_BOT}", chat_id: "@ops_approvals", webhook_secret: "${OPS_BOT_SECRET}"}
  teams:
    payments:
      channel: slack
      slack: {bot_token: "${PAY_SLACK_BOT}", signing_secret: "${PAY_SLACK_SIGNING}", channel_id: C0PAYMENTS1}
    search:
      channel: msteams
      msteams: {webhook_url: "${SEARCH_TEAMS_HOOK}"}
`
	p := Parse("stepline.yaml", []byte(src))
	if len(p.Diagnostics) != 0 {
		t.Fatalf("diagnostics:\n%s", p.Diagnostics)
	}
	if !reflect.DeepEqual(p.Notifications.Telegram, TelegramDefaults{BotToken: "${OPS_BOT}", ChatID: "-1001234567890"}) {
		t.Errorf("notifications %+v", p.Notifications)
	}
	want := approval.Routes{
		Default: &approval.Channel{Kind: "telegram", Telegram: &approval.TelegramChannel{BotToken: "${OPS_BOT}", ChatID: "@ops_approvals", WebhookSecret: "${OPS_BOT_SECRET}"}},
		Teams: map[string]approval.Channel{
			"payments": {Kind: "slack", Slack: &approval.SlackChannel{BotToken: "${PAY_SLACK_BOT}", SigningSecret: "${PAY_SLACK_SIGNING}", ChannelID: "C0PAYMENTS1"}},
			"search":   {Kind: "msteams", MSTeams: &approval.TeamsChannel{WebhookURL: "${SEARCH_TEAMS_HOOK}"}},
		},
	}
	if got := p.ApprovalRoutes(); !reflect.DeepEqual(got, want) {
		t.Errorf("routes %+v", got)
	}
	p = Parse("stepline.yaml", []byte("notifications:\n  telegram:\n    bot_token: '${B}'\n    chat_id: 1\n    teams:\n      pay: {chat_id: '@pay_ops', bot_token: '${PB}'}\n      web: {chat_id: -5}\n"))
	if len(p.Diagnostics) != 0 || !reflect.DeepEqual(p.Notifications.Telegram.Teams, map[string]TelegramTeam{"pay": {BotToken: "${PB}", ChatID: "@pay_ops"}, "web": {ChatID: "-5"}}) {
		t.Errorf("teams %+v %s", p.Notifications.Telegram.Teams, p.Diagnostics)
	}
	// Without human_approval.default, notifications.telegram is the default.
	p = Parse("stepline.yaml", []byte("notifications:\n  telegram: {bot_token: '${B}', chat_id: 42}\n"))
	if r := p.ApprovalRoutes(); r.Default == nil || r.Default.Telegram.ChatID != "42" || r.Default.Telegram.BotToken != "${B}" {
		t.Errorf("fallback %+v", r)
	}
}

func TestChatConfigErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"literal bot token", "notifications:\n  telegram: {bot_token: '123:abc', chat_id: 1}\n", []string{
			`stepline.yaml:2:25: notifications.telegram.bot_token: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"bad chat id", "notifications:\n  telegram: {bot_token: '${B}', chat_id: 'ops room'}\n", []string{
			`stepline.yaml:2:42: notifications.telegram.chat_id: "ops room" is not a chat ID (a number such as -1001234567890, or @channelname)`}},
		{"chat id a list", "notifications:\n  telegram: {bot_token: '${B}', chat_id: [1]}\n", []string{
			`stepline.yaml:2:42: notifications.telegram.chat_id: want a chat ID (a number such as -1001234567890, or @channelname), got a list`}},
		{"reference /run team", "notifications:\n  telegram: {team: ops}\n", []string{
			`stepline.yaml:2:14: notifications.telegram.team: the reference's /run chat command is not part of Stepline: start runs with stepline serve's POST /pipelines/{name}/runs or a webhook`}},
		{"unknown notification channel", "notifications:\n  telegrm: {}\n", []string{
			`stepline.yaml:2:3: notifications: unknown field "telegrm" (did you mean "telegram"?) (fields: telegram)`}},
		{"team without chat", "notifications:\n  telegram:\n    teams:\n      pay: {bot_token: '${PB}'}\n", []string{
			`stepline.yaml:4:7: notifications.telegram.teams.pay: chat_id: required`}},
		{"team with a literal token", "notifications:\n  telegram:\n    teams:\n      pay: {chat_id: 1, bot_token: 'x'}\n", []string{
			`stepline.yaml:4:36: notifications.telegram.teams.pay.bot_token: write it as one ${NAME} secret reference: a value written out would be compiled into the state machine`}},
		{"unknown channel", "human_approval:\n  default: {channel: telegrm}\n", []string{
			`stepline.yaml:2:22: human_approval.default.channel: unknown channel "telegrm" (did you mean "telegram"?) (channels: telegram, slack, msteams)`}},
		{"no channel", "human_approval:\n  default: {telegram: {}}\n", []string{
			`stepline.yaml:2:12: human_approval.default: channel: required (telegram, slack, msteams)`}},
		{"no block", "human_approval:\n  default: {channel: slack}\n", []string{
			`stepline.yaml:2:22: human_approval.default: channel slack needs its slack block (bot_token, signing_secret, channel_id)`}},
		{"other block", "human_approval:\n  default: {channel: msteams, msteams: {webhook_url: '${H}'}, slack: {}}\n", []string{
			`stepline.yaml:2:63: human_approval.default.slack: does not apply to channel msteams`}},
		{"missing chat", "human_approval:\n  teams:\n    ops: {channel: telegram, telegram: {bot_token: '${B}'}}\n", []string{
			`stepline.yaml:3:30: human_approval.teams.ops.telegram: chat_id: required`}},
		{"slack socket mode", "human_approval:\n  default: {channel: slack, slack: {app_token: '${A}'}}\n", []string{
			`stepline.yaml:2:37: human_approval.default.slack.app_token: Stepline takes Slack's button presses at a request URL, verified with signing_secret; Socket Mode's app token is not used`}},
		{"slack channel name", "human_approval:\n  default: {channel: slack, slack: {bot_token: '${A}', signing_secret: '${S}', channel_id: '#ops'}}\n", []string{
			`stepline.yaml:2:92: human_approval.default.slack.channel_id: "#ops" is not a Slack channel ID (such as C0123456789; a channel's ID, not its #name)`}},
		{"teams url written out", "human_approval:\n  default: {channel: msteams, msteams: {webhook_url: 'https://x.webhook.office.com/a'}}\n", []string{
			`stepline.yaml:2:54: warning: human_approval.default.msteams.webhook_url: the webhook URL is its credential: write it as a ${NAME} secret reference, or it is deployed in the functions' configuration`}},
		{"ui_base_url", "human_approval:\n  ui_base_url: http://x\n", []string{
			`stepline.yaml:2:3: human_approval.ui_base_url: approval links start with stepline serve's --url locally and with the HTTP API's URL on AWS`}},
		{"bad team name", "human_approval:\n  teams:\n    'a b': {channel: msteams, msteams: {webhook_url: '${H}'}}\n", []string{
			`stepline.yaml:3:5: human_approval.teams.a b: "a b" is not a team name (letters, digits, _ . -, at most 63)`}},
		{"one bot, two secrets", "human_approval:\n  default: {channel: telegram, telegram: {bot_token: '${B}', chat_id: 1, webhook_secret: '${S1}'}}\n  teams:\n    x: {channel: telegram, telegram: {bot_token: '${B}', chat_id: 2}}\n", []string{
			`stepline.yaml:2:3: human_approval: x uses the bot of B with another webhook_secret: channels sharing a bot must share its webhook_secret`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse("stepline.yaml", []byte(tt.src))
			if got := lines(p.Diagnostics); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestChatTeamsBound: at most MaxTeams teams, in human_approval and in
// notifications.telegram.
func TestChatTeamsBound(t *testing.T) {
	teams := func(n int, entry string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "    t%d: %s\n", i, entry)
		}
		return b.String()
	}
	for _, n := range []int{MaxTeams, MaxTeams + 1} {
		for _, src := range []string{
			"human_approval:\n  teams:\n" + teams(n, "{channel: msteams, msteams: {webhook_url: '${H}'}}"),
			"notifications:\n  telegram:\n   teams:\n" + strings.ReplaceAll(teams(n, "{chat_id: 1}"), "    t", "     t"),
		} {
			p := Parse("stepline.yaml", []byte(src))
			if got := p.Diagnostics.HasErrors(); got != (n > MaxTeams) {
				t.Errorf("%d teams: errors %v:\n%s", n, got, p.Diagnostics)
			}
		}
	}
}
