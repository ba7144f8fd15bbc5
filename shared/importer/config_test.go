package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/yamldoc"
)

func parseConfigText(t *testing.T, src string) *config {
	t.Helper()
	doc, err := yamldoc.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return parseConfig("config.yaml", doc.Content[0])
}

// TestConfigFiles pins stepline.yaml, tokens.yaml and prices.yaml for the
// testdata's config.yaml, and checks that Stepline's own readers accept
// them as written.
func TestConfigFiles(t *testing.T) {
	src, err := os.ReadFile("testdata/vectorstep/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := parseConfigText(t, string(src))
	wantProject := `# Stepline project file, imported from the reference's config.yaml by
# "stepline import vectorstep". Secrets stay ${NAME} references.
pipelines: pipelines
steps: steps
executors:
  gateway:
    url: "wss://agents.example.com/rpc"
    token: "${VECTORSTEP_GATEWAY_TOKEN}"
  openclaw:
    url: "wss://openclaw.example.com"
    identity: "~/.openclaw/identity"
notifications:
  telegram:
    bot_token: "${TELEGRAM_BOT_TOKEN}"
    chat_id: "-1001234567890"
human_approval:
  default:
    channel: telegram
    telegram:
      bot_token: "${APPROVAL_BOT_TOKEN}"
      chat_id: "-1005550001"
  teams:
    "payments":
      channel: msteams
      msteams:
        webhook_url: "${TEAMS_APPROVAL_WEBHOOK}"
    "sre":
      channel: slack
      slack:
        bot_token: "${SLACK_BOT_TOKEN}"
        signing_secret: "${SLACK_SIGNING_SECRET}"
        channel_id: "C0123456789"
    "ops":
      channel: telegram
      telegram:
        bot_token: "${APPROVAL_BOT_TOKEN}"
        chat_id: "-100999"
`
	if got := string(c.projectFile(true)); got != wantProject {
		t.Errorf("stepline.yaml:\n%s\nwant:\n%s", got, wantProject)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, project.FileName)
	p := project.Parse(path, c.projectFile(true))
	if len(p.Diagnostics) != 0 {
		t.Errorf("stepline.yaml: %v", p.Diagnostics)
	}
	if p.Executors.Gateway.URL != "wss://agents.example.com/rpc" || p.Executors.Gateway.Token != "${VECTORSTEP_GATEWAY_TOKEN}" || p.Executors.OpenClaw.Identity != "~/.openclaw/identity" {
		t.Errorf("stepline.yaml reads back as %+v", p.Executors)
	}
	routes := p.ApprovalRoutes()
	if d := routes.Default; d == nil || d.Kind != "telegram" || d.Telegram.BotToken != "${APPROVAL_BOT_TOKEN}" || d.Telegram.ChatID != "-1005550001" || d.Telegram.WebhookSecret != "" {
		t.Errorf("human_approval.default reads back as %+v", d)
	}
	if r := routes.Teams["payments"]; r.Kind != "msteams" || r.MSTeams.WebhookURL != "${TEAMS_APPROVAL_WEBHOOK}" {
		t.Errorf("human_approval.teams.payments reads back as %+v", r)
	}
	if r := routes.Teams["sre"]; r.Kind != "slack" || r.Slack.SigningSecret != "${SLACK_SIGNING_SECRET}" || r.Slack.ChannelID != "C0123456789" {
		t.Errorf("human_approval.teams.sre reads back as %+v", r)
	}
	if r := routes.Teams["ops"]; r.Kind != "telegram" || r.Telegram.BotToken != "${APPROVAL_BOT_TOKEN}" || r.Telegram.ChatID != "-100999" {
		t.Errorf("human_approval.teams.ops reads back as %+v", r)
	}

	tokens, err := intake.ParseTokens(c.tokensFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := tokens.CheckTeams(); err != nil {
		t.Error(err)
	}
	if got := string(c.tokensFile()); !strings.Contains(got, `- {name: "sre", token: "${SRE_TEAM_TOKEN}"}`) || !strings.Contains(got, `- {name: "payments", token: "${STEPLINE_TOKEN_PAYMENTS}"}`) {
		t.Errorf("tokens.yaml:\n%s", got)
	}

	table, err := pricing.Load("prices.yaml", bytes.NewReader(c.pricesFile()))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := table.Match("anthropic", "claude-sonnet-4-5"); !ok || e.InputPerMTok != 3 || e.OutputPerMTok != 15 {
		t.Errorf("anthropic/claude-sonnet-4-5 priced %+v %v", e, ok)
	}
	if e, ok := table.Match("openrouter", "any/model"); !ok || e.InputPerMTok != 1 {
		t.Errorf("openrouter priced %+v %v", e, ok)
	}
}

// TestConfigSecrets: a reference is kept, a written-out value is not
// copied, an absent one is left out.
func TestConfigSecrets(t *testing.T) {
	tests := []struct {
		name, src, want string
		person          bool
	}{
		{"reference", "executors: {gateway: {url: wss://g.example.com/rpc, token: \"${GW}\"}}", `token: "${GW}"`, false},
		{"written out", "executors: {gateway: {url: wss://g.example.com/rpc, token: s3cr3t}}", `token: "${AGENT_GATEWAY_TOKEN}"`, true},
		{"reference with text around", "executors: {gateway: {url: wss://g.example.com/rpc, token: \"x${GW}\"}}", `token: "${AGENT_GATEWAY_TOKEN}"`, true},
		{"absent", "executors: {gateway: {url: wss://g.example.com/rpc}}", "url: \"wss://g.example.com/rpc\"\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseConfigText(t, tt.src)
			got := string(c.projectFile(true))
			if !strings.Contains(got, tt.want) || strings.Contains(got, "s3cr3t") {
				t.Errorf("stepline.yaml:\n%s\nwant %s", got, tt.want)
			}
			if tt.name == "absent" && strings.Contains(got, "token") {
				t.Errorf("a token appeared:\n%s", got)
			}
			person := false
			for _, n := range c.notes {
				person = person || n.Level == Person
			}
			if person != tt.person {
				t.Errorf("needs a person %v, want %v: %v", person, tt.person, c.notes)
			}
		})
	}
}

// TestConfigOpenClawIdentity: identity_dir is a path Stepline keeps as
// written, but a ${NAME} there is an environment variable the reference
// read at load, which Stepline's identity (a path) cannot hold: it is
// left out and needs a person, so that stepline.yaml still loads.
func TestConfigOpenClawIdentity(t *testing.T) {
	tests := []struct {
		name, identity, want string
		person               bool
	}{
		{"home", "~/.openclaw/identity", `identity: "~/.openclaw/identity"`, false},
		{"absolute", "/etc/openclaw", `identity: "/etc/openclaw"`, false},
		{"environment", "${OPENCLAW_IDENTITY_DIR}", "", true},
		{"environment inside", "${HOME}/.openclaw/identity", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseConfigText(t, "executors: {openclaw: {url: \"wss://oc.example.com\", identity_dir: \""+tt.identity+"\"}}")
			got := string(c.projectFile(false))
			if tt.want != "" && !strings.Contains(got, tt.want) || tt.want == "" && strings.Contains(got, "identity") {
				t.Errorf("stepline.yaml:\n%s\nwant %q", got, tt.want)
			}
			p := project.Parse(filepath.Join(t.TempDir(), project.FileName), []byte(got))
			if len(p.Diagnostics) != 0 {
				t.Errorf("stepline.yaml: %v\n%s", p.Diagnostics, got)
			}
			person := false
			for _, n := range c.notes {
				person = person || n.Level == Person && strings.Contains(n.Msg, "identity_dir")
			}
			if person != tt.person {
				t.Errorf("needs a person %v, want %v: %v", person, tt.person, c.notes)
			}
		})
	}
}
