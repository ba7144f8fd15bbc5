package agent

import (
	"context"
	"encoding/json"

	"github.com/stepline/stepline/shared/llmoutput"
)

// Model is a chat model with native tool calling, one call per Turn
// (package executor implements it for OpenAI-compatible gateways, the
// Anthropic Messages API, Bedrock Converse and scripted replies).
type Model interface {
	// Turn sends the conversation, with the tools the model may call,
	// and returns its reply: text, tool calls or both. Failures are typed
	// with package fault, as llmoutput.Provider's are; a reply that is
	// merely not a valid answer is a ModelReply.
	Turn(ctx context.Context, req ModelRequest) (ModelReply, error)
}

// Roles of a conversation's messages. Tool results travel in a user
// message (Anthropic and Bedrock place them there; the OpenAI wire format
// sends one "tool" message per result instead, which the gateway executor
// writes out).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ModelRequest is one model call of the loop.
type ModelRequest struct {
	System   string                // the profile's soul and the answer's instruction
	Messages []Message             // the conversation so far, oldest first
	Tools    []ToolSpec            // the tools the model may call, by their wire names
	Schema   *llmoutput.SchemaSpec // the final answer's schema, for providers that can take it alongside tools
	// MaxTokens and Temperature are the profile's (0 and nil: the
	// executor's own defaults); ThinkingLevel is Resolved.ThinkingLevel
	// ("" or "off": none).
	MaxTokens     int
	Temperature   *float64
	ThinkingLevel string
}

// Message is one turn of the conversation.
type Message struct {
	Role    string       `json:"role"`
	Text    string       `json:"text,omitempty"`
	Calls   []ToolCall   `json:"tool_calls,omitempty"`   // an assistant turn's tool calls
	Results []ToolResult `json:"tool_results,omitempty"` // a user turn answering the calls before it
	// Native is an assistant turn as its provider wrote it (Anthropic's
	// content blocks, Bedrock's), sent back verbatim to the same provider
	// so that what only it reads (thinking blocks and their signatures)
	// survives; NativeFormat names the provider ("anthropic", "bedrock").
	// Another provider (a fallback model) reads Text and Calls.
	Native       json.RawMessage `json:"native,omitempty"`
	NativeFormat string          `json:"native_format,omitempty"`
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`      // the wire name the model used
	Arguments json.RawMessage `json:"arguments"` // a JSON object (a JSON string of the model's text when it is not JSON)
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"` // the wire name of the call
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"` // the wire name: server__tool
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"` // a JSON Schema object
}

// ModelReply is a model's answer to one ModelRequest.
type ModelReply struct {
	Text         string
	Calls        []ToolCall
	FinishReason string // llmoutput's Finish constants, or the provider's word
	Refusal      string
	Model        string
	Provider     string
	Usage        llmoutput.Usage
	Raw          json.RawMessage // the response body, for audit
	Native       json.RawMessage // see Message.Native
	NativeFormat string
	// Trace is what a runtime that runs its own tool loop (a remote agent
	// gateway) recorded while answering, in the trace's shape, its
	// iterations counted from 1 within the call; the loop keeps these
	// events in place of its own text event. Nil for a plain model.
	Trace []Event
	// AgentVersion is the version of the agent that answered, when the
	// runtime reports one; the loop keeps it in Conversation.Version.
	AgentVersion string
}
