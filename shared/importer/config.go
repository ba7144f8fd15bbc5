package importer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/secret"
	"go.yaml.in/yaml/v3"
)

// config is what the importer takes from the reference's config.yaml.
type config struct {
	file        string
	pipelineDir string // as written; default ./pipelines
	stepDir     string // as written; default ./steps
	telegram    struct{ botToken, chatID string }
	hasTelegram bool
	// approvalDefault and approvalTeams are human_approval's routes as
	// stepline.yaml writes them; nil/empty where none could be imported.
	approvalDefault *approvalChannel
	approvalTeams   []teamChannel
	gateway         struct{ url, token string }
	openclaw        struct{ url, identity string }
	teams           [][2]string // name, token reference
	prices          []price
	notes           []Note
	// calibration is config.yaml's calibration block: its n_min and
	// bin_width are the defaults of every calibrated step.
	calibration *yaml.Node
}

// approvalChannel is one channel of stepline.yaml's human_approval:
// its kind (telegram, slack, msteams) and the fields of its block, in
// the order written.
type approvalChannel struct {
	kind   string
	fields [][2]string
}

type teamChannel struct {
	team string
	ch   *approvalChannel
}

var (
	// chatIDRE and teamNameRE are what stepline.yaml accepts as a
	// Telegram chat_id and a team name (shared/project).
	chatIDRE    = lazyregexp.New(`^(-?[1-9][0-9]{0,18}|@[A-Za-z][A-Za-z0-9_]{4,31})$`)
	teamNameRE  = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	slackChanRE = lazyregexp.New(`^[CGD][A-Z0-9]{2,30}$`)
)

type price struct {
	provider, model string
	in, out         float64
}

// Keys of config.yaml Stepline has no setting for, and why.
var configDropped = map[string]string{
	"server":        "stepline serve takes --addr",
	"database":      "Stepline keeps local runs in .stepline/stepline.db and on AWS in DynamoDB",
	"logging":       "Stepline logs where its commands and functions run",
	"dedup":         "dedup is per pipeline (trigger.dedup); Stepline's default window is the reference's, 300 s",
	"concurrency":   "stepline serve takes --max-runs",
	"observability": "Stepline traces through X-Ray on AWS",
	"durability":    "durable pipelines set durable.max_resume_age_seconds (Stepline's default is the reference's, 3600 s)",
	"replay":        "Stepline has no replay",
	"team_budgets":  "Stepline has no team budgets",
	"live_pricing":  "Stepline has no live pricing",
	"artifacts":     "Stepline keeps artifacts in .stepline/artifacts locally and in the stack's expiring bucket on AWS",
}

func (c *config) add(n *yaml.Node, level Level, kind, msg string) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	c.notes = append(c.notes, Note{File: c.file, Line: line, Col: col, Level: level, Kind: kind, Msg: msg})
}

// secret keeps a ${NAME} reference as written; a value written out is
// not copied: the reference name def stands for it, and a person must
// store the value under that name.
func (c *config) secret(n *yaml.Node, field, def string) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return ""
	}
	if secret.IsRef(n.Value) {
		return n.Value
	}
	c.add(n, Person, "secret", fmt.Sprintf("%s is written out in config.yaml; it was not copied: store it as the secret %s, which the imported project names", field, def))
	return "${" + def + "}"
}

// str is a scalar's value, "" for anything else.
func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

// parseConfig reads config.yaml's root mapping.
func parseConfig(file string, root *yaml.Node) *config {
	c := &config{file: file, pipelineDir: "./pipelines", stepDir: "./steps"}
	c.telegram.botToken = "${TELEGRAM_BOT_TOKEN}"
	c.telegram.chatID = "${TELEGRAM_CHAT_ID}"
	if root == nil || root.Kind != yaml.MappingNode {
		return c
	}
	for _, e := range entries(root) {
		k, v := e[0], e[1]
		switch k.Value {
		case "pipeline_config_dir":
			if s := str(v); s != "" {
				c.pipelineDir = s
			}
		case "step_library_dir":
			if s := str(v); s != "" {
				c.stepDir = s
			}
		case "executors":
			c.executors(v)
		case "notifications":
			if tg := lookup(v, "telegram"); tg != nil && tg.Kind == yaml.MappingNode {
				c.hasTelegram = true
				if t := c.secret(lookup(tg, "bot_token"), "notifications.telegram.bot_token", "TELEGRAM_BOT_TOKEN"); t != "" {
					c.telegram.botToken = t
				}
				if id := str(lookup(tg, "chat_id")); id != "" {
					c.telegram.chatID = id
					if !chatIDRE.MatchString(id) {
						c.add(keyOf(tg, "chat_id"), Person, "config notifications.telegram", fmt.Sprintf("notifications.telegram.chat_id: %q is not a chat ID Stepline accepts (a number, or @channelname): stepline.yaml's notifications.telegram is left out", id))
					}
				}
				if lookup(tg, "team") != nil {
					c.add(keyOf(tg, "team"), Dropped, "config notifications.telegram.team", "notifications.telegram.team: Stepline has no Telegram /run command")
				}
			}
			for _, ch := range entries(v) {
				if ch[0].Value != "telegram" {
					c.add(ch[0], Dropped, "config notifications", fmt.Sprintf("notifications.%s: the reference's config.yaml configures only telegram", ch[0].Value))
				}
			}
		case "human_approval":
			c.humanApproval(k, v)
		case "auth":
			c.auth(v)
		case "pricing":
			c.pricing(v)
		case "calibration":
			c.calibration = v
		default:
			why, ok := configDropped[k.Value]
			if !ok {
				why = "the reference's config.yaml has no such key, or Stepline has no setting for it"
			}
			c.add(k, Dropped, "config "+k.Value, k.Value+": "+why)
		}
	}
	return c
}

