package executor

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// anthropic calls the Anthropic Messages API (POST /v1/messages).
//
// executor_config:
//
//	api_key            required (x-api-key)
//	model              required
//	max_tokens         default AnthropicMaxTokens
//	temperature        0..1
//	system             text put before the request's system messages
//	tool_use           default true: with an answer schema, force a tool call whose
//	                   input is the answer (Completion.Content is that input as JSON)
//	base_url           default AnthropicBaseURL ("/v1/messages" is appended)
//	anthropic_version  default AnthropicVersion
//	headers            extra request headers (e.g. anthropic-beta)
//	timeout_seconds    the call's own bound (default DefaultModelTimeout)
type anthropic struct {
	reg  *Registry
	call Call
}

// Complete sends one Messages API request.
func (p *anthropic) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	return p.reg.completeModel(ctx, p.call, req, p.complete)
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int64              `json:"max_tokens"`
	System      string             `json:"system,omitempty"`
	Messages    []anthropicMessage `json:"messages"`
	Temperature *float64           `json:"temperature,omitempty"`
	Tools       []anthropicTool    `json:"tools,omitempty"`
	ToolChoice  map[string]string  `json:"tool_choice,omitempty"`
}

func (p *anthropic) complete(a *attempt, req llmoutput.Request) (llmoutput.Completion, error) {
	cfg := settings.ReadAnthropic(a.cfg)
	if err := settings.IssuesError(Anthropic, a.cfg.Done()); err != nil {
		return llmoutput.Completion{}, err
	}
	system, turns := messagesOf(req, cfg.System)
	if len(turns) == 0 {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("anthropic: the request has no user message")
	}
	body := anthropicRequest{Model: cfg.Model, MaxTokens: cfg.MaxTokens, System: system, Temperature: cfg.Temperature}
	for _, t := range turns {
		body.Messages = append(body.Messages, anthropicMessage{Role: string(t.Role), Content: t.Content})
	}
	tool := ""
	if cfg.ToolUse && req.Schema != nil && len(req.Schema.JSON) > 0 {
		if !json.Valid(req.Schema.JSON) {
			return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("anthropic: the answer schema is not valid JSON")
		}
		tool = toolName(req.Schema.Name)
		desc := req.Schema.Description
		if desc == "" {
			desc = "Record the answer."
		}
		body.Tools = []anthropicTool{{Name: tool, Description: desc, InputSchema: req.Schema.JSON}}
		body.ToolChoice = map[string]string{"type": "tool", "name": tool}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("anthropic: cannot encode the request: %v", err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("X-Api-Key", cfg.APIKey)
	h.Set("Anthropic-Version", cfg.Version)
	setHeaders(h, cfg.Headers)
	endpoint := strings.TrimRight(cfg.BaseURL, "/")
	if !strings.HasSuffix(endpoint, "/v1/messages") {
		endpoint += "/v1/messages"
	}
	rep, err := p.reg.send(a.ctx, exchange{executor: Anthropic, method: http.MethodPost, url: endpoint, header: h, body: payload, limit: a.limit, red: a.red})
	if err != nil {
		return llmoutput.Completion{}, err
	}
	return parseAnthropic(rep, cfg.Model, tool)
}

type anthropicResponse struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// parseAnthropic reads a 2xx Messages reply. With tool set, the input of
// that tool's call is the answer; without a call, the text is.
func parseAnthropic(rep reply, model, tool string) (llmoutput.Completion, error) {
	var resp anthropicResponse
	if err := json.Unmarshal(rep.body, &resp); err != nil {
		return llmoutput.Completion{}, malformed(Anthropic, rep, err.Error())
	}
	if resp.Type == "error" {
		return llmoutput.Completion{}, &fault.ExecutorUnavailable{Msg: "anthropic: error in reply" + apiMessage(rep.body)}
	}
	if resp.Type != "message" && resp.Content == nil {
		return llmoutput.Completion{}, malformed(Anthropic, rep, "not a message")
	}
	c := llmoutput.Completion{
		Model:    model,
		Provider: "anthropic",
		Raw:      auditRaw(rep.body, rep.truncated),
		Usage: llmoutput.Usage{
			InputTokens:  resp.Usage.InputTokens + resp.Usage.CacheCreationInputTokens + resp.Usage.CacheReadInputTokens,
			OutputTokens: resp.Usage.OutputTokens,
		},
	}
	if resp.Model != "" {
		c.Model = resp.Model
	}
	var text strings.Builder
	toolInput := json.RawMessage(nil)
	for _, b := range resp.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if toolInput == nil && (tool == "" || b.Name == tool) {
				toolInput = b.Input
			}
		}
	}
	c.Content = text.String()
	if toolInput != nil {
		c.Content = string(toolInput)
	}
	if resp.StopReason != nil {
		switch *resp.StopReason {
		case "end_turn", "stop_sequence", "tool_use":
			c.FinishReason = llmoutput.FinishStop
		case "max_tokens", "model_context_window_exceeded":
			c.FinishReason = llmoutput.FinishLength
		case "refusal":
			c.FinishReason = llmoutput.FinishRefusal
			c.Refusal = text.String()
		default:
			c.FinishReason = *resp.StopReason
		}
	}
	return c, nil
}
