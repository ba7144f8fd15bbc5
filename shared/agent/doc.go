// Package agent is Stepline's agent runtime: named profiles (model,
// system prompt, MCP tools, limits) that a step runs as a tool loop.
package agent
