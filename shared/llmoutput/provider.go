package llmoutput

import (
	"context"
	"encoding/json"
)

// Role is the author of a chat message.
type Role string

// Chat roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of a chat conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Finish reasons, normalised across providers.
const (
	FinishStop          = "stop"           // the model ended its answer
	FinishLength        = "length"         // the answer was cut by a token limit
	FinishContentFilter = "content_filter" // a safety filter stopped the answer
	FinishRefusal       = "refusal"        // the model declined to answer
)

// SchemaSpec describes the JSON answer a provider is asked for. Providers
// that offer native structured output (OpenAI json_schema, Anthropic forced
// tool use, Bedrock tool use) pass it on; the runner validates every answer
// whatever the provider did with it.
type SchemaSpec struct {
	Name        string          // identifier, [a-zA-Z0-9_-]{1,64}
	Description string          // what the answer is for
	JSON        json.RawMessage // the JSON Schema of the answer
}

// Request is one call to a model.
type Request struct {
	Messages []Message
	// Schema is the answer's schema; nil: a plain text answer is
	// expected. Providers read it and never change it: its JSON may be
	// shared with the OutputSchema it came from.
	Schema *SchemaSpec
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Completion is a provider's answer to one Request.
type Completion struct {
	Content      string          // the reply text (for tool-use answers: the tool input as JSON text)
	FinishReason string          // one of the Finish constants, or the provider's own word
	Refusal      string          // the provider's refusal text, when it gave one separately
	Model        string          // the model that answered, as the provider reports it
	Provider     string          // e.g. "openai", "anthropic", "bedrock"
	Usage        Usage           // tokens of this call
	Raw          json.RawMessage // the response body, for audit
}

// Provider is a model behind some API. Complete returns a transport or API
// failure as an error (typed with package fault); an answer that is merely
// invalid is a Completion, and judging it is the runner's job.
type Provider interface {
	Complete(ctx context.Context, req Request) (Completion, error)
}
