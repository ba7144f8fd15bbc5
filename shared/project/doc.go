// Package project reads a Stepline project file, stepline.yaml: what the
// pipelines of one repository share. The CLI finds it by walking up from
// a pipeline file (Find, ForFile) unless --config names it; the CDK app
// reads the same file.
//
// Every key is optional, and a project without the file works as
// Stepline did before projects (no agents):
//
//	pipelines    directory of pipeline files     default pipelines/ beside the file
//	agents       directory of agent profiles     default agents/
//	steps        directory of library steps      default steps/
//	providers    model providers for "<provider>/<model>"
//	mcp_servers  the MCP servers agents' tools name
//	tool_policy  decides every tool call
//	executors    executor defaults
//	notifications  defaults of notification channels (telegram)
//	human_approval chat channels approval requests go to, by team
//
// Relative directories are from the file's directory.
//
// providers changes the built-in providers (package agent's
// BuiltinProviders: anthropic and openai, openrouter, ollama take base_url
// and api_key, bedrock takes region) and adds others: any other name
// (lowercase, not "gateway", which names the models a gateway step carries
// without a provider) is an OpenAI-compatible endpoint at its base_url,
// which it must give. An api_key is one ${NAME} secret reference, never a
// key written out: it travels in the compiled state machine and is
// resolved where the step runs.
//
// mcp_servers declares each server once, as the reference gateway's
// config.yaml does: streamable HTTP with url and headers (values may hold
// ${NAME} references; a credential-looking header written out is a
// warning), or stdio with command, args and env, which only local runs can
// start (the CDK app refuses a pipeline whose agent needs one).
//
// tool_policy is the reference gateway's: default allow (the default) or
// deny, and ordered rules, each {allow: {match}} or {deny: {match},
// reason}, where match holds server (a name), tool and agent (globs) and
// input_regex (RE2, searched in the call's JSON arguments as the model
// sent them; the reference searches Python's json.dumps of them, so a
// pattern that spells out ": " spacing may differ); an empty match
// matches every call. The first rule that matches decides. A deny needs
// a reason; require_approval is refused, as the reference refuses it.
// Rules that can never decide are warnings: one naming an undeclared
// server, one after a rule that matches every call.
//
// executors.openai (base_url, api_key) places the gateway steps that set
// neither: the compiler writes the values into their executor_config, so
// they call the same endpoint locally and on AWS.
//
// executors.gateway (url: ws(s)://…/rpc, token: one ${NAME}) names a
// remote agent gateway, and executors.openclaw (url, identity) an
// OpenClaw gateway; agent steps run there (see package executor for the
// protocols). One rule places an agent step (Runtime): a profile in the
// agents directory wins, and the step runs in-process; a gateway step
// naming an agent the project has no profile of runs on the remote
// gateway when executors.gateway.url is set (else its agent is unknown);
// an openclaw step always runs on the OpenClaw gateway, and without
// executors.openclaw.url it compiles with a warning and fails with a
// ConfigError naming the setting. A remote agent step resolves to the
// agent's name and the runtime's place (agent.Resolved.Remote: the URL,
// the token's reference, the identity); its executor_config takes
// agent, session_key (Liquid, {{agent}} standing for the agent; default
// DefaultSessionKey; it must start with "agent:<agent>:" as written),
// model (written out), thinking_level, and on the remote gateway
// trace_max_chars (1..1000000); other keys are warnings. identity is the
// directory holding OpenClaw's device.json and device-auth.json that
// local runs read (relative to this file's directory, ~ for the home
// directory; default ~/.openclaw/identity); where no directory is read
// (the step function on AWS) the same two files are the secrets
// OPENCLAW_DEVICE and OPENCLAW_DEVICE_AUTH.
//
// notifications.telegram (bot_token: one ${NAME}, chat_id: a number or
// @channelname) is the bot and chat of a pipeline's `channel: telegram`
// notifications that name neither, and notifications.telegram.teams.<team>
// {chat_id, bot_token (optional)} the chat of a team's runs: the compiler
// writes them into the pipeline, so they travel with it (references only)
// wherever it runs.
//
// human_approval routes approval requests as the reference does: the
// run's team's channel under teams.<team>, else default, else
// notifications.telegram's chat (ApprovalRoutes). A channel is
// {channel: telegram|slack|msteams} with its block: telegram {bot_token,
// chat_id, webhook_secret}, slack {bot_token, signing_secret, channel_id},
// msteams {webhook_url}. Tokens and secrets are ${NAME} references
// (package approval resolves and uses them); a Teams webhook URL written
// out is a warning. The reference's keys Stepline does not use
// (ui_base_url, slack.app_token, notifications.telegram.team) are errors
// saying what stands in for them. Channels that share a Telegram bot must
// share its webhook_secret.
//
// The steps directory is the step library: each *.yaml or *.yml file in
// it (not hidden, not starting with _) holds one step that pipelines name
// with use: (package compiler reads and checks them; see its
// documentation). Load reads the files as they are, at most
// MaxStepFiles of at most MaxStepFileBytes each; a missing directory is
// an empty library (a warning when stepline.yaml names it).
//
// Load reads the file and the profiles in the agents directory, and
// checks each profile against the project (agent.CheckProfile). Every
// problem, of the file or of a profile, is a positioned Diagnostic in
// Project.Diagnostics; the compiler makes them every pipeline's, so a
// project with an error compiles no pipeline. Bounds: the file is at
// most 1 MiB (and yamldoc's node and depth bounds), with at most 100 MCP
// servers, 100 providers, 1,000 rules, 100 arguments or headers per
// server, and regexes of at most 1,000 characters.
//
// Resolve turns an agent step's executor_config into the agent.Resolved
// the step carries: the profile, the step's model and thinking level
// overrides, the models resolved to their endpoints, the servers the
// profile's tools name, and the policy's rules that can decide its calls
// (the rest never match them). A model is open when written without a
// provider ("claude-sonnet-4-6", a Bedrock ARN): the step's executor then
// carries it, so an open model is what lets the executor choose the
// transport. A gateway step calls it at its base_url and api_key, else
// executors.openai's, else where a gateway step without them calls
// (OPENAI_BASE_URL, OPENAI_API_KEY when set); an anthropic step with its
// own base_url and api_key, else providers.anthropic's; a bedrock step in
// providers.bedrock's region, else the region it runs in. A model that
// names its provider goes to that provider whatever the executor.
package project
