package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// ContextChars is how much of a delivery's response body becomes the
// synthesised answer's next_step_context.
const ContextChars = 200

// webhook sends the rendered prompt to a URL as the request body.
//
// executor_config:
//
//	url              required
//	method           GET, POST (default), PUT, PATCH or DELETE
//	headers          request headers
//	content_type     default application/json
//	timeout_seconds  default DefaultDeliveryTimeout
//
// A non-2xx status is an error. A 2xx body that is an LLMOutput is the
// step's answer; any other body is delivered: confidence 1, summary
// "Webhook delivered: HTTP <code>", next_step_context its start. The body
// sent is the request's first user message (the rendered prompt_template);
// it is not secret-expanded.
type webhook struct {
	reg  *Registry
	call Call
}

type deliveryConfig struct {
	url         string
	method      string
	headers     map[string]string
	contentType string
	payload     any // notify only: map or string
}

func readWebhook(r *reader) deliveryConfig {
	return readDelivery(r, false)
}

func readNotify(r *reader) deliveryConfig {
	return readDelivery(r, true)
}

func readDelivery(r *reader, notify bool) deliveryConfig {
	c := deliveryConfig{contentType: "application/json"}
	c.url = r.url("url", true)
	c.method = r.method("method")
	c.headers = r.headers("headers")
	if ct := strings.TrimSpace(r.str("content_type", false)); ct != "" {
		if _, _, err := mime.ParseMediaType(ct); err != nil && !r.pending(ct) {
			r.fail("content_type", "%q is not a media type", ct)
		}
		c.contentType = ct
	}
	r.seconds("timeout_seconds")
	if notify {
		v := r.get("payload")
		switch x := v.(type) {
		case nil:
			c.payload = map[string]any{}
		case string:
			c.payload = x
		default:
			m, ok := stringMap(v)
			if !ok {
				r.fail("payload", "want a mapping or a string, got %s", typeName(v))
			}
			c.payload = m
		}
	}
	return c
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
	cfg := readWebhook(a.cfg)
	if err := configError(Webhook, a.cfg.done()); err != nil {
		return llmoutput.Completion{}, err
	}
	rep, err := deliver(a, w.reg, Webhook, cfg, []byte(prompt(req)))
	if err != nil {
		return llmoutput.Completion{}, err
	}
	body := []byte(a.red.Redact(string(rep.body)))
	return webhookAnswer(rep.status, body, rep.truncated), nil
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
func deliver(a *attempt, reg *Registry, executor string, cfg deliveryConfig, body []byte) (reply, error) {
	h := http.Header{}
	if len(body) > 0 || cfg.method != http.MethodGet {
		h.Set("Content-Type", cfg.contentType)
	}
	setHeaders(h, cfg.headers)
	return reg.send(a.ctx, exchange{executor: executor, method: cfg.method, url: cfg.url, header: h, body: body, limit: a.limit})
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

// delivered is the JSON text of a synthesised delivery answer.
func delivered(summary, context string, muted bool) string {
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
// executor_config: url (required), method, headers, payload (a mapping,
// encoded per content_type: JSON by default, or form fields; or a string
// sent as it is), content_type, timeout_seconds (default
// DefaultDeliveryTimeout). ${NAME} is expanded everywhere, payload
// included.
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
	cfg := readNotify(a.cfg)
	if err := configError(Notify, a.cfg.done()); err != nil {
		return llmoutput.Completion{}, err
	}
	body, err := encodePayload(cfg.payload, cfg.contentType)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	rep, err := deliver(a, n.reg, Notify, cfg, body)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	red := []byte(a.red.Redact(string(rep.body)))
	return notifyAnswer(rep.status, red, rep.truncated), nil
}

func notifyAnswer(status int, body []byte, truncated bool) llmoutput.Completion {
	return llmoutput.Completion{
		Content:      delivered(fmt.Sprintf("Notification delivered: HTTP %d", status), head(body, ContextChars), false),
		FinishReason: llmoutput.FinishStop,
		Provider:     Notify,
		Raw:          deliveryRaw(status, body, truncated),
	}
}

// encodePayload encodes a notify payload for its content type: a string
// as it is; a mapping as JSON, or as form fields for
// application/x-www-form-urlencoded (values must then be scalars).
func encodePayload(payload any, contentType string) ([]byte, error) {
	if s, ok := payload.(string); ok {
		return []byte(s), nil
	}
	m, _ := payload.(map[string]any)
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/x-www-form-urlencoded":
		form := url.Values{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := m[k].(type) {
			case string:
				form.Set(k, v)
			case bool:
				form.Set(k, strconv.FormatBool(v))
			case nil:
				form.Set(k, "")
			default:
				f, ok := number(v)
				if !ok {
					return nil, fault.Errorf[fault.ConfigError]("notify: executor_config.payload.%s: form fields must be scalars", k)
				}
				form.Set(k, strconv.FormatFloat(f, 'f', -1, 64))
			}
		}
		return []byte(form.Encode()), nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fault.Errorf[fault.ConfigError]("notify: executor_config.payload cannot be encoded as JSON: %v", err)
		}
		return b, nil
	}
	return nil, fault.Errorf[fault.ConfigError]("notify: a payload mapping cannot be sent as %q (use JSON, form fields, or a string payload)", mt)
}
