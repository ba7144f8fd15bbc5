package notify

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
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/internal/origin"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telegram"
	"github.com/stepline/stepline/shared/telemetry"
	"github.com/stepline/stepline/shared/template"
)

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	DefaultLogger  = "stepline.notifications"
	// MaxTimeout bounds config.timeout_seconds: a notification must not
	// hold a run's step for long.
	MaxTimeout = 60 * time.Second
	// DefaultTemplate renders a notification without a template.
	DefaultTemplate = `{{ pipeline_name }} run {{ pipeline_run_id }}: {{ action }}{% if current_step %} at step {{ current_step }}{% endif %}{% if step_summary %}: {{ step_summary }}{% endif %}`
)

// Actions the runner fires.
const (
	ActionEscalate = "escalate"
	ActionStopped  = "stopped"
	ActionNotify   = "notify" // budget exceeded; also the default on_abort
)

// StatusBudget is the outcome Action maps to the budget action.
const StatusBudget = "budget_exceeded"

// The escalation_reason a notification names when it is not the run's
// status: a run that ended past its time limit or was aborted from
// outside (no step decided it), a budget that ran out, a step escalated
// or aborted below its confidence threshold.
const (
	EscalationTimedOut       = "timed_out"
	EscalationAborted        = "execution_aborted"
	EscalationBudgetExceeded = StatusBudget
	EscalationLowConfidence  = "low_confidence"
)

// Action returns the action a step outcome fires: escalated and failed
// fire "escalate", aborted fires onAbort (default "notify"), stopped
// fires "stopped", StatusBudget fires "notify". Any other status fires
// nothing ("").
func Action(status, onAbort string) string {
	switch status {
	case task.StatusEscalated, task.StatusFailed:
		return ActionEscalate
	case task.StatusAborted:
		if onAbort == "" {
			return pipeline.DefaultOnAbort
		}
		return onAbort
	case task.StatusStopped:
		return ActionStopped
	case StatusBudget, "budget":
		return ActionNotify
	}
	return ""
}

// Publisher publishes to an SNS topic.
type Publisher interface {
	// Publish sends message to topicARN. Errors are returned as they are;
	// the Dispatcher records them.
	Publish(ctx context.Context, topicARN, subject, message string) error
}

// Context is what a notification's template sees besides the pipeline's
// vars: the run, the step that fired the action, and the step's verdict.
type Context struct {
	RunID       string
	CurrentStep string
	Status      string                     // the step outcome that fired the action
	Trigger     json.RawMessage            // the run's trigger: labels, team and context_template.include read it
	Steps       map[string]json.RawMessage // compact outputs of the earlier steps

	EscalationReason    string   // low_confidence, or the status (failed, ...)
	Confidence          *float64 // the effective confidence; nil: not known
	ConfidenceThreshold *float64
	StepSummary         string
	Contradicts         any // the step's reasoning.contradicts
	ProceedReason       string
	// Extra holds further variables (gate_policy, combined_trust, ...). They
	// are set last and win over everything else.
	Extra map[string]any
}

// Delivery is the outcome of one notification.
type Delivery struct {
	Pipeline string
	RunID    string
	Action   string
	Channel  string // the configured channel
	Via      string // the channel used: Channel, or log when muted
	Muted    bool   // stage testing: written to the log instead of sent
	Target   string // the URL, topic or logger as configured (${NAME} unresolved)
	Message  string // the rendered text
	Status   int    // the HTTP status, for webhook and slack
	Err      error  // nil: delivered
	At       time.Time
	Duration time.Duration
}

// Notifier fires a pipeline's notifications: what a step handler, the
// local runner, the recorder and the approval function send through
// (*Dispatcher, or a stand-in in tests).
type Notifier interface {
	Fire(ctx context.Context, p task.Pipeline, action string, data Context) []Delivery
}

var _ Notifier = (*Dispatcher)(nil)

// LogDeliveries logs each delivery to log ("notification delivered" at
// info, "notification not delivered" with its error at warn); nil log
// logs nothing. Deliveries are not retried.
func LogDeliveries(ctx context.Context, log *slog.Logger, ds []Delivery) {
	if log == nil {
		return
	}
	for _, d := range ds {
		attrs := []any{"run", d.RunID, "action", d.Action, "channel", d.Channel, "via", d.Via, "muted", d.Muted}
		if d.Err != nil {
			log.WarnContext(ctx, "notification not delivered", append(attrs, "error", d.Err.Error())...)
			continue
		}
		log.InfoContext(ctx, "notification delivered", attrs...)
	}
}

