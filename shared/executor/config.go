package executor

import "github.com/stepline/stepline/shared/executor/settings"

// ConfigIssue is one problem in an executor_config (see package
// settings, which reads and checks them). Key is the offending key (""
// for the config as a whole), so the compiler can point at it. Warnings
// (unknown keys, a value left to where the step runs) do not stop a
// pipeline from compiling or running.
type ConfigIssue = settings.ConfigIssue

// Defaults are the values an executor_config falls back on that come from
// where a pipeline runs rather than from its file (see settings.Defaults).
// Libraries do not read the environment: main does (DefaultsFromEnv) and
// passes them in, to the Registry (Deps.Defaults) and to the checks
// (Defaults.CheckConfig).
type Defaults = settings.Defaults

// Environment variables DefaultsFromEnv reads, and the secret a gateway
// step without api_key sends (resolved like any ${NAME}).
const (
	EnvOpenAIBaseURL   = settings.EnvOpenAIBaseURL
	OpenAIAPIKeySecret = settings.OpenAIAPIKeySecret
)

// The anthropic executor's defaults.
const (
	AnthropicBaseURL   = settings.AnthropicBaseURL
	AnthropicVersion   = settings.AnthropicVersion
	AnthropicMaxTokens = settings.AnthropicMaxTokens
)

// DefaultsFromEnv reads the Defaults from an environment lookup such as
// os.Getenv.
func DefaultsFromEnv(getenv func(string) string) Defaults { return settings.DefaultsFromEnv(getenv) }

// CheckConfig is Defaults.CheckConfig where no default is known.
func CheckConfig(executor string, cfg map[string]any) []error {
	return settings.CheckConfig(executor, cfg)
}

// Names returns every executor name a pipeline may use, sorted. Some of
// them have no Provider: human and pipeline are run by the state machine,
// openclaw runs an agent (Registry.Agent).
func Names() []string { return settings.Names() }

// Known reports whether name is an executor a pipeline may use.
func Known(name string) bool { return settings.Known(name) }
