package spec

// Defaults of a profile's limits (agent.yaml leaves them out).
const (
	DefaultMaxIterations           = 20
	DefaultToolTimeoutSeconds      = 30
	DefaultTraceToolResultMaxChars = 3000
)

// ThinkingLevels returns the thinking levels a profile or a step may name.
func ThinkingLevels() []string {
	return []string{"off", "minimal", "low", "medium", "high", "xhigh"}
}

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
	InputRegex string `json:"input_regex,omitempty"` // RE2 over the call's JSON arguments (canonical: see package agent)
	Reason     string `json:"reason,omitempty"`      // told to the model and recorded when denied
}

// Resolved is what an agent step carries in its compiled configuration:
// the profile, the MCP servers its tools name, and the tool policy. The
// compiler resolves it from the project; the step runtime runs it.
//
// Profile is the profile as its files define it (Version is their hash).
// A step may override its model and thinking level: the runtime reads
// what to call from Models and ThinkingLevel, which hold the step's
// values, not from Profile.Model and Profile.ThinkingLevel.
type Resolved struct {
	Profile Profile           `json:"profile"`
	Servers map[string]Server `json:"servers,omitempty"`
	Policy  Policy            `json:"policy"`
	// Models are the models to call, each resolved to its API, in the
	// order to try them: the model (the step's executor_config.model when
	// it sets one, else the profile's), then the profile's fallbacks.
	Models []Endpoint `json:"models,omitempty"`
	// ThinkingLevel is the level to ask for: the step's
	// executor_config.thinking_level, else the profile's; "" for none.
	ThinkingLevel string `json:"thinking_level,omitempty"`
	// Remote is set when the agent runs on a remote agent runtime (an
	// OpenClaw gateway, a remote agent gateway) instead of in-process:
	// Profile then holds only the agent's name, and the runtime's own
	// profile decides its model, tools and limits.
	Remote *Remote `json:"remote,omitempty"`
}

// Remote runtimes an agent step may run on.
const (
	RuntimeOpenClaw = "openclaw" // an OpenClaw Gateway (WebSocket, Ed25519 device signature)
	RuntimeGateway  = "gateway"  // a remote agent gateway (the reference gateway's WebSocket protocol)
)

// Remote is where a remote agent runs, as stepline.yaml's executors
// section places it. Secrets are ${NAME} references, resolved where the
// step runs.
type Remote struct {
	Runtime string `json:"runtime"`       // RuntimeOpenClaw or RuntimeGateway
	URL     string `json:"url,omitempty"` // ws(s) or http(s) URL; "" when the project configures none
	// Token is the remote gateway's operator token (RuntimeGateway).
	Token string `json:"token,omitempty"`
	// Identity is the directory holding the OpenClaw device identity
	// (device.json, device-auth.json) that local runs read;
	// Device and DeviceAuth are the same two files as secrets, read where
	// no directory is (on AWS).
	Identity   string `json:"identity,omitempty"`
	Device     string `json:"device,omitempty"`
	DeviceAuth string `json:"device_auth,omitempty"`
}

// APIs an agent's models are called through: the wire formats of
// Stepline's model executors, each with its native tool calling.
const (
	APIGateway   = "gateway"   // OpenAI-compatible chat completions: tools, tool_calls
	APIAnthropic = "anthropic" // Anthropic Messages: tool_use, tool_result
	APIBedrock   = "bedrock"   // Amazon Bedrock Converse: toolConfig
)

// Provider is where the models written "<provider>/<model>" are called:
// one of BuiltinProviders, or one declared under providers: in
// stepline.yaml (any other name is an OpenAI-compatible endpoint at its
// base_url).
type Provider struct {
	API     string `json:"api"`                // APIGateway, APIAnthropic or APIBedrock
	BaseURL string `json:"base_url,omitempty"` // "": the API's default
	APIKey  string `json:"api_key,omitempty"`  // a ${NAME} secret reference, or "" for none
	Region  string `json:"region,omitempty"`   // bedrock: "" is the region the step runs in
}

// Endpoint is one model an agent step calls, resolved by the compiler.
type Endpoint struct {
	// Provider is the provider the model string named, or, for a model
	// written without one, the step's executor (gateway, anthropic or
	// bedrock), whose transport then carries it.
	Provider string `json:"provider"`
	API      string `json:"api"`   // APIGateway, APIAnthropic or APIBedrock
	Model    string `json:"model"` // the model id the API takes (after "<provider>/")
	// BaseURL is where to call; "" means the API's default where the step
	// runs: a gateway step's OPENAI_BASE_URL, Anthropic's public API.
	BaseURL string `json:"base_url,omitempty"`
	// APIKey is a ${NAME} secret reference, resolved where the step runs
	// like any other; "" sends none, except that an APIGateway endpoint of
	// provider "gateway" sends OPENAI_API_KEY when it is set, as a gateway
	// step does.
	APIKey string `json:"api_key,omitempty"`
	Region string `json:"region,omitempty"` // bedrock: "" is the step's own region
}

// Grants reports whether the profile's tools grant tool of server: the
// server is listed alone, or with a glob that matches the tool.
func (p Profile) Grants(server, tool string) bool {
	for _, g := range p.Tools {
		if g.Server != server {
			continue
		}
		if len(g.Tools) == 0 {
			return true
		}
		for _, glob := range g.Tools {
			if MatchGlob(glob, tool) {
				return true
			}
		}
	}
	return false
}

// IsStdio reports whether the server runs as a local process (command),
// which only local runs can start.
func (s Server) IsStdio() bool { return s.Command != "" }