// Dispatcher sends notifications. The zero value logs to slog.Default,
// sends HTTP with a plain client, resolves no secrets and has no SNS. Safe
// for concurrent use once its fields are set.
type Dispatcher struct {
	HTTP    *http.Client
	Secrets secret.Resolver
	SNS     Publisher
	Logger  *slog.Logger
	// Record, when set, is called with every delivery, muted or failed
	// ones included.
	Record  func(ctx context.Context, d Delivery)
	Timeout time.Duration // per delivery; 0: DefaultTimeout
	Now     func() time.Time
	// TelegramAPI is the Bot API's base URL; "" is telegram.DefaultAPI.
	TelegramAPI string

	once   sync.Once
	engine *template.Engine
	client *http.Client
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.engine = template.New(template.Limits{})
		// A channel's URL and headers carry secrets (a Slack webhook URL,
		// X-Api-Key): a redirect is followed only within its origin
		// (package origin), as an executor's.
		d.client = origin.Client(d.HTTP)
	})
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Fire sends every notification p configures for action, in order, and
// returns their deliveries (none when the action has no notifications).
// It never fails and never panics: problems are in the deliveries' Err.
func (d *Dispatcher) Fire(ctx context.Context, p task.Pipeline, action string, data Context) []Delivery {
	d.init()
	var notices []pipeline.Notification
	for _, a := range p.Notifications {
		if a.Name == action {
			notices = append(notices, a.Notices...)
		}
	}
	if len(notices) == 0 {
		return nil
	}
	muted := p.Stage != pipeline.StageProduction
	b := bindings(p, action, data)
	out := make([]Delivery, 0, len(notices))
	for _, n := range notices {
		dl := d.deliver(ctx, p, action, n, b, muted, data.RunID)
		if dl.Err != nil {
			d.log().WarnContext(ctx, "notification failed", "pipeline", p.Name, "run", data.RunID,
				"action", action, "channel", dl.Channel, "target", dl.Target, "error", dl.Err.Error())
		}
		if d.Record != nil {
			d.Record(ctx, dl)
		}
		out = append(out, dl)
	}
	return out
}