// humanApproval reads human_approval: default and teams.<team> become
// stepline.yaml's human_approval with the same routing.
func (c *config) humanApproval(k, v *yaml.Node) {
	for _, e := range entries(v) {
		switch e[0].Value {
		case "default":
			c.approvalDefault = c.approvalChannel(e[0], e[1], "human_approval.default")
		case "ui_base_url":
			c.add(e[0], Dropped, "config human_approval.ui_base_url", "human_approval.ui_base_url: Stepline's approval links are signed links to its own API (stepline serve's --url, or the stack's HTTP API)")
		case "teams":
			for _, t := range entries(e[1]) {
				where := "human_approval.teams." + t[0].Value
				if !teamNameRE.MatchString(t[0].Value) {
					c.add(t[0], Person, "human_approval", fmt.Sprintf("%s: %q is not a Stepline team name (letters, digits, _ . -, at most 63): route this team by hand", where, t[0].Value))
					continue
				}
				if ch := c.approvalChannel(t[0], t[1], where); ch != nil {
					c.approvalTeams = append(c.approvalTeams, teamChannel{team: t[0].Value, ch: ch})
				}
			}
		default:
			c.add(e[0], Dropped, "config human_approval."+e[0].Value, "human_approval."+e[0].Value+": Stepline has no such setting")
		}
	}
	if lookup(v, "default") == nil && c.hasTelegram {
		c.add(k, Converted, "human_approval", "human_approval has no default: Stepline, as the reference, sends the other teams' approvals to notifications.telegram")
	}
}

// approvalChannel converts one human_approval channel; nil, with a note
// that needs a person, when Stepline cannot send it as written.
func (c *config) approvalChannel(k, n *yaml.Node, where string) *approvalChannel {
	if n == nil || n.Kind != yaml.MappingNode {
		c.add(k, Person, "human_approval", where+": not a mapping: route it by hand")
		return nil
	}
	kind := str(lookup(n, "channel"))
	ch := &approvalChannel{kind: kind}
	block := lookup(n, kind)
	set := func(key, v string) {
		if v != "" {
			ch.fields = append(ch.fields, [2]string{key, v})
		}
	}
	switch kind {
	case "telegram":
		// A telegram block may leave out the bot and chat: the
		// reference takes them from notifications.telegram.
		bot, chat := "", ""
		if c.hasTelegram {
			bot, chat = c.telegram.botToken, c.telegram.chatID
		}
		if t := c.secret(lookup(block, "bot_token"), where+".telegram.bot_token", "TELEGRAM_APPROVAL_BOT_TOKEN"); t != "" {
			bot = t
		}
		if id := str(lookup(block, "chat_id")); id != "" {
			chat = id
		}
		if bot == "" || chat == "" {
			c.add(k, Person, "human_approval", where+": channel telegram without bot_token and chat_id (here or in notifications.telegram): route it by hand")
			return nil
		}
		if !chatIDRE.MatchString(chat) {
			c.add(k, Person, "human_approval", fmt.Sprintf("%s.telegram.chat_id: %q is not a chat ID Stepline accepts (a number, or @channelname): route it by hand", where, chat))
			return nil
		}
		set("bot_token", bot)
		set("chat_id", chat)
		c.add(k, Converted, "human_approval", where+": telegram; stepline serve long-polls the bot for button presses (the reference has no webhook secret; add webhook_secret to take them at a webhook)")
	case "slack":
		set("bot_token", c.secret(lookup(block, "bot_token"), where+".slack.bot_token", "SLACK_BOT_TOKEN"))
		set("signing_secret", "${SLACK_SIGNING_SECRET}")
		set("channel_id", str(lookup(block, "channel_id")))
		if len(ch.fields) != 3 {
			c.add(k, Person, "human_approval", where+": channel slack without slack.bot_token and slack.channel_id: route it by hand")
			return nil
		}
		if id := str(lookup(block, "channel_id")); !slackChanRE.MatchString(id) {
			c.add(keyOf(block, "channel_id"), Person, "human_approval", fmt.Sprintf("%s.slack.channel_id: %q is not a Slack channel ID Stepline accepts (such as C0123456789, not a #name): route it by hand", where, id))
			return nil
		}
		at := keyOf(block, "app_token")
		if at == nil {
			at = k
		}
		c.add(at, Person, "human_approval", where+".slack: Stepline takes Slack's button presses at a request URL, not through Socket Mode (app_token is not used): store the Slack app's signing secret as SLACK_SIGNING_SECRET and set the app's interactivity request URL to Stepline's")
	case "msteams":
		u := c.secret(lookup(block, "webhook_url"), where+".msteams.webhook_url", "MSTEAMS_WEBHOOK_URL")
		if u == "" {
			c.add(k, Person, "human_approval", where+": channel msteams without msteams.webhook_url: route it by hand")
			return nil
		}
		set("webhook_url", u)
	default:
		c.add(k, Person, "human_approval", fmt.Sprintf("%s: channel %q has no Stepline equivalent (telegram, slack, msteams): route it by hand", where, kind))
		return nil
	}
	return ch
}

