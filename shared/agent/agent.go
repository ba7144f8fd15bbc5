package agent

// Defaults of a profile's limits (agent.yaml leaves them out).
const (
	DefaultMaxIterations           = 20
	DefaultToolTimeoutSeconds      = 30
	DefaultTraceToolResultMaxChars = 3000
)

// Thinking levels a profile or a step may name.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// Profile is one agent: agents/<name>/agent.yaml with its system prompt,
// agents/<name>/soul.md.
type Profile struct {
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	Model          string   `json:"model"` // provider/model, e.g. "anthropic/claude-sonnet-4-5"
	ModelFallbacks []string `json:"model_fallbacks,omitempty"`
	MaxTokens      int      `json:"max_tokens,omitempty"`
	Temperature    *float64 `json:"temperature,omitempty"`
	ThinkingLevel  string   `json:"thinking_level,omitempty"`
	// Tools grants MCP tools: a server name alone grants all its tools,
	// a server with globs grants the tools they match.
	Tools []ToolGrant `json:"tools,omitempty"`
	// Limits. Zero: the defaults above.
	MaxIterations           int `json:"max_iterations,omitempty"`
	ToolTimeoutSeconds      int `json:"tool_timeout_seconds,omitempty"`
	TraceToolResultMaxChars int `json:"trace_tool_result_max_chars,omitempty"`
	// Soul is the system prompt (soul.md).
	Soul string `json:"soul"`
	// Version is the content hash of the profile's files.
	Version string `json:"version"`
}

// ToolGrant is one entry of a profile's tools.
type ToolGrant struct {
	Server string   `json:"server"`
	Tools  []string `json:"tools,omitempty"` // globs; empty: every tool of the server
}

// Server is an MCP server declared in stepline.yaml.
type Server struct {
	Name string `json:"name"`
	// Streamable HTTP (everywhere): URL and headers (${SECRET} allowed).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// stdio (local runs only): a command, its arguments and environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Policy decides every tool call: the first rule that matches wins, else
// Default.
type Policy struct {
	Default string `json:"default"` // allow | deny
	Rules   []Rule `json:"rules,omitempty"`
}

// Rule is one tool-policy rule. Empty match fields match anything.
type Rule struct {
	Effect     string `json:"effect"`                // allow | deny
	Server     string `json:"server,omitempty"`      // server name
	Tool       string `json:"tool,omitempty"`        // glob over tool names
	Agent      string `json:"agent,omitempty"`       // glob over agent names
	InputRegex string `json:"input_regex,omitempty"` // RE2 over the call's JSON arguments
	Reason     string `json:"reason,omitempty"`      // told to the model and recorded when denied
}

// Resolved is what an agent step carries in its compiled configuration:
// the profile, the MCP servers its tools name, and the tool policy. The
// compiler resolves it from the project; the step runtime runs it.
type Resolved struct {
	Profile Profile           `json:"profile"`
	Servers map[string]Server `json:"servers,omitempty"`
	Policy  Policy            `json:"policy"`
}
