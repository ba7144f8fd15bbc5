package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/llmoutput"
)

// Agent returns the model and the toolbox of an agent step: call is the
// step's use of its executor (gateway, anthropic or bedrock; its
// executor_config is the step's, rendered), a what the compiler resolved.
// The model calls a.Models in order: the first, then each fallback when a
// call fails for a reason a retry could fix (ExecutorUnavailable,
// ExecutorTimeout, RateLimited). With scripted replies (Deps.Responses)
// both the model and the tools answer from the responses file and no
// network is used. An agent that runs on a remote runtime
// (a.Remote: an OpenClaw gateway, a remote agent gateway) gets a model
// whose every turn is one run there and no toolbox. Errors:
// *fault.ConfigError.
func (r *Registry) Agent(call Call, a *agent.Resolved) (agent.Model, agent.Toolbox, error) {
	if a == nil {
		return nil, nil, fault.Errorf[fault.ConfigError]("step %q: no agent", call.Step)
	}
	if a.Remote != nil || call.Executor == OpenClaw {
		return r.remoteAgent(call, a)
	}
	switch call.Executor {
	case Gateway, Anthropic, Bedrock, Scripted:
	default:
		return nil, nil, fault.Errorf[fault.ConfigError]("step %q: executor %q cannot run agent %q (gateway, anthropic or bedrock can)", call.Step, call.Executor, a.Profile.Name)
	}
	if r.deps.Responses != nil {
		return &scriptedModel{call: call, replies: r.deps.Responses}, r.deps.Responses.Toolbox(), nil
	}
	if call.Executor == Scripted {
		return nil, nil, fault.Errorf[fault.ConfigError]("scripted: step %q has executor scripted but no scripted replies were given (--responses)", call.Step)
	}
	models := a.Models
	if len(models) == 0 {
		// A step compiled without resolved models: the profile's model on
		// the step's own executor.
		ep, err := agent.BuiltinProviders().Resolve(a.Profile.Model, agent.Endpoint{Provider: call.Executor, API: call.Executor})
		if err != nil {
			return nil, nil, fault.Errorf[fault.ConfigError]("agent %q: %v", a.Profile.Name, err)
		}
		models = []agent.Endpoint{ep}
	}
	m := &fallbackModel{}
	for _, ep := range models {
		switch ep.API {
		case agent.APIGateway, agent.APIAnthropic, agent.APIBedrock:
		default:
			return nil, nil, fault.Errorf[fault.ConfigError]("agent %q: model %q: unknown API %q", a.Profile.Name, ep.Model, ep.API)
		}
		if ep.API == agent.APIBedrock && r.deps.Bedrock == nil {
			return nil, nil, fault.Errorf[fault.ConfigError]("agent %q: model %q: no Bedrock client is configured", a.Profile.Name, ep.Model)
		}
		m.models = append(m.models, &endpointModel{reg: r, call: call, ep: ep})
	}
	return m, r.tools, nil
}

// remoteAgent is Agent for an agent that runs on a remote runtime: every
// turn of its model is one run there, and it has no toolbox (the runtime
// runs its own tools). With scripted replies it answers from them.
func (r *Registry) remoteAgent(call Call, a *agent.Resolved) (agent.Model, agent.Toolbox, error) {
	rt := a.Remote
	switch {
	case rt == nil:
		return nil, nil, fault.Errorf[fault.ConfigError]("step %q: executor %q runs agent %q on a remote runtime, but the step carries none (compile it with this Stepline)", call.Step, call.Executor, a.Profile.Name)
	case rt.Runtime != agent.RuntimeOpenClaw && rt.Runtime != agent.RuntimeGateway:
		return nil, nil, fault.Errorf[fault.ConfigError]("step %q: unknown remote runtime %q", call.Step, rt.Runtime)
	case call.Executor != rt.Runtime && call.Executor != Scripted:
		return nil, nil, fault.Errorf[fault.ConfigError]("step %q: executor %q cannot run agent %q, which runs on the %s runtime", call.Step, call.Executor, a.Profile.Name, rt.Runtime)
	}
	if r.deps.Responses != nil {
		return &scriptedModel{call: call, replies: r.deps.Responses}, nil, nil
	}
	return &remoteModel{reg: r, call: call, agent: a}, nil, nil
}

// Close ends the MCP sessions the registry's agent steps opened. Call it
// once, at shutdown; agent steps fail after it.
func (r *Registry) Close() error { return r.tools.Close() }

// fallbackModel tries its models in order.
type fallbackModel struct{ models []agent.Model }

