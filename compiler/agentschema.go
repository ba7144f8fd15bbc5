package compiler

import _ "embed"

//go:embed schema/agent.schema.json
var agentSchemaJSON []byte

// AgentSchema returns the JSON Schema (draft-07) of an agent profile,
// agents/<name>/agent.yaml, for editors (yaml-language-server) and
// `stepline schema agent`. Package agent's loader checks the same rules
// and more (a glob's syntax, the name against its directory, the
// project's providers and servers); a test holds the two together.
func AgentSchema() []byte { return agentSchemaJSON }
