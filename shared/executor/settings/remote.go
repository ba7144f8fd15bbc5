package settings

import (
	"strings"

	"github.com/stepline/stepline/shared/agent"
)

// RemoteConfig is a remote agent step's executor_config.
type RemoteConfig struct {
	Agent, SessionKey, Model, ThinkingLevel string
	TraceMax                                int
}

// ReadRemote reads a remote agent step's executor_config (runtime
// agent.RuntimeOpenClaw or agent.RuntimeGateway).
func ReadRemote(runtime string, cfg map[string]any, m Mode) (RemoteConfig, []*ConfigIssue) {
	r := NewReader(cfg, m)
	var c RemoteConfig
	c.Agent = r.str("agent", true)
	c.SessionKey = r.str("session_key", false)
	c.Model = strings.TrimSpace(r.str("model", false))
	c.ThinkingLevel = r.oneOf("thinking_level", agent.ThinkingLevels()...)
	if runtime == agent.RuntimeGateway {
		if n, ok := r.integer("trace_max_chars", 1); ok {
			if n > 1000000 {
				r.fail("trace_max_chars", "must be between 1 and 1000000, got %d", n)
			} else {
				c.TraceMax = int(n)
			}
		}
	}
	return c, r.Done()
}
