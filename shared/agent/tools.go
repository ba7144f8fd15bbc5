package agent

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// Toolbox lists and calls the MCP tools of the servers an agent's profile
// names. [MCP] is the real one; package executor scripts one for offline
// runs.
type Toolbox interface {
	// Tools lists server's tools. A server that cannot be reached is a
	// *fault.ExecutorUnavailable; a server the toolbox may not start (a
	// stdio server where only HTTP servers run) a *fault.ConfigError.
	Tools(ctx context.Context, server Server) ([]Tool, error)
	// Call runs server's tool with the JSON object args. What the tool
	// answers, also an error it reports and a protocol error about the
	// call (unknown tool, invalid arguments), is a ToolOutput; the error
	// is for a server that cannot be reached (*fault.ExecutorUnavailable)
	// and for ctx ending (its error wrapped).
	Call(ctx context.Context, server Server, tool string, args json.RawMessage) (ToolOutput, error)
}

// Tool is one tool a server offers.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// ToolOutput is what a tool answered, as text.
type ToolOutput struct {
	Content string
	IsError bool
}

// ToolName is a tool the model may call: its server and its name there.
type ToolName struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// String is the qualified name "server.tool" the trace, the policy's
// messages and the responses file use.
func (n ToolName) String() string { return n.Server + "." + n.Tool }

// maxWireName is the longest tool name every provider takes (OpenAI and
// Bedrock: 64 characters of [a-zA-Z0-9_-]).
const maxWireName = 64

// wireName is how the model sees server's tool: "server__tool", as the
// reference gateway names them, with characters the providers refuse
// written "_" and the whole cut to 64 characters. taken holds the names
// given so far; a clash gets a numeric suffix.
func wireName(n ToolName, taken map[string]ToolName) string {
	base := wireSafe(n.Server) + "__" + wireSafe(n.Tool)
	name := base
	if len(name) > maxWireName {
		name = name[:maxWireName]
	}
	for i := 2; ; i++ {
		if _, clash := taken[name]; !clash {
			return name
		}
		suffix := "_" + strconv.Itoa(i)
		name = base
		if len(name)+len(suffix) > maxWireName {
			name = name[:maxWireName-len(suffix)]
		}
		name += suffix
	}
}

func wireSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
