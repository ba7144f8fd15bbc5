package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// bedrock calls Amazon Bedrock's Converse API through the Bedrock runtime
// client in Deps (IAM credentials, no API keys). It builds the request
// body and reads the answer itself, so the client only signs and sends.
//
// executor_config:
//
//	model                            required: model id, inference profile id or ARN
//	max_tokens                       inferenceConfig.maxTokens
//	temperature                      inferenceConfig.temperature, 0..1
//	top_p                            inferenceConfig.topP, 0..1
//	system                           text put before the request's system messages
//	tool_use                         default true: with an answer schema, force a tool call
//	                                 whose input is the answer
//	additional_model_request_fields  model-specific fields, passed through
//	timeout_seconds                  the call's own bound (default DefaultModelTimeout)
type bedrock struct {
	reg    *Registry
	call   Call
	client ConverseAPI
}

// Complete sends one Converse request.
func (p *bedrock) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	return p.reg.completeModel(ctx, p.call, req, p.complete)
}

// converseRequest is the Converse request body, as far as the executor
// fills it.
type converseRequest struct {
	Messages        []converseMessage `json:"messages"`
	System          []converseText    `json:"system,omitempty"`
	InferenceConfig *inferenceConfig  `json:"inferenceConfig,omitempty"`
	ToolConfig      *toolConfig       `json:"toolConfig,omitempty"`
	Additional      map[string]any    `json:"additionalModelRequestFields,omitempty"`
}

type converseMessage struct {
	Role    string         `json:"role"` // "user" or "assistant"
	Content []converseText `json:"content"`
}

type converseText struct {
	Text string `json:"text"`
}

type inferenceConfig struct {
	MaxTokens   int64    `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"topP,omitempty"`
}

type toolConfig struct {
	Tools      []toolEntry `json:"tools"`
	ToolChoice toolChoice  `json:"toolChoice"`
}

type toolEntry struct {
	ToolSpec toolSpec `json:"toolSpec"`
}

type toolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

type toolChoice struct {
	Tool struct {
		Name string `json:"name"`
	} `json:"tool"`
}