func (f *fallbackModel) Turn(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	var errs []error
	for i, m := range f.models {
		rep, err := m.Turn(ctx, req)
		if err == nil {
			return rep, nil
		}
		errs = append(errs, err)
		switch fault.Name(err) {
		case fault.NameExecutorUnavailable, fault.NameExecutorTimeout, fault.NameRateLimited:
			if i+1 < len(f.models) && ctx.Err() == nil {
				continue
			}
		}
		if len(errs) == 1 {
			return agent.ModelReply{}, err
		}
		// The last model's fault decides Retry and Catch; the message
		// names every model's.
		return agent.ModelReply{}, fmt.Errorf("%w (fallbacks tried: %v)", err, errors.Join(errs[:len(errs)-1]...))
	}
	return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("agent: no model to call")
}

// endpointModel calls one resolved model through its API's executor.
type endpointModel struct {
	reg  *Registry
	call Call
	ep   agent.Endpoint
}

// config is the executor_config a call to the endpoint reads: the step's
// own when the endpoint speaks the step executor's API (its keys, api_key
// included, belong to that API), else only its timeout; then the
// endpoint's model, base URL and key.
func (m *endpointModel) config() map[string]any {
	cfg := map[string]any{}
	for k, v := range m.call.Config {
		if m.ep.API == m.call.Executor || k == "timeout_seconds" {
			cfg[k] = v
		}
	}
	for _, k := range []string{"agent", "thinking_level", "session_key", "trace_max_chars"} {
		delete(cfg, k)
	}
	cfg["model"] = m.ep.Model
	if m.ep.BaseURL != "" {
		cfg["base_url"] = m.ep.BaseURL
	}
	switch {
	case m.ep.APIKey != "":
		cfg["api_key"] = m.ep.APIKey
	case m.ep.API == agent.APIGateway && m.ep.Provider != Gateway:
		// A provider with no key sends none: the gateway's default
		// OPENAI_API_KEY must not follow another provider's URL.
		cfg["api_key"] = ""
	}
	return cfg
}

// Turn makes one call, with the attempt's deadline and redactor, as
// Complete does, and scrubs the call's secrets from the reply.
func (m *endpointModel) Turn(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	call := m.call
	call.Executor = m.ep.API
	call.Config = m.config()
	a, err := m.reg.begin(ctx, call, DefaultModelTimeout)
	if err != nil {
		return agent.ModelReply{}, err
	}
	defer a.cancel()
	var rep agent.ModelReply
	switch m.ep.API {
	case agent.APIGateway:
		rep, err = (&gateway{reg: m.reg, call: call}).turn(a, req)
	case agent.APIAnthropic:
		rep, err = (&anthropic{reg: m.reg, call: call}).turn(a, req)
	case agent.APIBedrock:
		rep, err = (&bedrock{reg: m.reg, call: call, client: m.reg.deps.Bedrock}).turn(a, req)
	}
	if err == nil {
		err = checkUsage(call.Executor, rep.Usage)
	}
	if err != nil {
		return agent.ModelReply{}, a.red.Error(err)
	}
	rep.Text = a.red.Redact(rep.Text)
	rep.Refusal = a.red.Redact(rep.Refusal)
	rep.Model = a.red.Redact(rep.Model)
	rep.Provider = a.red.Redact(rep.Provider)
	rep.FinishReason = a.red.Redact(rep.FinishReason)
	rep.Raw = a.red.RedactJSON(rep.Raw)
	rep.Native = a.red.RedactJSON(rep.Native)
	for i := range rep.Calls {
		rep.Calls[i].Name = a.red.Redact(rep.Calls[i].Name)
		rep.Calls[i].Arguments = a.red.RedactJSON(rep.Calls[i].Arguments)
	}
	return rep, nil
}

// callArguments reads a call's arguments as the model sent them: JSON
// as it is, other text as a JSON string.
func callArguments(raw []byte) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(t) {
		return append(json.RawMessage(nil), t...)
	}
	b, _ := json.Marshal(string(t))
	return b
}

// Thinking budgets (tokens) of Anthropic's extended thinking, by
// thinking_level; OpenAI's reasoning_effort takes the level's name
// (xhigh as high).
var thinkingBudget = map[string]int{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}

// ---- OpenAI-compatible chat completions ----