func (d *Dispatcher) deliver(ctx context.Context, p task.Pipeline, action string, n pipeline.Notification, b map[string]any, muted bool, runID string) (dl Delivery) {
	start := d.now()
	dl = Delivery{Pipeline: p.Name, RunID: runID, Action: action, Channel: n.Channel, Via: n.Channel, Muted: muted, Target: target(n), At: start}
	team, _ := b["team"].(string)
	if n.Channel == pipeline.ChannelTelegram {
		_, chat := telegramTarget(n.Config, team)
		dl.Target = "chat " + chat
	}
	defer func() {
		if r := recover(); r != nil {
			dl.Err = fmt.Errorf("notification %s/%s: panic: %v", action, n.Channel, r)
		}
		dl.Duration = d.now().Sub(start)
	}()
	if n.Channel == pipeline.ChannelTelegram {
		// Telegram HTML: the template is the author's markup, the values
		// it pastes are data and are escaped.
		b = telegram.EscapeData(b).(map[string]any)
	}
	msg, err := d.render(ctx, n.Template, b)
	if n.Channel == pipeline.ChannelTelegram && err == nil {
		msg = telegram.Cut(msg, telegram.MaxMessageRunes)
	}
	if err != nil {
		dl.Err = err
		return dl
	}
	dl.Message = msg
	if muted {
		// Written as a log notification would be: at config.level,
		// warning by default, which `stepline run` shows.
		dl.Via = pipeline.ChannelLog
		level, _ := n.Config["level"].(string)
		d.log().Log(ctx, logLevel(level), "notification muted: stage testing", "pipeline", p.Name, "run", runID,
			"action", action, "channel", n.Channel, "target", dl.Target, "message", msg)
		return dl
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if s, ok := number(n.Config["timeout_seconds"]); ok && s > 0 {
		timeout = min(time.Duration(s*float64(time.Second)), MaxTimeout)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	red := secret.NewRedactor(d.Secrets)
	switch n.Channel {
	case pipeline.ChannelLog:
		d.logNotice(ctx, p, runID, action, n, msg)
	case pipeline.ChannelWebhook:
		dl.Status, err = d.webhook(cctx, red, n.Config, msg)
	case pipeline.ChannelSlack:
		dl.Status, err = d.slack(cctx, red, n.Config, msg)
	case pipeline.ChannelSNS:
		err = d.sns(cctx, p, action, n.Config, msg)
	case pipeline.ChannelTelegram:
		err = d.telegram(cctx, red, n.Config, team, msg)
	case pipeline.ChannelMSTeams:
		dl.Status, err = d.msteams(cctx, red, n.Config, msg)
	default:
		err = fmt.Errorf("unknown channel %q (use log, webhook, slack, sns, telegram or msteams)", n.Channel)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		dl.Err = red.Error(fmt.Errorf("notification %s/%s: %w", action, n.Channel, err))
	}
	return dl
}

// target names where a notification goes, as configured.
func target(n pipeline.Notification) string {
	str := func(k string) string { s, _ := n.Config[k].(string); return s }
	switch n.Channel {
	case pipeline.ChannelWebhook, pipeline.ChannelSlack, pipeline.ChannelMSTeams:
		return str("url")
	case pipeline.ChannelSNS:
		return str("topic_arn")
	case pipeline.ChannelLog:
		if l := str("logger"); l != "" {
			return l
		}
		return DefaultLogger
	}
	return ""
}

func (d *Dispatcher) render(ctx context.Context, src string, b map[string]any) (string, error) {
	if src == "" {
		src = DefaultTemplate
	}
	t, err := d.engine.Parse(src)
	if err != nil {
		return "", fault.Errorf[fault.TemplateError]("notification template: %s", err)
	}
	out, err := t.Render(ctx, b)
	if err != nil {
		return "", fault.Errorf[fault.TemplateError]("notification template: %s", err)
	}
	return out, nil
}

// logLevel reads the log channel's config.level; warning by default and
// for names it does not know.
func logLevel(name string) slog.Level {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "error":
		return slog.LevelError
	case "critical":
		return slog.LevelError + 4
	}
	return slog.LevelWarn
}

func (d *Dispatcher) logNotice(ctx context.Context, p task.Pipeline, runID, action string, n pipeline.Notification, msg string) {
	name, _ := n.Config["level"].(string)
	d.log().Log(ctx, logLevel(name), "notification", "pipeline", p.Name, "run", runID, "action", action,
		"logger", target(n), "message", msg)
}

func (d *Dispatcher) webhook(ctx context.Context, red *secret.Redactor, cfg map[string]any, body string) (int, error) {
	method := http.MethodPost
	if m, _ := cfg["method"].(string); m != "" {
		method = strings.ToUpper(m)
	}
	ct, _ := cfg["content_type"].(string)
	if ct == "" {
		ct = "text/plain; charset=utf-8"
		if json.Valid([]byte(body)) {
			ct = "application/json"
		}
	}
	return d.post(ctx, red, cfg, method, ct, []byte(body))
}

func (d *Dispatcher) slack(ctx context.Context, red *secret.Redactor, cfg map[string]any, text string) (int, error) {
	msg := map[string]any{"text": text}
	for _, k := range []string{"channel", "username", "icon_emoji", "icon_url"} {
		if s, _ := cfg[k].(string); s != "" {
			msg[k] = s
		}
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return 0, err
	}
	return d.post(ctx, red, map[string]any{"url": cfg["url"], "headers": cfg["headers"]}, http.MethodPost, "application/json", body)
}

// ChatID reads a Telegram chat_id as configured: a number or a string
// (an @channel name, or a number written as text).
func ChatID(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case int:
		return fmt.Sprint(v)
	case int64:
		return fmt.Sprint(v)
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v))
		}
	}
	return ""
}