func (c *config) executors(n *yaml.Node) {
	for _, e := range entries(n) {
		switch e[0].Value {
		case "gateway":
			c.gateway.url = str(lookup(e[1], "url"))
			c.gateway.token = c.secret(lookup(e[1], "token"), "executors.gateway.token", "AGENT_GATEWAY_TOKEN")
			if lookup(e[1], "rest_url") != nil {
				c.add(keyOf(e[1], "rest_url"), Dropped, "config executors.gateway.rest_url", "executors.gateway.rest_url: Stepline reads agent versions from the gateway's replies")
			}
		case "openclaw":
			c.openclaw.url = str(lookup(e[1], "url"))
			c.openclaw.identity = str(lookup(e[1], "identity_dir"))
			if id := c.openclaw.identity; strings.Contains(id, "${") {
				// The reference reads a whole-value ${NAME} of config.yaml
				// from the environment (and keeps any other as text);
				// Stepline's identity is a path and refuses a reference.
				c.openclaw.identity = ""
				how := "keeps it as text (it expands only a whole value)"
				if secret.IsRef(id) {
					how = "reads it from the environment"
				}
				c.add(keyOf(e[1], "identity_dir"), Person, "config executors.openclaw.identity_dir", fmt.Sprintf("executors.openclaw.identity_dir %q: the reference %s, and Stepline's identity is a path: write the directory as executors.openclaw.identity in stepline.yaml (on AWS the identity is the secrets OPENCLAW_DEVICE and OPENCLAW_DEVICE_AUTH)", id, how))
			} else if id != "" && !strings.HasPrefix(id, "~") && !strings.HasPrefix(id, "/") {
				c.add(keyOf(e[1], "identity_dir"), Check, "config executors.openclaw.identity_dir", "executors.openclaw.identity_dir is relative: the reference read it from its working directory, Stepline reads it from stepline.yaml's directory")
			}
		default:
			c.add(e[0], Dropped, "config executors."+e[0].Value, "executors."+e[0].Value+": the reference configures only gateway and openclaw here")
		}
	}
}

// teamSecret is the secret name standing for a team's token written out.
func teamSecret(team string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(team) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return "STEPLINE_TOKEN_" + b.String()
}

func (c *config) auth(n *yaml.Node) {
	if ts := lookup(n, "teams"); ts != nil {
		for _, t := range ts.Content {
			name := str(lookup(t, "name"))
			if name == "" {
				c.add(t, Person, "auth", "auth.teams: an entry without a name is not imported")
				continue
			}
			if tok := c.secret(lookup(t, "token"), "auth.teams["+name+"].token", teamSecret(name)); tok != "" {
				c.teams = append(c.teams, [2]string{name, tok})
			}
		}
	}
	if t := lookup(n, "token"); t != nil {
		if tok := c.secret(t, "auth.token", teamSecret("default")); tok != "" {
			c.teams = append(c.teams, [2]string{"default", tok})
			c.add(keyOf(n, "token"), Check, "auth", `auth.token has no team in the reference; Stepline's tokens each name one: it is the team "default"`)
		}
	}
}

