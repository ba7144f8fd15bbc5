// Package spec is the agent configuration a compiled agent step carries
// (Resolved: the profile, the MCP servers its tools name, the tool policy
// and the models to call) and the tool policy's decisions (Policy.Decide,
// MatchGlob). It is the data alone, without package agent's loaders and
// tool loop, so that the pipeline model (package shared/pipeline), and
// every Lambda function that reads it, does not link the YAML parser or
// the loop's dependencies: each package linked runs its initialisers at
// every cold start.
//
// Package agent declares each of these types and constants again under
// the same name, as aliases, and documents the profiles and the policy.
package spec