// telegramTarget returns the bot (a ${NAME} reference) and chat a
// telegram notification of a run of team goes to: config.teams.<team>'s
// chat_id and bot_token when it names them, else config's.
func telegramTarget(cfg map[string]any, team string) (bot, chat string) {
	bot, _ = cfg["bot_token"].(string)
	chat = ChatID(cfg["chat_id"])
	if teams, _ := cfg["teams"].(map[string]any); team != "" && teams != nil {
		if t, ok := teams[team].(map[string]any); ok {
			if b, _ := t["bot_token"].(string); b != "" {
				bot = b
			}
			if c := ChatID(t["chat_id"]); c != "" {
				chat = c
			}
		}
	}
	return bot, chat
}

// telegram sends msg (Telegram HTML) with sendMessage to config.chat_id as
// the bot of config.bot_token, a ${NAME} secret, or to the run's team's
// chat and bot under config.teams.
func (d *Dispatcher) telegram(ctx context.Context, red *secret.Redactor, cfg map[string]any, team, msg string) error {
	ref, chat := telegramTarget(cfg, team)
	if ref == "" {
		return errors.New("config.bot_token is missing")
	}
	if chat == "" {
		return errors.New("config.chat_id is missing")
	}
	tok, err := secret.Expand(ctx, red, ref)
	if err != nil {
		return fmt.Errorf("bot_token: %w", err)
	}
	c := &telegram.Client{Token: tok, API: d.TelegramAPI, HTTP: d.client}
	if _, err := c.Send(ctx, chat, msg, nil); err != nil {
		return err
	}
	return nil
}

// msteams posts {"text": msg} to the incoming webhook config.url (a
// Teams incoming webhook or a Power Automate workflow URL; a ${NAME}
// secret, as the URL is the credential).
func (d *Dispatcher) msteams(ctx context.Context, red *secret.Redactor, cfg map[string]any, text string) (int, error) {
	body, err := json.Marshal(map[string]any{"text": text})
	if err != nil {
		return 0, err
	}
	return d.post(ctx, red, map[string]any{"url": cfg["url"]}, http.MethodPost, "application/json", body)
}

// post sends body to cfg.url with cfg.headers, both ${NAME}-expanded.
func (d *Dispatcher) post(ctx context.Context, red *secret.Redactor, cfg map[string]any, method, contentType string, body []byte) (int, error) {
	raw, _ := cfg["url"].(string)
	if raw == "" {
		return 0, errors.New("config.url is missing")
	}
	u, err := secret.Expand(ctx, red, raw)
	if err != nil {
		return 0, fmt.Errorf("url: %w", err)
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return 0, fmt.Errorf("url %q is not an absolute http(s) URL", raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "stepline-notify")
	telemetry.Inject(ctx, req.Header)
	headers := map[string]string{}
	switch hs := cfg["headers"].(type) {
	case map[string]string:
		headers = hs
	case map[string]any:
		for k, v := range hs {
			if s, ok := v.(string); ok {
				headers[k] = s
			} else {
				headers[k] = fmt.Sprint(v)
			}
		}
	}
	for k, v := range headers {
		s, err := secret.Expand(ctx, red, v)
		if err != nil {
			return 0, fmt.Errorf("header %s: %w", k, err)
		}
		req.Header.Set(k, s)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		// Scrubbed before the excerpt is cut, so no part of an echoed secret stays.
		return resp.StatusCode, fmt.Errorf("%s answered %s%s", pu.Host, resp.Status, excerpt([]byte(red.Redact(string(snippet)))))
	}
	return resp.StatusCode, nil
}

// excerpt quotes the start of a response body for an error message.
func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return fmt.Sprintf(": %q", s)
}

func (d *Dispatcher) sns(ctx context.Context, p task.Pipeline, action string, cfg map[string]any, msg string) error {
	topic, _ := cfg["topic_arn"].(string)
	if topic == "" {
		return errors.New("config.topic_arn is missing")
	}
	if d.SNS == nil {
		return errors.New("no SNS publisher: the sns channel works on AWS only")
	}
	subject, _ := cfg["subject"].(string)
	if subject == "" {
		subject = fmt.Sprintf("Stepline: %s %s", p.Name, action)
	}
	return d.SNS.Publish(ctx, topic, snsSubject(subject), msg)
}

// snsSubject makes s a valid SNS subject: printable ASCII on one line, at
// most 100 characters.
func snsSubject(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
		if b.Len() >= 100 {
			break
		}
	}
	return strings.TrimSpace(b.String())
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}
