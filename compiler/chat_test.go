package compiler

import (
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/project"
)

const chatHead = "name: p\nsteps:\n  - {name: a, executor: scripted}\nnotifications:\n  escalate:\n"

// TestNotificationChannels: the telegram and msteams channels' config,
// checked with positioned errors, and an unknown channel refused.
func TestNotificationChannels(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"telegram", "    - {channel: telegram, config: {bot_token: '${OPS_BOT}', chat_id: -1001234567890}}\n", nil},
		{"telegram channel name", "    - {channel: telegram, config: {bot_token: '${OPS_BOT}', chat_id: '@ops_alerts'}}\n", nil},
		{"telegram without config", "    - {channel: telegram, template: '<b>{{ step_summary }}</b>'}\n", []string{
			`p.yaml:6:7: notifications.escalate: channel telegram needs config.bot_token (a ${NAME} secret), or notifications.telegram.bot_token in stepline.yaml`,
			`p.yaml:6:7: notifications.escalate: channel telegram needs config.chat_id, or notifications.telegram.chat_id in stepline.yaml`}},
		{"literal token", "    - {channel: telegram, config: {bot_token: '123:AAE', chat_id: 1}}\n", []string{
			`p.yaml:6:7: notifications.escalate: config.bot_token: write it as one ${NAME} secret reference: a token written out would be compiled into the state machine`}},
		{"bad chat", "    - {channel: telegram, config: {bot_token: '${B}', chat_id: 'ops'}}\n", []string{
			`p.yaml:6:7: notifications.escalate: config.chat_id: ops is not a chat ID (a number such as -1001234567890, or @channelname)`}},
		{"bad template", "    - {channel: telegram, template: '{% if %}', config: {bot_token: '${B}', chat_id: 1}}\n", []string{
			`p.yaml:6:7: notifications.escalate: template: unterminated "if" block`}},
		{"telegram teams", "    - {channel: telegram, config: {bot_token: '${B}', chat_id: 1, teams: {pay: {chat_id: -2, bot_token: '${PB}'}, web: {chat_id: '@web_ops'}}}}\n", nil},
		{"telegram bad teams", "    - {channel: telegram, config: {bot_token: '${B}', chat_id: 1, teams: {pay: {chat_id: x}, web: {chat_id: 2, bot_token: tok}}}}\n", []string{
			`p.yaml:6:7: notifications.escalate: config.teams.pay: want {chat_id: a chat ID, bot_token: an optional ${NAME}}`,
			`p.yaml:6:7: notifications.escalate: config.teams.web.bot_token: write it as one ${NAME} secret reference: a token written out would be compiled into the state machine`}},
		{"msteams", "    - {channel: msteams, config: {url: '${TEAMS_HOOK}'}}\n", nil},
		{"msteams without url", "    - {channel: msteams}\n", []string{
			`p.yaml:6:7: notifications.escalate: channel msteams needs config.url (the incoming webhook's URL, as a ${NAME} secret)`}},
		{"unknown channel", "    - {channel: telegrm}\n", []string{
			`p.yaml:6:17: notifications.escalate.0.channel "telegrm" is not one of log, webhook, slack, sns, telegram, msteams (did you mean "telegram"?)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, chatHead+c.src)
			var errs []string
			for _, d := range got {
				if !strings.Contains(d, ": warning: ") {
					errs = append(errs, d)
				}
			}
			if strings.Join(errs, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", errs, c.want)
			}
		})
	}
}

// TestTelegramDefaults: a telegram notification without bot or chat takes
// the project's notifications.telegram; one that names them keeps its own.
func TestTelegramDefaults(t *testing.T) {
	proj := project.Parse("stepline.yaml", []byte("notifications:\n  telegram: {bot_token: '${OPS_BOT}', chat_id: -100777, teams: {pay: {chat_id: '@pay_ops'}}}\n"))
	src := chatHead + "    - {channel: telegram}\n    - {channel: telegram, config: {chat_id: '@other'}}\n"
	f, ds := loadIn("p.yaml", []byte(src), Env{Project: proj})
	if ds.HasErrors() {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	ns := f.Pipeline.Notifications[0].Notices
	if teams, _ := ns[0].Config["teams"].(map[string]any); teams == nil || teams["pay"].(map[string]any)["chat_id"] != "@pay_ops" {
		t.Errorf("teams %v", ns[0].Config["teams"])
	}
	if ns[0].Config["bot_token"] != "${OPS_BOT}" || ns[0].Config["chat_id"] != "-100777" || ns[1].Config["chat_id"] != "@other" || ns[1].Config["bot_token"] != "${OPS_BOT}" {
		t.Errorf("notices %+v", ns)
	}
}