// turn sends the conversation with tools (OpenAI function calling:
// tools, an assistant message's tool_calls, one "tool" message per
// result).
func (g *gateway) turn(a *attempt, req agent.ModelRequest) (agent.ModelReply, error) {
	p, err := g.prepare(a, req.Schema)
	if err != nil {
		return agent.ModelReply{}, err
	}
	if req.MaxTokens > 0 && p.cfg.MaxTokens == 0 && p.cfg.MaxCompletionTokens == 0 {
		p.body["max_tokens"] = req.MaxTokens
	}
	if req.Temperature != nil && p.cfg.Temperature == nil {
		p.body["temperature"] = *req.Temperature
	}
	if l := req.ThinkingLevel; l != "" && l != "off" && p.body["reasoning_effort"] == nil {
		if l == "xhigh" {
			l = "high"
		}
		p.body["reasoning_effort"] = l
	}
	msgs := []map[string]any{}
	if req.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": req.System})
	}
	for _, m := range req.Messages {
		for _, r := range m.Results {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": r.CallID, "content": resultText(r)})
		}
		if m.Role == agent.RoleAssistant {
			msg := map[string]any{"role": "assistant", "content": m.Text}
			if len(m.Calls) > 0 {
				calls := make([]map[string]any, len(m.Calls))
				for i, c := range m.Calls {
					calls[i] = map[string]any{"id": c.ID, "type": "function",
						"function": map[string]any{"name": c.Name, "arguments": argumentText(c.Arguments)}}
				}
				msg["tool_calls"] = calls
				if m.Text == "" {
					msg["content"] = nil
				}
			}
			msgs = append(msgs, msg)
			continue
		}
		if m.Text != "" || len(m.Results) == 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": m.Text})
		}
	}
	p.body["messages"] = msgs
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, len(req.Tools))
		for i, t := range req.Tools {
			fn := map[string]any{"name": t.Name, "parameters": t.InputSchema}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			tools[i] = map[string]any{"type": "function", "function": fn}
		}
		p.body["tools"] = tools
		p.body["tool_choice"] = "auto"
	}
	rep, err := g.post(a, p)
	if err != nil {
		return agent.ModelReply{}, err
	}
	c, err := parseChatCompletion(rep, p.cfg.Model, p.provider, hostProvider(p.host))
	if err != nil {
		return agent.ModelReply{}, err
	}
	var calls struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(rep.body, &calls); err != nil {
		return agent.ModelReply{}, malformed(Gateway, rep, err.Error())
	}
	out := replyOf(c)
	for _, tc := range calls.Choices[0].Message.ToolCalls {
		out.Calls = append(out.Calls, agent.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: callArguments([]byte(tc.Function.Arguments))})
	}
	return out, nil
}

// argumentText is a call's arguments as OpenAI sends them: JSON text in a
// string.
func argumentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s // the model's own text, kept as a JSON string
	}
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

// resultText is a result's content as the APIs without an error flag
// (OpenAI) read it.
func resultText(r agent.ToolResult) string {
	if r.IsError {
		return "ERROR: " + r.Content
	}
	return r.Content
}

func replyOf(c llmoutput.Completion) agent.ModelReply {
	return agent.ModelReply{Text: c.Content, FinishReason: c.FinishReason, Refusal: c.Refusal, Model: c.Model, Provider: c.Provider, Usage: c.Usage, Raw: c.Raw}
}

// ---- Anthropic Messages ----

// turn sends the conversation with tools (tool_use blocks in the
// assistant's content, tool_result blocks in the next user message).
// The answer's schema is left to the instruction: forcing the answer
// tool would stop the model from calling the others.
func (p *anthropic) turn(a *attempt, req agent.ModelRequest) (agent.ModelReply, error) {
	cfg := settings.ReadAnthropic(a.cfg)
	if err := settings.IssuesError(Anthropic, a.cfg.Done()); err != nil {
		return agent.ModelReply{}, err
	}
	system := req.System
	if cfg.System != "" {
		system = cfg.System + "\n\n" + system
	}
	body := map[string]any{"model": cfg.Model, "max_tokens": cfg.MaxTokens}
	if a.cfg.Get("max_tokens") == nil && req.MaxTokens > 0 {
		body["max_tokens"] = int64(req.MaxTokens)
	}
	if system != "" {
		body["system"] = system
	}
	switch {
	case cfg.Temperature != nil:
		body["temperature"] = *cfg.Temperature
	case req.Temperature != nil:
		body["temperature"] = *req.Temperature
	}
	if budget, ok := thinkingBudget[req.ThinkingLevel]; ok {
		body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": budget}
		if mt, _ := body["max_tokens"].(int64); mt <= int64(budget) {
			body["max_tokens"] = int64(budget) + settings.AnthropicMaxTokens
		}
		delete(body, "temperature") // extended thinking takes none
	}
	msgs, err := anthropicMessages(req.Messages)
	if err != nil {
		return agent.ModelReply{}, err
	}
	body["messages"] = msgs
	if len(req.Tools) > 0 {
		tools := make([]anthropicTool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = anthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		}
		body["tools"] = tools
		body["tool_choice"] = map[string]string{"type": "auto"}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("anthropic: cannot encode the request: %v", err)
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
		return agent.ModelReply{}, err
	}
	c, err := parseAnthropic(rep, cfg.Model, "")
	if err != nil {
		return agent.ModelReply{}, err
	}
	var content struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(rep.body, &content); err != nil {
		return agent.ModelReply{}, malformed(Anthropic, rep, err.Error())
	}
	var blocks []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(content.Content, &blocks)
	// parseAnthropic takes a tool's input as the answer; in a tool loop
	// the text blocks are the answer and tool_use blocks are calls.
	out := replyOf(c)
	var text strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.Calls = append(out.Calls, agent.ToolCall{ID: b.ID, Name: b.Name, Arguments: callArguments(b.Input)})
		}
	}
	out.Text = text.String()
	if c.FinishReason == llmoutput.FinishRefusal {
		out.Refusal = out.Text
	}
	if len(content.Content) > 0 && string(content.Content) != "null" {
		out.Native, out.NativeFormat = append(json.RawMessage(nil), content.Content...), Anthropic
	}
	return out, nil
}

