package settings

import "strings"

// Anthropic Messages API defaults.
const (
	AnthropicBaseURL   = "https://api.anthropic.com"
	AnthropicVersion   = "2023-06-01"
	AnthropicMaxTokens = 4096
)

// AnthropicConfig is an anthropic step's executor_config, read (see the
// executor's keys in package executor).
type AnthropicConfig struct {
	APIKey      string
	Model       string
	MaxTokens   int64
	Temperature *float64
	System      string
	ToolUse     bool
	BaseURL     string
	Version     string
	Headers     map[string]string
}

// ReadAnthropic reads an anthropic executor_config; its issues are r's.
func ReadAnthropic(r *Reader) AnthropicConfig {
	c := AnthropicConfig{MaxTokens: AnthropicMaxTokens, BaseURL: AnthropicBaseURL, Version: AnthropicVersion}
	c.APIKey = r.str("api_key", true)
	c.Model = r.str("model", true)
	if n, ok := r.integer("max_tokens", 1); ok {
		c.MaxTokens = n
	}
	if t, ok := r.num("temperature", 0, 1); ok {
		c.Temperature = &t
	}
	c.System = r.str("system", false)
	c.ToolUse = r.boolean("tool_use", true)
	if u := r.url("base_url", false); u != "" {
		c.BaseURL = u
	}
	if v := strings.TrimSpace(r.str("anthropic_version", false)); v != "" {
		c.Version = v
	}
	c.Headers = r.headers("headers")
	r.Seconds("timeout_seconds")
	return c
}
