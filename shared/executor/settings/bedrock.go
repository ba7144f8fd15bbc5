package settings

// BedrockConfig is a bedrock step's executor_config, read.
type BedrockConfig struct {
	Model       string
	MaxTokens   int64
	Temperature *float64
	TopP        *float64
	System      string
	ToolUse     bool
	Additional  map[string]any
}

// ReadBedrock reads a bedrock executor_config; its issues are r's.
func ReadBedrock(r *Reader) BedrockConfig {
	var c BedrockConfig
	c.Model = r.str("model", true)
	c.MaxTokens, _ = r.integer("max_tokens", 1)
	if t, ok := r.num("temperature", 0, 1); ok {
		c.Temperature = &t
	}
	if t, ok := r.num("top_p", 0, 1); ok {
		c.TopP = &t
	}
	c.System = r.str("system", false)
	c.ToolUse = r.boolean("tool_use", true)
	c.Additional = r.object("additional_model_request_fields")
	r.Seconds("timeout_seconds")
	return c
}
