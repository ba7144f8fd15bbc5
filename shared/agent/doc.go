// Package agent is Stepline's agent runtime: named profiles (model,
// system prompt, MCP tools, limits) that a step runs as a tool loop.
//
// # Profiles
//
// A profile is a directory agents/<name>/ (the project's agents
// directory, see package project) holding agent.yaml and soul.md, laid
// out as the reference gateway lays them out, so its agents copy over.
// soul.md is the system prompt (UTF-8, at most 64 KiB; an empty file is
// allowed, a missing one is an error). agent.yaml (at most 64 KiB, read
// with package yamldoc's bounds) holds:
//
//	name                         required; the directory's name
//	description                  text
//	model                        required; "<provider>/<model>", or a model alone
//	model_fallbacks              up to 10 models, tried in order after model
//	max_tokens                   1..1000000
//	temperature                  0..2 (0..1 for the anthropic and bedrock APIs)
//	thinking_level               off, minimal, low, medium, high, xhigh
//	tools                        MCP server names, or {server: [tool globs]}
//	max_iterations               1..1000, default 20 model calls
//	tool_timeout_seconds         1..900, default 30 per tool call
//	trace_tool_result_max_chars  1..1000000, default 3000 characters of a
//	                             tool result kept in the step's trace
//
// Any other key is an error (with the key it was likely meant to be),
// and so is a value of the wrong type or outside its range; an optional
// key written empty keeps its default. LoadProfiles and LoadProfile read
// profiles and ParseProfile checks what the files alone decide, each
// problem a Diagnostic at file:line:col; CheckProfile checks a profile
// against its project: that each model's provider is known (and that
// temperature fits its API), that each granted server is declared, and
// warns about a grant the tool policy never lets a call through.
//
// A model string's provider is the part before its first slash when that
// part is a provider name: one of BuiltinProviders (anthropic, bedrock,
// openai, openrouter, ollama) or one the project declares (any other
// name, an OpenAI-compatible endpoint). A model written without one
// (gpt-4o-mini, or a Bedrock ARN) is open: the step's executor (gateway,
// anthropic or bedrock) carries it. Providers.Resolve turns a model
// string into the Endpoint a step calls.
//
// A profile's Version is the first 12 hexadecimal digits of the SHA-256
// of its two files' exact bytes, each framed by its name and length (see
// Version): any edit, a comment included, makes a new version.
//
// # The tool policy
//
// Policy.Decide applies the project's tool_policy to a call: the first
// rule whose server (exact), tool and agent (globs, see MatchGlob) and
// input_regex (RE2, searched in the call's JSON arguments) all match
// decides, else the default. Arguments over MaxPolicyInputBytes are not
// searched and the decision fails closed: a deny rule with an
// input_regex denies such a call, an allow rule with one does not allow
// it. Policy.MayAllow answers whether any call could be allowed, for the
// project's warnings.
package agent
