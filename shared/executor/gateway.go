package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// gateway calls an OpenAI-compatible chat-completions endpoint: OpenAI,
// Azure OpenAI, OpenRouter, LiteLLM, vLLM, Ollama and the like.
//
// executor_config:
//
//	base_url               "/chat/completions" is appended to its path (query kept); default
//	                       Defaults.OpenAIBaseURL (OPENAI_BASE_URL), without which a call fails
//	model                  required; sent as written ("provider/model" names the provider)
//	api_key                sent as "Authorization: Bearer" (Azure: "api-key"); default the
//	                       secret OPENAI_API_KEY when it is set (none sent when it is not); ""
//	                       sends none. Required when base_url is a Liquid template: a rendered
//	                       URL may point anywhere, and the default key must not follow it
//	api_key_header         send the key raw in this header instead
//	provider               the provider name reported and priced (default: from host or model)
//	temperature            0..2
//	max_tokens             maximum answer tokens (older field, most servers)
//	max_completion_tokens  maximum answer tokens (OpenAI reasoning models)
//	structured_output      true|false|json_schema|json_object|off; default json_schema for
//	                       openai, azure and openrouter, off elsewhere
//	headers                extra request headers
//	extra_body             extra top-level request fields (seed, top_p, reasoning_effort, ...)
//	timeout_seconds        the call's own bound (default DefaultModelTimeout)
type gateway struct {
	reg  *Registry
	call Call
}

// DefaultSecrets lists the secrets a step of executor with config cfg
// reads without naming them: OpenAIAPIKeySecret for a gateway step without
// api_key. The call sends none when such a secret is not set, so a stack
// maps it only when it is configured.
func DefaultSecrets(executor string, cfg map[string]any) []string {
	if executor == Gateway && cfg["api_key"] == nil {
		return []string{settings.OpenAIAPIKeySecret}
	}
	return nil
}

// Complete sends one chat completion.
func (g *gateway) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	return g.reg.completeModel(ctx, g.call, req, g.complete)
}

func (g *gateway) complete(a *attempt, req llmoutput.Request) (llmoutput.Completion, error) {
	if len(req.Messages) == 0 {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("gateway: the request has no messages")
	}
	p, err := g.prepare(a, req.Schema)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	msgs := make([]map[string]string, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, map[string]string{"role": string(m.Role), "content": m.Content})
	}
	p.body["messages"] = msgs
	rep, err := g.post(a, p)
	if err != nil {
		return llmoutput.Completion{}, err
	}
	return parseChatCompletion(rep, p.cfg.Model, p.provider, hostProvider(p.host))
}

// gatewayRequest is a chat-completions request being built: where it
// goes, its headers, and its body without messages.
type gatewayRequest struct {
	cfg      settings.GatewayConfig
	endpoint string
	host     string
	provider string
	header   http.Header
	body     map[string]any
}