// anthropicMessages writes the conversation as Messages API turns,
// merging consecutive turns of one role (the API wants them to
// alternate).
func anthropicMessages(conv []agent.Message) ([]map[string]any, error) {
	var out []map[string]any
	for _, m := range conv {
		var blocks []any
		switch {
		case m.Role == agent.RoleAssistant && m.NativeFormat == Anthropic && len(m.Native) > 0:
			var native []any
			if err := json.Unmarshal(m.Native, &native); err != nil {
				return nil, fault.Errorf[fault.ConfigError]("anthropic: a stored assistant turn is not a list of blocks: %v", err)
			}
			blocks = native
		case m.Role == agent.RoleAssistant:
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Text})
			}
			for _, c := range m.Calls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": objectOrEmpty(c.Arguments)})
			}
		default:
			for _, r := range m.Results {
				b := map[string]any{"type": "tool_result", "tool_use_id": r.CallID, "content": r.Content}
				if r.IsError {
					b["is_error"] = true
				}
				blocks = append(blocks, b)
			}
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Text})
			}
		}
		if len(blocks) == 0 {
			blocks = []any{map[string]any{"type": "text", "text": "(empty)"}}
		}
		role := agent.RoleUser
		if m.Role == agent.RoleAssistant {
			role = agent.RoleAssistant
		}
		if n := len(out); n > 0 && out[n-1]["role"] == role {
			out[n-1]["content"] = append(out[n-1]["content"].([]any), blocks...)
			continue
		}
		out = append(out, map[string]any{"role": role, "content": blocks})
	}
	if len(out) == 0 {
		return nil, fault.Errorf[fault.ConfigError]("anthropic: the request has no user message")
	}
	return out, nil
}

// objectOrEmpty is a call's arguments as a JSON object for APIs that
// take the input as one: the arguments when they are an object, else {}.
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && m != nil {
		return raw
	}
	return json.RawMessage("{}")
}

// ---- Bedrock Converse ----

