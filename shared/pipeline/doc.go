// Package pipeline is the model of a Stepline pipeline: what the compiler
// produces from YAML and what the runtime reads.
//
// Every node carries the source position it came from, so that checks made
// after parsing can still point at the line and column of the problem.
// Defaults from the pipeline format are applied while parsing: a Step whose
// YAML omits confidence_threshold holds DefaultConfidenceThreshold, and a
// node's Fields map says which fields the author wrote.
//
// Numbers in a model the compiler built lie within the ranges its package
// documentation lists (retry attempts 1..100, timeouts 1..99999999 s, dedup
// windows and resume ages at most a year, confidences 0..1, …) and are
// finite: the parser refuses any other value rather than clamping it, so
// the runtime can turn seconds into a time.Duration without overflow.
//
// A Step, Branch or FanOut whose executor_config names an agent carries
// it resolved in Agent (package agent's Resolved: the profile, its models'
// endpoints, MCP servers and tool policy), filled by the compiler from the
// pipeline's project; the runtime reads it from the step's compiled
// configuration, never from the project's files. A Step's Grounding
// carries its judge agent resolved the same way (Grounding.Judge), and
// its deterministic checks (Checks) their expect: expressions with the
// kind's default filled in.
package pipeline
