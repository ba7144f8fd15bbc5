package settings

import (
	"strconv"
	"strings"
)

// GatewayConfig is a gateway (OpenAI-compatible) step's executor_config,
// read.
type GatewayConfig struct {
	BaseURL             string
	Model               string
	APIKey              string
	APIKeySet           bool // api_key is in the config (else OpenAIAPIKeySecret, when set)
	APIKeyHeader        string
	Provider            string
	Temperature         *float64
	MaxTokens           int64
	MaxCompletionTokens int64
	Structured          string // "json_schema", "json_object", "off", "" (by provider)
	Headers             map[string]string
	ExtraBody           map[string]any
}

// Structured output modes of the gateway executor.
const (
	StructuredSchema = "json_schema"
	StructuredObject = "json_object"
	StructuredOff    = "off"
)

// ReadGateway reads a gateway executor_config, base_url falling back on
// d; its issues are r's.
func ReadGateway(r *Reader, d Defaults) GatewayConfig {
	var c GatewayConfig
	switch {
	case r.Get("base_url") != nil:
		c.BaseURL = r.url("base_url", true)
	case d.OpenAIBaseURL != "" && httpURL(d.OpenAIBaseURL):
		c.BaseURL = strings.TrimSpace(d.OpenAIBaseURL)
	case d.OpenAIBaseURL != "" && r.mode == ModeCompile:
		r.warn("base_url", "not set, and %s is not an absolute http or https URL", EnvOpenAIBaseURL)
	case d.OpenAIBaseURL != "" && r.mode == ModeCall:
		r.fail("base_url", "not set, and %s is not an absolute http or https URL", EnvOpenAIBaseURL)
	case r.mode == ModeCompile:
		r.warn("base_url", "not set, and %s is not set here: the step fails unless %s is set where it runs", EnvOpenAIBaseURL, EnvOpenAIBaseURL)
	case r.mode == ModeCall:
		r.fail("base_url", "required: set it, or %s where the step runs", EnvOpenAIBaseURL)
	}
	c.Model = r.str("model", true)
	c.APIKeySet = r.Get("api_key") != nil
	c.APIKey = r.str("api_key", false)
	if !c.APIKeySet && r.mode == ModeCompile && liquid(r.Config["base_url"]) {
		r.fail("api_key", "required when base_url is a template (write api_key: \"\" to send none): the default ${%s} must not go wherever a rendered URL points", OpenAIAPIKeySecret)
	}
	c.APIKeyHeader = r.str("api_key_header", false)
	if c.APIKeyHeader != "" && !r.pending(c.APIKeyHeader) && !ValidHeaderName(c.APIKeyHeader) {
		r.fail("api_key_header", "%q is not a valid header name", c.APIKeyHeader)
	}
	c.Provider = strings.ToLower(strings.TrimSpace(r.str("provider", false)))
	if t, ok := r.num("temperature", 0, 2); ok {
		c.Temperature = &t
	}
	c.MaxTokens, _ = r.integer("max_tokens", 1)
	c.MaxCompletionTokens, _ = r.integer("max_completion_tokens", 1)
	c.Structured = readStructured(r)
	c.Headers = r.headers("headers")
	c.ExtraBody = r.object("extra_body")
	for _, k := range []string{"model", "messages", "stream", "n"} {
		if _, ok := c.ExtraBody[k]; ok {
			r.fail("extra_body."+k, "is set by the executor and cannot be overridden")
		}
	}
	r.Seconds("timeout_seconds")
	return c
}

// liquid reports whether v is a string holding a Liquid tag or output.
func liquid(v any) bool {
	s, ok := v.(string)
	return ok && (strings.Contains(s, "{{") || strings.Contains(s, "{%"))
}

func readStructured(r *Reader) string {
	v := r.Get("structured_output")
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return StructuredSchema
		}
		return StructuredOff
	case string:
		if r.pending(x) {
			return ""
		}
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			if b {
				return StructuredSchema
			}
			return StructuredOff
		}
	}
	return r.oneOf("structured_output", StructuredSchema, StructuredObject, StructuredOff)
}