// turn sends the conversation with toolConfig (toolUse blocks in the
// assistant's content, toolResult blocks in the next user message).
func (p *bedrock) turn(a *attempt, req agent.ModelRequest) (agent.ModelReply, error) {
	cfg := settings.ReadBedrock(a.cfg)
	if err := settings.IssuesError(Bedrock, a.cfg.Done()); err != nil {
		return agent.ModelReply{}, err
	}
	body := map[string]any{}
	system := req.System
	if cfg.System != "" {
		system = cfg.System + "\n\n" + system
	}
	if system != "" {
		body["system"] = []converseText{{Text: system}}
	}
	inf := map[string]any{}
	switch {
	case cfg.MaxTokens > 0:
		inf["maxTokens"] = cfg.MaxTokens
	case req.MaxTokens > 0:
		inf["maxTokens"] = req.MaxTokens
	}
	switch {
	case cfg.Temperature != nil:
		inf["temperature"] = *cfg.Temperature
	case req.Temperature != nil:
		inf["temperature"] = *req.Temperature
	}
	if cfg.TopP != nil {
		inf["topP"] = *cfg.TopP
	}
	additional := map[string]any{}
	for k, v := range cfg.Additional {
		additional[k] = v
	}
	lower := strings.ToLower(cfg.Model)
	if budget, ok := thinkingBudget[req.ThinkingLevel]; ok && (strings.Contains(lower, "anthropic") || strings.Contains(lower, "claude")) && additional["thinking"] == nil {
		additional["thinking"] = map[string]any{"type": "enabled", "budget_tokens": budget}
		if mt, _ := inf["maxTokens"].(int64); mt <= int64(budget) {
			inf["maxTokens"] = int64(budget) + settings.AnthropicMaxTokens
		}
		delete(inf, "temperature")
	}
	if len(inf) > 0 {
		body["inferenceConfig"] = inf
	}
	if len(additional) > 0 {
		body["additionalModelRequestFields"] = additional
	}
	msgs, err := converseMessages(req.Messages)
	if err != nil {
		return agent.ModelReply{}, err
	}
	body["messages"] = msgs
	if len(req.Tools) > 0 {
		tools := make([]toolEntry, len(req.Tools))
		for i, t := range req.Tools {
			spec := toolSpec{Name: t.Name, Description: t.Description}
			if spec.Description == "" {
				spec.Description = t.Name
			}
			spec.InputSchema.JSON = t.InputSchema
			tools[i] = toolEntry{ToolSpec: spec}
		}
		body["toolConfig"] = map[string]any{"tools": tools}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return agent.ModelReply{}, fault.Errorf[fault.ConfigError]("bedrock: cannot encode the request: %v", err)
	}
	start := time.Now()
	out, err := p.client.Converse(a.ctx, cfg.Model, payload)
	p.reg.log.DebugContext(a.ctx, "executor aws call", "executor", Bedrock, "operation", "Converse", "step", p.call.Step,
		"duration", time.Since(start), "error", err != nil)
	if err != nil {
		return agent.ModelReply{}, bedrockError(a, cfg.Model, err)
	}
	out = []byte(a.red.Redact(string(out)))
	c, err := parseConverse(out, cfg.Model, "")
	if err != nil {
		return agent.ModelReply{}, err
	}
	var resp struct {
		Output struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		} `json:"output"`
	}
	_ = json.Unmarshal(out, &resp)
	var blocks []struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			ToolUseID string          `json:"toolUseId"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
		} `json:"toolUse"`
	}
	_ = json.Unmarshal(resp.Output.Message.Content, &blocks)
	rep := replyOf(c)
	var text strings.Builder
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
		case b.ToolUse != nil:
			rep.Calls = append(rep.Calls, agent.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: callArguments(b.ToolUse.Input)})
		}
	}
	rep.Text = text.String()
	if n := resp.Output.Message.Content; len(n) > 0 && string(n) != "null" {
		rep.Native, rep.NativeFormat = append(json.RawMessage(nil), n...), Bedrock
	}
	return rep, nil
}

// converseMessages writes the conversation as Converse messages, merging
// consecutive turns of one role.
func converseMessages(conv []agent.Message) ([]map[string]any, error) {
	var out []map[string]any
	for _, m := range conv {
		var blocks []any
		switch {
		case m.Role == agent.RoleAssistant && m.NativeFormat == Bedrock && len(m.Native) > 0:
			var native []any
			if err := json.Unmarshal(m.Native, &native); err != nil {
				return nil, fault.Errorf[fault.ConfigError]("bedrock: a stored assistant turn is not a list of blocks: %v", err)
			}
			blocks = native
		case m.Role == agent.RoleAssistant:
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, map[string]any{"text": m.Text})
			}
			for _, c := range m.Calls {
				blocks = append(blocks, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": objectOrEmpty(c.Arguments)}})
			}
		default:
			for _, r := range m.Results {
				status := "success"
				if r.IsError {
					status = "error"
				}
				content := r.Content
				if content == "" {
					content = "(no output)"
				}
				blocks = append(blocks, map[string]any{"toolResult": map[string]any{"toolUseId": r.CallID, "content": []any{map[string]any{"text": content}}, "status": status}})
			}
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, map[string]any{"text": m.Text})
			}
		}
		if len(blocks) == 0 {
			blocks = []any{map[string]any{"text": "(empty)"}}
		}
		role := agent.RoleUser
		if m.Role == agent.RoleAssistant {
			role = agent.RoleAssistant
		}
		if n := len(out); n > 0 && out[n-1]["role"] == role {
			out[n-1]["content"] = append(out[n-1]["content"].([]any), blocks...)
			continue
		}
		out = append(out, map[string]any{"role": role, "content": blocks})
	}
	if len(out) == 0 {
		return nil, fault.Errorf[fault.ConfigError]("bedrock: the request has no user message")
	}
	return out, nil
}
