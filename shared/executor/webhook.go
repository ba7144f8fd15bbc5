package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// ContextChars is how much of a delivery's response body becomes the
// synthesised answer's next_step_context.
const ContextChars = 200

// webhook sends a request to a URL. Its body is executor_config.payload,
// encoded, or else the rendered prompt_template as text.
//
// executor_config:
//
//	url              required
//	method           GET, POST (default), PUT, PATCH or DELETE
//	headers          request headers
//	payload          the body as structure: a mapping or a list
//	content_type     default application/json
//	timeout_seconds  default DefaultDeliveryTimeout
//
// payload is the body for anything built from run data. Its string leaves
// arrive rendered one by one (the runner renders every string of
// executor_config as a Liquid template), and the whole value is encoded
// only then: as JSON, or as form fields for content_type
// application/x-www-form-urlencoded (a mapping of scalars). A rendered
// value is one string in the body whatever it holds, so event data or a
// model's reply cannot add keys or change the body's shape; leaves that
// are not strings keep their YAML type (numbers, booleans, null). Without
// payload the body is the rendered prompt_template, sent as written; the
// compiler warns when that text is JSON with values pasted into it.
// payload together with a non-empty prompt_template is a ConfigError (the
// body would be ambiguous), as is payload with method GET (a GET request
// has no body); DELETE sends it like POST.
//
// A non-2xx status is an error. A 2xx body that is an LLMOutput is the
// step's answer; any other body is delivered: confidence 1, summary
// "Webhook delivered: HTTP <code>", next_step_context its start (empty
// when that start reads as a placeholder: llmoutput.IsPlaceholder). The
// runner judges a webhook's answer once, never asking again, which would
// deliver again (package steprun). ${NAME}
// in payload resolves like anywhere in executor_config (a "${" that a
// rendered value brought in stays literal); the prompt_template body is
// not secret-expanded.
type webhook struct {
	reg  *Registry
	call Call
}

// Complete delivers the prompt.
func (w *webhook) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	a, err := w.reg.begin(ctx, w.call, DefaultDeliveryTimeout)
	if err != nil {
		return finish(nil, llmoutput.Completion{}, err)
	}
	defer a.cancel()
	c, err := w.complete(a, req)
	return finish(a.red, c, err)
}

func (w *webhook) complete(a *attempt, req llmoutput.Request) (llmoutput.Completion, error) {
	cfg := settings.ReadWebhook(a.cfg)
	if err := settings.IssuesError(Webhook, a.cfg.Done()); err != nil {
		return llmoutput.Completion{}, err
	}
	reqBody, err := webhookBody(cfg, prompt(req))
	if err != nil {
		return llmoutput.Completion{}, err
	}
	rep, err := deliver(a, w.reg, Webhook, cfg, reqBody)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	return webhookAnswer(rep.status, rep.body, rep.truncated), nil
}

// webhookBody is a webhook's request body: the encoded payload, or else
// the rendered prompt as text. Both at once is a ConfigError.
func webhookBody(cfg settings.DeliveryConfig, prompt string) ([]byte, error) {
	if cfg.Payload == nil {
		return []byte(prompt), nil
	}
	if strings.TrimSpace(prompt) != "" {
		return nil, fault.Errorf[fault.ConfigError]("webhook: executor_config.payload and prompt_template both give the request body; keep one (payload)")
	}
	b, is := settings.EncodePayload(cfg.Payload, cfg.ContentType)
	if is != nil {
		return nil, fault.Errorf[fault.ConfigError]("webhook: %s", is.Error())
	}
	return b, nil
}

// prompt is the request's first user message: the rendered prompt.
func prompt(req llmoutput.Request) string {
	for _, m := range req.Messages {
		if m.Role == llmoutput.RoleUser {
			return m.Content
		}
	}
	return ""
}

// deliver sends body per cfg.
func deliver(a *attempt, reg *Registry, executor string, cfg settings.DeliveryConfig, body []byte) (reply, error) {
	h := http.Header{}
	if len(body) > 0 || cfg.Method != http.MethodGet {
		h.Set("Content-Type", cfg.ContentType)
	}
	setHeaders(h, cfg.Headers)
	return reg.send(a.ctx, exchange{executor: executor, method: cfg.Method, url: cfg.URL, header: h, body: body, limit: a.limit, red: a.red})
}

// webhookAnswer is a webhook step's answer to a 2xx reply.
func webhookAnswer(status int, body []byte, truncated bool) llmoutput.Completion {
	c := llmoutput.Completion{FinishReason: llmoutput.FinishStop, Provider: Webhook, Raw: deliveryRaw(status, body, truncated)}
	if t := bytes.TrimSpace(body); !truncated && isLLMOutput(t) {
		c.Content = string(t)
		return c
	}
	c.Content = delivered(fmt.Sprintf("Webhook delivered: HTTP %d", status), head(body, ContextChars), false)
	return c
}