// prepare reads the attempt's configuration and builds the request
// around the messages: endpoint, credentials, headers, the body's model,
// sampling, token limits, extra_body and, with a schema, response_format.
func (g *gateway) prepare(a *attempt, schema *llmoutput.SchemaSpec) (gatewayRequest, error) {
	cfg := settings.ReadGateway(a.cfg, g.reg.deps.Defaults)
	if err := settings.IssuesError(Gateway, a.cfg.Done()); err != nil {
		return gatewayRequest{}, err
	}
	if !cfg.APIKeySet {
		key, err := a.red.Resolve(a.ctx, settings.OpenAIAPIKeySecret)
		var unset *fault.ConfigError
		switch {
		case err == nil:
			cfg.APIKey = key
		case !errors.As(err, &unset): // a store that cannot be reached: retryable
			return gatewayRequest{}, fmt.Errorf("gateway: default api_key: %w", err)
		}
	}
	endpoint, host, err := chatURL(cfg.BaseURL)
	if err != nil {
		return gatewayRequest{}, err
	}
	p := gatewayRequest{cfg: cfg, endpoint: endpoint, host: host, provider: gatewayProvider(cfg.Provider, cfg.Model, host), body: map[string]any{}}
	for k, v := range cfg.ExtraBody {
		p.body[k] = v
	}
	p.body["model"] = wireModel(cfg.Model, host)
	if cfg.Temperature != nil {
		p.body["temperature"] = *cfg.Temperature
	}
	if cfg.MaxTokens > 0 {
		p.body["max_tokens"] = cfg.MaxTokens
	}
	if cfg.MaxCompletionTokens > 0 {
		p.body["max_completion_tokens"] = cfg.MaxCompletionTokens
	}
	mode := cfg.Structured
	if mode == "" {
		mode = settings.StructuredOff
		switch p.provider {
		case "openai", "azure", "openrouter":
			mode = settings.StructuredSchema
		}
	}
	if schema != nil && len(schema.JSON) > 0 {
		switch mode {
		case settings.StructuredSchema:
			if !json.Valid(schema.JSON) {
				return gatewayRequest{}, fault.Errorf[fault.ConfigError]("gateway: the answer schema is not valid JSON")
			}
			spec := map[string]any{"name": toolName(schema.Name), "schema": schema.JSON}
			if schema.Description != "" {
				spec["description"] = schema.Description
			}
			p.body["response_format"] = map[string]any{"type": "json_schema", "json_schema": spec}
		case settings.StructuredObject:
			p.body["response_format"] = map[string]any{"type": "json_object"}
		}
	}
	p.header = http.Header{}
	p.header.Set("Content-Type", "application/json")
	p.header.Set("Accept", "application/json")
	if cfg.APIKey != "" {
		switch {
		case cfg.APIKeyHeader != "":
			p.header.Set(cfg.APIKeyHeader, cfg.APIKey)
		case hostProvider(host) == "azure":
			p.header.Set("api-key", cfg.APIKey)
		default:
			p.header.Set("Authorization", "Bearer "+cfg.APIKey)
		}
	}
	setHeaders(p.header, cfg.Headers)
	return p, nil
}

// post sends a prepared request.
func (g *gateway) post(a *attempt, p gatewayRequest) (reply, error) {
	payload, err := json.Marshal(p.body)
	if err != nil {
		return reply{}, fault.Errorf[fault.ConfigError]("gateway: cannot encode the request: %v", err)
	}
	return g.reg.send(a.ctx, exchange{executor: Gateway, method: http.MethodPost, url: p.endpoint, header: p.header, body: payload, limit: a.limit, red: a.red})
}

// chatResponse is the part of a chat-completions response the executor
// reads. OpenRouter adds "provider"; an error may come with status 200.
type chatResponse struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Choices  []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
			Refusal *string         `json:"refusal"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// parseChatCompletion reads a 2xx reply. provider is the name decided from
// the configuration; when it is empty, the reply's own provider field or,
// failing that, hostName is reported.
func parseChatCompletion(rep reply, model, provider, hostName string) (llmoutput.Completion, error) {
	var resp chatResponse
	if err := json.Unmarshal(rep.body, &resp); err != nil {
		return llmoutput.Completion{}, malformed(Gateway, rep, err.Error())
	}
	if len(resp.Choices) == 0 {
		if len(resp.Error) > 0 && string(resp.Error) != "null" {
			return llmoutput.Completion{}, embeddedError(rep.body, resp.Error)
		}
		return llmoutput.Completion{}, malformed(Gateway, rep, "no choices")
	}
	ch := resp.Choices[0]
	content, err := chatContent(ch.Message.Content)
	if err != nil {
		return llmoutput.Completion{}, malformed(Gateway, rep, err.Error())
	}
	c := llmoutput.Completion{
		Content:  content,
		Model:    model,
		Provider: provider,
		Raw:      auditRaw(rep.body, rep.truncated),
	}
	if resp.Model != "" {
		c.Model = resp.Model
	}
	if c.Provider == "" {
		c.Provider = strings.ToLower(resp.Provider)
	}
	if c.Provider == "" {
		c.Provider = hostName
	}
	if ch.FinishReason != nil {
		c.FinishReason = finishReasonOpenAI(*ch.FinishReason)
	}
	if ch.Message.Refusal != nil && *ch.Message.Refusal != "" {
		c.Refusal = *ch.Message.Refusal
		c.FinishReason = llmoutput.FinishRefusal
	}
	if resp.Usage != nil {
		c.Usage = llmoutput.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
	}
	return c, nil
}

// chatContent reads message.content: a string, null, or a list of parts.
func chatContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("message.content is neither text nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func finishReasonOpenAI(s string) string {
	switch s {
	case "stop", "tool_calls", "function_call":
		return llmoutput.FinishStop
	case "length", "max_tokens":
		return llmoutput.FinishLength
	case "content_filter":
		return llmoutput.FinishContentFilter
	}
	return s
}

// embeddedError maps an {"error": {...}} body that came with a 2xx status
// (OpenRouter reports upstream failures so), by its numeric code.
func embeddedError(body, raw json.RawMessage) error {
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	code, _ := strconv.Atoi(strings.Trim(string(e.Code), `"`))
	msg := "gateway: error in reply" + apiMessage(body)
	switch {
	case code == http.StatusTooManyRequests || strings.Contains(string(e.Code), "rate_limit"):
		return &fault.RateLimited{Msg: msg}
	case code == http.StatusRequestTimeout:
		return &fault.ExecutorTimeout{Msg: msg}
	case code >= 400 && code < 500:
		return &fault.ExecutorRejected{Msg: msg}
	}
	return &fault.ExecutorUnavailable{Msg: msg}
}

