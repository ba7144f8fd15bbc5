package agent

import (
	"encoding/json"
	"unicode/utf8"
)

// Trace event types: the shape a grounding judge reads. Stable: new
// fields may be added, none renamed or removed.
const (
	EventText       = "text"        // text the model wrote (with tool calls, or its final answer)
	EventToolCall   = "tool_call"   // a call the model asked for
	EventToolResult = "tool_result" // what the tool answered (also errors, timeouts, unknown tools)
	EventToolDenied = "tool_denied" // the policy refused the call; nothing ran, no tool_result follows
)

// Event is one entry of an agent step's trace. Events are in the order
// they happened; Iteration is the model call (1-based) an event belongs
// to; a tool_call and the tool_result or tool_denied answering it share
// ID.
type Event struct {
	Type      string          `json:"type"`
	Iteration int             `json:"iteration"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`      // tool events: "server.tool"
	Arguments json.RawMessage `json:"arguments,omitempty"` // tool_call: the arguments (a JSON string of the first characters when cut)
	Content   string          `json:"content,omitempty"`   // text; tool_result: the output, cut to the trace cap
	IsError   bool            `json:"is_error,omitempty"`  // tool_result: the tool failed, timed out or is unknown
	Truncated bool            `json:"truncated,omitempty"` // Content or Arguments was cut to the trace cap
	Chars     int             `json:"chars,omitempty"`     // when Truncated: the full length, in characters
	Reason    string          `json:"reason,omitempty"`    // tool_denied: the policy's reason
}

// cutChars returns s cut to at most n characters, whether it was cut, and
// its length in characters.
func cutChars(s string, n int) (string, bool, int) {
	if len(s) <= n { // bytes ≥ characters
		return s, false, utf8.RuneCountInString(s)
	}
	chars := utf8.RuneCountInString(s)
	if chars <= n {
		return s, false, chars
	}
	i, c := 0, 0
	for i < len(s) && c < n {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		c++
	}
	return s[:i], true, chars
}

// cutBytes returns s cut to at most n bytes on a character boundary and
// whether it was cut.
func cutBytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}