func (c *config) pricing(n *yaml.Node) {
	for _, e := range entries(n) {
		switch e[0].Value {
		case "models":
			for _, m := range e[1].Content {
				match := lookup(m, "match")
				p := price{provider: str(lookup(match, "provider")), model: str(lookup(match, "model"))}
				var err error
				if p.in, err = strconv.ParseFloat(str(lookup(m, "input_per_mtok")), 64); err == nil {
					p.out, err = strconv.ParseFloat(str(lookup(m, "output_per_mtok")), 64)
				}
				if err != nil || p.provider == "" && p.model == "" {
					c.add(m, Person, "pricing", "pricing.models: an entry without match or numeric prices is not imported")
					continue
				}
				c.prices = append(c.prices, p)
			}
		case "currency":
			c.add(e[0], Dropped, "config pricing.currency", "pricing.currency: Stepline's prices are US dollars")
		default:
			c.add(e[0], Dropped, "config pricing."+e[0].Value, "pricing."+e[0].Value+": Stepline has no such setting")
		}
	}
}

// projectFile is stepline.yaml for the imported project. library says
// whether the import writes library steps: only then does it name the
// steps directory, which Stepline warns about when it is missing (the
// default, steps, still finds a library a person adds later).
func (c *config) projectFile(library bool) []byte {
	var b strings.Builder
	b.WriteString("# Stepline project file, imported from the reference's config.yaml by\n")
	b.WriteString("# \"stepline import vectorstep\". Secrets stay ${NAME} references.\n")
	b.WriteString("pipelines: pipelines\n")
	if library {
		b.WriteString("steps: steps\n")
	}
	if c.gateway.url != "" || c.openclaw.url != "" || c.openclaw.identity != "" {
		b.WriteString("executors:\n")
		if c.gateway.url != "" {
			b.WriteString("  gateway:\n    url: " + quote(c.gateway.url) + "\n")
			if c.gateway.token != "" {
				b.WriteString("    token: " + quote(c.gateway.token) + "\n")
			}
		}
		if c.openclaw.url != "" || c.openclaw.identity != "" {
			b.WriteString("  openclaw:\n")
			if c.openclaw.url != "" {
				b.WriteString("    url: " + quote(c.openclaw.url) + "\n")
			}
			if c.openclaw.identity != "" {
				b.WriteString("    identity: " + quote(c.openclaw.identity) + "\n")
			}
		}
	}
	if c.hasTelegram && chatIDRE.MatchString(c.telegram.chatID) {
		// Telegram notices and, without a human_approval default,
		// approval requests use this bot and chat.
		b.WriteString("notifications:\n  telegram:\n    bot_token: " + quote(c.telegram.botToken) + "\n    chat_id: " + quote(c.telegram.chatID) + "\n")
	}
	if c.approvalDefault != nil || len(c.approvalTeams) > 0 {
		b.WriteString("human_approval:\n")
		if c.approvalDefault != nil {
			b.WriteString("  default:\n")
			c.approvalDefault.write(&b, "    ")
		}
		if len(c.approvalTeams) > 0 {
			b.WriteString("  teams:\n")
			for _, t := range c.approvalTeams {
				b.WriteString("    " + quote(t.team) + ":\n")
				t.ch.write(&b, "      ")
			}
		}
	}
	return []byte(b.String())
}

func (ch *approvalChannel) write(b *strings.Builder, indent string) {
	b.WriteString(indent + "channel: " + ch.kind + "\n" + indent + ch.kind + ":\n")
	for _, f := range ch.fields {
		b.WriteString(indent + "  " + f[0] + ": " + quote(f[1]) + "\n")
	}
}

// quote writes s as a YAML double-quoted scalar.
func quote(s string) string { return strconv.Quote(s) }

// tokensFile is the team tokens for stepline serve --tokens.
func (c *config) tokensFile() []byte {
	if len(c.teams) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# Team tokens for \"stepline serve --tokens tokens.yaml\", imported from the\n")
	b.WriteString("# reference's auth settings. Each is a ${NAME} reference read from the environment.\n")
	b.WriteString("teams:\n")
	for _, t := range c.teams {
		b.WriteString("  - {name: " + quote(t[0]) + ", token: " + quote(t[1]) + "}\n")
	}
	return []byte(b.String())
}

// pricesFile is the price table in Stepline's format.
func (c *config) pricesFile() []byte {
	if len(c.prices) == 0 {
		return nil
	}
	ps := c.prices
	var b strings.Builder
	b.WriteString("# Price table (US dollars per million tokens), imported from the reference's\n")
	b.WriteString("# pricing.models. The step function reads a price table from the file its\n")
	b.WriteString("# PRICE_TABLE environment variable names; the CLI prices with its built-in table.\n")
	for _, p := range ps {
		b.WriteString("- {")
		if p.provider != "" {
			b.WriteString("provider: " + quote(p.provider) + ", ")
		}
		if p.model != "" {
			b.WriteString("model_prefix: " + quote(p.model) + ", ")
		}
		b.WriteString("input_per_mtok: " + strconv.FormatFloat(p.in, 'f', -1, 64) + ", output_per_mtok: " + strconv.FormatFloat(p.out, 'f', -1, 64) + "}\n")
	}
	return []byte(b.String())
}