// chatURL appends /chat/completions to base's path, keeping its query
// (Azure's api-version).
func chatURL(base string) (endpoint, host string, err error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Host == "" {
		return "", "", fault.Errorf[fault.ConfigError]("gateway: executor_config.base_url: want an absolute http or https URL")
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/chat/completions") {
		p += "/chat/completions"
	}
	u.Path, u.RawPath = p, ""
	return u.String(), u.Host, nil
}

// hostProvider names the provider behind a well-known API host; other
// hosts are named by their host name.
func hostProvider(host string) string {
	h := strings.ToLower(host)
	port := ""
	if hh, p, err := net.SplitHostPort(h); err == nil {
		h, port = hh, p
	}
	switch {
	case h == "api.openai.com":
		return "openai"
	case strings.HasSuffix(h, ".openai.azure.com"), strings.HasSuffix(h, ".cognitiveservices.azure.com"), strings.HasSuffix(h, ".services.ai.azure.com"):
		return "azure"
	case h == "openrouter.ai":
		return "openrouter"
	case h == "api.anthropic.com":
		return "anthropic"
	case h == "api.mistral.ai":
		return "mistral"
	case h == "api.groq.com":
		return "groq"
	case h == "api.deepseek.com":
		return "deepseek"
	case h == "api.together.xyz":
		return "together"
	case h == "api.x.ai":
		return "xai"
	case h == "generativelanguage.googleapis.com":
		return "google"
	case port == "11434":
		return "ollama"
	}
	return h
}

// firstParty reports whether the host is a provider's own API (as opposed
// to a router, a proxy or a self-hosted server).
func firstParty(host string) bool {
	switch hostProvider(host) {
	case "openai", "azure", "anthropic", "mistral", "groq", "deepseek", "together", "xai", "google":
		return true
	}
	return false
}

// gatewayProvider names the provider a gateway call is reported and priced
// under: the configured one, else a first-party host's, else the model's
// "provider/" prefix, else the host's.
func gatewayProvider(configured, model, host string) string {
	if configured != "" {
		return configured
	}
	if firstParty(host) {
		return hostProvider(host)
	}
	if p, _, ok := strings.Cut(model, "/"); ok && p != "" {
		return strings.ToLower(p)
	}
	if hp := hostProvider(host); net.ParseIP(hp) == nil && hp != "localhost" {
		return hp
	}
	return ""
}

// wireModel is the model name sent: as written, except that a first-party
// API is not sent its own "provider/" prefix (api.openai.com rejects
// "openai/gpt-4o").
func wireModel(model, host string) string {
	if p, rest, ok := strings.Cut(model, "/"); ok && firstParty(host) && strings.EqualFold(p, hostProvider(host)) {
		return rest
	}
	return model
}

// toolName makes a schema name acceptable as an OpenAI schema name or an
// Anthropic or Bedrock tool name: [a-zA-Z0-9_-]{1,64}, other characters
// written as "_".
func toolName(name string) string {
	b := make([]byte, 0, min(len(name), 64))
	for i := 0; i < len(name) && len(b) < 64; i++ {
		c := name[i]
		if c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	if strings.Trim(string(b), "_") == "" {
		return "llm_output"
	}
	return string(b)
}