// delivered is the JSON text of a synthesised delivery answer. A context
// the contract would read as a placeholder (a short markup body such as
// "<ok/>", "...") is left out: the answer is the runner's, and the body
// stays in the raw response.
func delivered(summary, context string, muted bool) string {
	if llmoutput.IsPlaceholder(context) {
		context = ""
	}
	ans := struct {
		Confidence      float64 `json:"confidence"`
		Summary         string  `json:"summary"`
		NextStepContext string  `json:"next_step_context"`
		Muted           bool    `json:"muted,omitempty"`
	}{1.0, summary, context, muted}
	b, _ := json.Marshal(ans)
	return string(b)
}

// deliveryRaw records a delivery's response for audit.
func deliveryRaw(status int, body []byte, truncated bool) json.RawMessage {
	text, cutShort := cut(body, MaxRawBytes/4)
	rec := struct {
		StatusCode int    `json:"status_code"`
		Body       string `json:"body"`
		Truncated  bool   `json:"truncated,omitempty"`
	}{status, text, truncated || cutShort}
	b, _ := json.Marshal(rec)
	return b
}

// isLLMOutput reports whether body is an LLMOutput by the contract's
// required fields: a JSON object with a finite confidence in [0, 1], a
// non-empty string summary and a string next_step_context.
func isLLMOutput(body []byte) bool {
	var m map[string]json.RawMessage
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &m) != nil {
		return false
	}
	conf, ok := m["confidence"]
	if !ok || len(conf) == 0 || (conf[0] != '-' && (conf[0] < '0' || conf[0] > '9')) {
		return false
	}
	var f float64
	if json.Unmarshal(conf, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1 {
		return false
	}
	var summary, next string
	if json.Unmarshal(m["summary"], &summary) != nil || strings.TrimSpace(summary) == "" {
		return false
	}
	nsc, ok := m["next_step_context"]
	return ok && len(nsc) > 0 && nsc[0] == '"' && json.Unmarshal(nsc, &next) == nil
}

// notify posts a payload (its string values already rendered from Liquid)
// to a URL. Outside the production stage nothing is resolved or sent and
// the step answers as delivered, marked muted.
//
// executor_config: url (required), method, headers, payload,
// content_type, timeout_seconds (default DefaultDeliveryTimeout). payload
// is a mapping or a list encoded as the webhook executor encodes it (JSON
// by default, or form fields), {} when absent, or a string sent as it is;
// with method GET there is no body, and a payload is an error. ${NAME} is
// expanded everywhere, payload included.
type notify struct {
	reg  *Registry
	call Call
}

// Complete sends the notification.
func (n *notify) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	if n.call.Stage != StageProduction {
		return mutedAnswer(), nil
	}
	a, err := n.reg.begin(ctx, n.call, DefaultDeliveryTimeout)
	if err != nil {
		return finish(nil, llmoutput.Completion{}, err)
	}
	defer a.cancel()
	c, err := n.complete(a)
	return finish(a.red, c, err)
}

// mutedAnswer is a notify step's answer in the testing stage.
func mutedAnswer() llmoutput.Completion {
	return llmoutput.Completion{
		Content:      delivered("Notification muted (stage testing)", "", true),
		FinishReason: llmoutput.FinishStop,
		Provider:     Notify,
		Raw:          json.RawMessage(`{"muted":true}`),
	}
}

func (n *notify) complete(a *attempt) (llmoutput.Completion, error) {
	cfg := settings.ReadNotify(a.cfg)
	if err := settings.IssuesError(Notify, a.cfg.Done()); err != nil {
		return llmoutput.Completion{}, err
	}
	var body []byte
	if cfg.Payload != nil {
		var is *settings.ConfigIssue
		if body, is = settings.EncodePayload(cfg.Payload, cfg.ContentType); is != nil {
			return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("notify: %s", is.Error())
		}
	}
	rep, err := deliver(a, n.reg, Notify, cfg, body)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	return notifyAnswer(rep.status, rep.body, rep.truncated), nil
}

func notifyAnswer(status int, body []byte, truncated bool) llmoutput.Completion {
	return llmoutput.Completion{
		Content:      delivered(fmt.Sprintf("Notification delivered: HTTP %d", status), head(body, ContextChars), false),
		FinishReason: llmoutput.FinishStop,
		Provider:     Notify,
		Raw:          deliveryRaw(status, body, truncated),
	}
}
