package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// bedrock calls Amazon Bedrock's Converse API through the SDK client in
// Deps (IAM credentials, no API keys).
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

type bedrockConfig struct {
	model       string
	maxTokens   int64
	temperature *float64
	topP        *float64
	system      string
	toolUse     bool
	additional  map[string]any
}

func readBedrock(r *reader) bedrockConfig {
	var c bedrockConfig
	c.model = r.str("model", true)
	c.maxTokens, _ = r.integer("max_tokens", 1)
	if t, ok := r.num("temperature", 0, 1); ok {
		c.temperature = &t
	}
	if t, ok := r.num("top_p", 0, 1); ok {
		c.topP = &t
	}
	c.system = r.str("system", false)
	c.toolUse = r.boolean("tool_use", true)
	c.additional = r.object("additional_model_request_fields")
	r.seconds("timeout_seconds")
	return c
}

// Complete sends one Converse request.
func (p *bedrock) Complete(ctx context.Context, req llmoutput.Request) (llmoutput.Completion, error) {
	a, err := p.reg.begin(ctx, p.call, DefaultModelTimeout)
	if err != nil {
		return finish(nil, llmoutput.Completion{}, err)
	}
	defer a.cancel()
	c, err := p.complete(a, req)
	return finish(a.red, c, err)
}

func (p *bedrock) complete(a *attempt, req llmoutput.Request) (llmoutput.Completion, error) {
	cfg := readBedrock(a.cfg)
	if err := configError(Bedrock, a.cfg.done()); err != nil {
		return llmoutput.Completion{}, err
	}
	system, turns := messagesOf(req, cfg.system)
	if len(turns) == 0 {
		return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("bedrock: the request has no user message")
	}
	in := &bedrockruntime.ConverseInput{ModelId: &cfg.model}
	for _, t := range turns {
		role := types.ConversationRoleUser
		if t.Role == llmoutput.RoleAssistant {
			role = types.ConversationRoleAssistant
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: t.Content}}})
	}
	if system != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}}
	}
	if cfg.maxTokens > 0 || cfg.temperature != nil || cfg.topP != nil {
		ic := &types.InferenceConfiguration{}
		if cfg.maxTokens > 0 {
			n := int32(cfg.maxTokens)
			ic.MaxTokens = &n
		}
		if cfg.temperature != nil {
			t := float32(*cfg.temperature)
			ic.Temperature = &t
		}
		if cfg.topP != nil {
			t := float32(*cfg.topP)
			ic.TopP = &t
		}
		in.InferenceConfig = ic
	}
	if cfg.additional != nil {
		in.AdditionalModelRequestFields = document.NewLazyDocument(cfg.additional)
	}
	tool := ""
	if cfg.toolUse && req.Schema != nil && len(req.Schema.JSON) > 0 {
		var schema any
		if err := json.Unmarshal(req.Schema.JSON, &schema); err != nil {
			return llmoutput.Completion{}, fault.Errorf[fault.ConfigError]("bedrock: the answer schema is not valid JSON")
		}
		tool = toolName(req.Schema.Name)
		desc := req.Schema.Description
		if desc == "" {
			desc = "Record the answer."
		}
		in.ToolConfig = &types.ToolConfiguration{
			Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name:        &tool,
				Description: &desc,
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}}},
			ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: &tool}},
		}
	}
	out, err := p.client.Converse(a.ctx, in)
	if err != nil {
		return llmoutput.Completion{}, bedrockError(a, cfg.model, err)
	}
	return parseConverse(out, cfg.model, tool)
}

// bedrockError maps a Converse failure by its AWS error code.
func bedrockError(a *attempt, model string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(a.ctx.Err(), context.DeadlineExceeded) {
		return fault.Errorf[fault.ExecutorTimeout]("bedrock: %s: no answer within %s", model, limitText(a.limit))
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("bedrock: %s: %w", model, context.Canceled)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		msg := fmt.Sprintf("bedrock: %s: %s: %s", model, api.ErrorCode(), clip(api.ErrorMessage(), 300))
		switch api.ErrorCode() {
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
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
			return &fault.ExecutorRejected{Msg: msg}
		}
		return &fault.ExecutorUnavailable{Msg: msg}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fault.Errorf[fault.ExecutorTimeout]("bedrock: %s: timed out", model)
	}
	return fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: %v", model, err)
}

// converseRecord is what is kept of a Converse response for audit: the SDK
// does not expose the body, so the fields read are recorded.
type converseRecord struct {
	StopReason string          `json:"stopReason"`
	Text       string          `json:"text,omitempty"`
	ToolUse    json.RawMessage `json:"toolUse,omitempty"`
	Usage      llmoutput.Usage `json:"usage"`
	LatencyMS  int64           `json:"latencyMs,omitempty"`
}

// parseConverse reads a Converse answer. With tool set, the input of that
// tool's call is the answer; without a call, the text is.
func parseConverse(out *bedrockruntime.ConverseOutput, model, tool string) (llmoutput.Completion, error) {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return llmoutput.Completion{}, fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: reply holds no message", model)
	}
	var text strings.Builder
	var toolInput json.RawMessage
	for _, b := range msg.Value.Content {
		switch v := b.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(v.Value)
		case *types.ContentBlockMemberToolUse:
			if toolInput != nil || (tool != "" && (v.Value.Name == nil || *v.Value.Name != tool)) {
				continue
			}
			toolInput = json.RawMessage("{}")
			if v.Value.Input != nil {
				raw, err := v.Value.Input.MarshalSmithyDocument()
				if err != nil {
					return llmoutput.Completion{}, fault.Errorf[fault.ExecutorUnavailable]("bedrock: %s: unreadable tool input: %v", model, err)
				}
				toolInput = raw
			}
		}
	}
	c := llmoutput.Completion{Content: text.String(), Model: model, Provider: "bedrock"}
	if toolInput != nil {
		c.Content = string(toolInput)
	}
	if out.Usage != nil {
		if out.Usage.InputTokens != nil {
			c.Usage.InputTokens = int64(*out.Usage.InputTokens)
		}
		if out.Usage.OutputTokens != nil {
			c.Usage.OutputTokens = int64(*out.Usage.OutputTokens)
		}
	}
	switch out.StopReason {
	case types.StopReasonEndTurn, types.StopReasonStopSequence, types.StopReasonToolUse:
		c.FinishReason = llmoutput.FinishStop
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		c.FinishReason = llmoutput.FinishLength
	case types.StopReasonContentFiltered, types.StopReasonGuardrailIntervened:
		c.FinishReason = llmoutput.FinishContentFilter
	default:
		c.FinishReason = string(out.StopReason)
	}
	rec := converseRecord{StopReason: string(out.StopReason), Text: text.String(), ToolUse: toolInput, Usage: c.Usage}
	if out.Metrics != nil && out.Metrics.LatencyMs != nil {
		rec.LatencyMS = *out.Metrics.LatencyMs
	}
	if len(rec.ToolUse) > 0 && !json.Valid(rec.ToolUse) {
		rec.ToolUse = nil
	}
	raw, _ := json.Marshal(rec)
	c.Raw = auditRaw(raw, false)
	return c, nil
}