// converseResponse is what the executor reads of a Converse answer.
type converseResponse struct {
	Output struct {
		Message *struct {
			Content []struct {
				Text    *string `json:"text"`
				ToolUse *struct {
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"toolUse"`
			} `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      *struct {
		InputTokens  int64 `json:"inputTokens"`
		OutputTokens int64 `json:"outputTokens"`
	} `json:"usage"`
	Metrics *struct {
		LatencyMS int64 `json:"latencyMs"`
	} `json:"metrics"`
}

func (p *bedrock) complete(a *attempt, req llmoutput.Request) (llmoutput.Completion, error) {
	cfg := settings.ReadBedrock(a.cfg)
	if err := settings.IssuesError(Bedrock, a.cfg.Done()); err != nil {
		return llmoutput.Completion{}, err
	}
	system, turns := messagesOf(req, cfg.System)
	if len(turns) == 0 {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("bedrock: the request has no user message")
	}
	in := converseRequest{Additional: cfg.Additional}
	for _, t := range turns {
		role := "user"
		if t.Role == llmoutput.RoleAssistant {
			role = "assistant"
		}
		in.Messages = append(in.Messages, converseMessage{Role: role, Content: []converseText{{Text: t.Content}}})
	}
	if system != "" {
		in.System = []converseText{{Text: system}}
	}
	if cfg.MaxTokens > 0 || cfg.Temperature != nil || cfg.TopP != nil {
		in.InferenceConfig = &inferenceConfig{MaxTokens: cfg.MaxTokens, Temperature: cfg.Temperature, TopP: cfg.TopP}
	}
	tool := ""
	if cfg.ToolUse && req.Schema != nil && len(req.Schema.JSON) > 0 {
		if !json.Valid(req.Schema.JSON) {
			return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("bedrock: the answer schema is not valid JSON")
		}
		tool = toolName(req.Schema.Name)
		spec := toolSpec{Name: tool, Description: req.Schema.Description}
		if spec.Description == "" {
			spec.Description = "Record the answer."
		}
		spec.InputSchema.JSON = req.Schema.JSON
		in.ToolConfig = &toolConfig{Tools: []toolEntry{{ToolSpec: spec}}}
		in.ToolConfig.ToolChoice.Tool.Name = tool
	}
	body, err := json.Marshal(in)
	if err != nil {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("bedrock: cannot encode the request: %v", err)
	}
	start := time.Now()
	out, err := p.client.Converse(a.ctx, cfg.Model, body)
	p.reg.log.DebugContext(a.ctx, "executor aws call", "executor", Bedrock, "operation", "Converse", "step", p.call.Step,
		"duration", time.Since(start), "error", err != nil)
	if err != nil {
		return llmoutput.Completion{}, bedrockError(a, cfg.Model, err)
	}
	// Scrubbed as it arrives, as transport does for the HTTP executors.
	return parseConverse([]byte(a.red.Redact(string(out))), cfg.Model, tool)
}

// bedrockError maps a Converse failure by its AWS error code, else by its
// HTTP status.
func bedrockError(a *attempt, model string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(a.ctx.Err(), context.DeadlineExceeded) {
		return fault.Errorf[fault.ExecutorTimeout]("bedrock: %s: no answer within %s", model, limitText(a.limit))
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("bedrock: %s: %w", model, context.Canceled)
	}
	var ce *fault.ConfigError
	if errors.As(err, &ce) { // no region or no credentials: retrying cannot help
		return fault.Errorf[fault.ConfigError]("bedrock: %s: %s", model, ce.Msg)
	}
	var re *awsrest.ResponseError
	if errors.As(err, &re) {
		code := re.Code
		if code == "" {
			code = fmt.Sprintf("HTTP %d", re.StatusCode)
		}
		msg := fmt.Sprintf("bedrock: %s: %s: %s", model, code, clip(a.red.Redact(re.Message), 300))
		switch re.Code {
		case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
			return &fault.RateLimited{Msg: msg}
		case "ModelTimeoutException":
			return &fault.ExecutorTimeout{Msg: msg}
		case "InternalServerException", "ServiceUnavailableException", "ModelNotReadyException", "ModelErrorException":
			return &fault.ExecutorUnavailable{Msg: msg}
		case "AccessDeniedException", "ValidationException", "ResourceNotFoundException",
			"UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException":
			return &fault.ExecutorRejected{Msg: msg}
		}
		switch {
		case re.StatusCode == 429:
			return &fault.RateLimited{Msg: msg}
		case re.StatusCode >= 400 && re.StatusCode < 500:
			return &fault.ExecutorRejected{Msg: msg}
		}
		return &fault.ExecutorUnavailable{Msg: msg}
	}
	if errors.Is(err, awsrest.ErrBodyTooLarge) {
		return fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: reply too large: %v", model, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fault.Errorf[fault.ExecutorTimeout]("bedrock: %s: timed out", model)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: %v", model, err)
}

// converseRecord is what is kept of a Converse answer for audit: the
// fields read, without the guardrail trace and other members that can make
// the body large.
type converseRecord struct {
	StopReason string          `json:"stopReason"`
	Text       string          `json:"text,omitempty"`
	ToolUse    json.RawMessage `json:"toolUse,omitempty"`
	Usage      llmoutput.Usage `json:"usage"`
	LatencyMS  int64           `json:"latencyMs,omitempty"`
}

// parseConverse reads a Converse answer. With tool set, the input of that
// tool's call is the answer; without a call, the text is.
func parseConverse(body []byte, model, tool string) (llmoutput.Completion, error) {
	var out converseResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return llmoutput.Completion{}, fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: malformed reply: %v", model, err)
	}
	if out.Output.Message == nil {
		return llmoutput.Completion{}, fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: reply holds no message", model)
	}
	var text strings.Builder
	var toolInput json.RawMessage
	for _, b := range out.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
		case b.ToolUse != nil:
			if toolInput != nil || (tool != "" && b.ToolUse.Name != tool) {
				continue
			}
			toolInput = json.RawMessage("{}")
			if in := bytes.TrimSpace(b.ToolUse.Input); len(in) > 0 && !bytes.Equal(in, []byte("null")) {
				var compact bytes.Buffer
				if err := json.Compact(&compact, in); err != nil {
					return llmoutput.Completion{}, fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: unreadable tool input: %v", model, err)
				}
				toolInput = compact.Bytes()
			}
		}
	}
	c := llmoutput.Completion{Content: text.String(), Model: model, Provider: "bedrock"}
	if toolInput != nil {
		c.Content = string(toolInput)
	}
	if out.Usage != nil {
		c.Usage = llmoutput.Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}
	}
	switch out.StopReason {
	case "end_turn", "stop_sequence", "tool_use":
		c.FinishReason = llmoutput.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		c.FinishReason = llmoutput.FinishLength
	case "content_filtered", "guardrail_intervened":
		c.FinishReason = llmoutput.FinishContentFilter
	default:
		c.FinishReason = out.StopReason
	}
	rec := converseRecord{StopReason: out.StopReason, Text: text.String(), ToolUse: toolInput, Usage: c.Usage}
	if out.Metrics != nil {
		rec.LatencyMS = out.Metrics.LatencyMS
	}
	raw, _ := json.Marshal(rec)
	c.Raw = auditRaw(raw, false)
	return c, nil
}
