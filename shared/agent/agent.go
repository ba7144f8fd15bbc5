package agent

import "github.com/stepline/stepline/shared/agent/spec"

// The agent configuration a step carries and the tool policy are declared
// in package spec (the data alone, which the pipeline model links without
// the loaders and the loop); these are the same types and values.
type (
	Profile   = spec.Profile
	ToolGrant = spec.ToolGrant
	Server    = spec.Server
	Policy    = spec.Policy
	Rule      = spec.Rule
	Resolved  = spec.Resolved
	Remote    = spec.Remote
	Provider  = spec.Provider
	Endpoint  = spec.Endpoint
)

// Defaults of a profile's limits (agent.yaml leaves them out).
const (
	DefaultMaxIterations           = spec.DefaultMaxIterations
	DefaultToolTimeoutSeconds      = spec.DefaultToolTimeoutSeconds
	DefaultTraceToolResultMaxChars = spec.DefaultTraceToolResultMaxChars
)

// Remote runtimes an agent step may run on.
const (
	RuntimeOpenClaw = spec.RuntimeOpenClaw
	RuntimeGateway  = spec.RuntimeGateway
)

// APIs an agent's models are called through.
const (
	APIGateway   = spec.APIGateway
	APIAnthropic = spec.APIAnthropic
	APIBedrock   = spec.APIBedrock
)

// Tool-policy effects, the bound on the arguments an input_regex reads,
// and the reason of a default denial (see spec.Policy.Decide).
const (
	Allow               = spec.Allow
	Deny                = spec.Deny
	MaxPolicyInputBytes = spec.MaxPolicyInputBytes
	DefaultDenyReason   = spec.DefaultDenyReason
)

// ThinkingLevels returns the thinking levels a profile or a step may name.
func ThinkingLevels() []string { return spec.ThinkingLevels() }

// MatchGlob reports whether name matches the glob pattern (see
// spec.MatchGlob).
func MatchGlob(pattern, name string) bool { return spec.MatchGlob(pattern, name) }

// CheckGlob reports whether pattern is a valid glob (see spec.CheckGlob).
func CheckGlob(pattern string) error { return spec.CheckGlob(pattern) }
