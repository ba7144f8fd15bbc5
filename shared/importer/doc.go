// Package importer converts a project of the reference system
// (VectorStep: a directory holding config.yaml, its pipelines and its
// step library) into a Stepline project. The CLI runs it as
// "stepline import vectorstep SRC DEST" and then validates every
// pipeline it wrote through the one compile path (compiler/gate).
//
// # What it writes
//
//	DEST/stepline.yaml        pipelines, steps, executors.gateway {url, token},
//	                          executors.openclaw {url, identity},
//	                          notifications.telegram, human_approval from config.yaml
//	DEST/pipelines/*.yaml     each pipeline of pipeline_config_dir, converted
//	DEST/steps/*.yaml         each library step of step_library_dir, converted
//	DEST/tokens.yaml          auth.teams / auth.token, for stepline serve --tokens
//	DEST/prices.yaml          pricing.models, as a Stepline price table (the step
//	                          function's PRICE_TABLE names such a file)
//	DEST/.stepline-import.json  the files written and their SHA-256
//
// A string the reference's Pydantic read as a number or a boolean (lax
// mode: "0.7", "3", "3.0", "yes"; its YAML 1.1 reader also took a plain
// yes or on as a boolean), written where Stepline's pipeline JSON Schema
// wants a number, a whole number or a boolean and no string, is written
// as that value with a note (coerce.go). Free maps (vars,
// executor_config, headers, trigger.match) are not entered.
//
// Secrets stay ${NAME} references and are never resolved. An OpenClaw
// identity_dir written as a ${NAME} (the reference read a whole-value one
// from the environment) needs a person and is left out: Stepline's
// identity is a path. stepline.yaml names the steps directory only when
// library steps are written. A secret that
// config.yaml writes out is not copied: the output names a reference
// (TELEGRAM_BOT_TOKEN, AGENT_GATEWAY_TOKEN, STEPLINE_TOKEN_<TEAM>) and a
// note asks a person to store the value under it.
//
// A Telegram notification of a pipeline becomes a notice with channel
// telegram whose config holds config.yaml's bot_token reference and
// chat_id. While Stepline's pipeline schema does not list that channel
// (TelegramAccepted reads it), each such notice is also a note that needs
// a person, and validate refuses the pipeline there.
//
// config.yaml's human_approval becomes stepline.yaml's human_approval
// with the same routing: default and teams.<team>, channels telegram
// {bot_token, chat_id} (a block that leaves them out takes
// notifications.telegram's, as the reference does), msteams
// {webhook_url} and slack {bot_token, channel_id}. The reference has no
// Telegram webhook secret, so none is written and stepline serve
// long-polls the bot for button presses. Slack in the reference uses
// Socket Mode (app_token), which Stepline does not: the slack channel
// gets signing_secret ${SLACK_SIGNING_SECRET} and a note that needs a
// person (store the secret, set the app's request URL). A channel
// Stepline cannot send as written (unknown kind, missing fields, a chat
// ID, Slack channel ID or team name Stepline does not accept) is left out
// with a note that needs a person, so stepline.yaml always reads back.
// notifications.telegram {bot_token, chat_id} is written to stepline.yaml
// too (when its chat_id is one Stepline accepts); without a human_approval default, Stepline, as
// the reference, sends approval requests there. No pipeline gets an
// approval notification action of its own: the routes already send every
// approval request, by the run's team, and an action would send a second.
//
// # Idempotence and overwriting
//
// Output is deterministic (no times, no absolute paths), so importing the
// same SRC twice gives the same DEST. A file in DEST is overwritten only
// when the manifest lists it with the digest it has now: the importer's
// own, unchanged output. Any other file it would write (one a person
// wrote or edited) makes the import refuse before writing anything
// (ConflictError), unless Options.Force. Files of an earlier import that
// the source no longer produces are removed when unchanged.
//
// # Templates: Jinja2 to Liquid
//
// Converted with the same meaning: x | default(v, true), is none / is
// not none, a if c else b (an if block), arithmetic with a number literal
// (+ - * as plus, minus, times), loop.index, index0, revindex(0), first,
// last, length inside for (forloop.*), ~ (separate outputs, or append
// inside a value), and/or with Jinja's precedence kept by parentheses,
// not pushed down to the comparisons, x in [a, b], x in y (contains),
// elif, for, set (assign, or capture for a block), raw, comments, the
// filters upper, lower, length/count, first, last, trim, abs, sort,
// unique, reverse, escape, join, replace, and safe (dropped: the
// reference does not autoescape).
//
// Converted with a stated difference (a "check" note): round (Liquid
// rounds halves away from zero and prints 2 for 2.0), default(v) (Liquid
// also replaces nil, false and ""), is defined (a key holding null reads
// as undefined), a bare value tested for truth and not x (Liquid holds "",
// 0 and [] true), / (divided_by a float; 3 for 3.0), tojson (json, without
// Jinja's HTML escapes), and context.X, which the reference's documentation
// writes but its runtime never defines (it failed there): it is read as
// Stepline's X and X is added to context_template.include. Everywhere,
// None renders as "" in Liquid ("None" in Jinja), and Jinja drops one
// trailing newline of a template where Liquid keeps it.
//
// Not converted: other filters and tests, calls, //, %, **, filtered
// sequences in for, loop.cycle and the like, _testing, macros, include,
// import, extends, blocks, with, filter, call, strings holding template
// delimiters, steps.X of a step that does not run before (the reference
// fails rendering it), and anything nested deeper than MaxExprDepth. Each is a note
// that needs a person, at the file, line and column of the source, with
// the original text; the converted template keeps it visibly as
// {% vectorstep_unconverted %} followed by the original text with its
// delimiters spaced apart ("{ { x | title } }"). No engine defines that
// tag, so stepline validate refuses the template there until a person
// rewrites it: nothing unconverted runs silently. The output never holds
// an include or render tag.
//
// # when:, over: and expect:
//
// Stepline's when: language is Jinja's boolean expressions, so a
// condition is kept as written once compiler/when parses it and every
// name it reads exists where it is written (steps that run before, vars,
// labels, the context_template.include names); context.X is rewritten as
// in templates; a fan_out's over: loses {{ }} and a trailing tojson or
// list filter. An over: that reads a var, a label or a trigger text field
// needs a person: the reference parsed the rendered text as a list, and in
// Stepline those names hold text, which validate refuses to fan out over. Anything else — filters, {{ }} around a condition (an
// error in the reference, which therefore always skipped the step),
// names the reference reads as undefined, steps that run later — is kept
// as written, so validate refuses it at the same place, and is a note
// that needs a person.
//
// A negated test (!=, not in, not, is not defined) over a step that may
// have been skipped is converted with a note: where that step was
// skipped, the reference raised and skipped this step, while Stepline
// reads the missing value and the test is true.
//
// A library step's conditions are checked where it is used: a pipeline
// that uses it must define the names its when: reads, and includes the
// context names its converted templates read (context.X).
//
// # Fields
//
// YAML anchors, aliases and merge keys are expanded first, so that each
// place converts on its own, and a key written twice in one mapping keeps
// its last value, once, as the reference's YAML loader read it (a check
// note; Stepline refuses the repetition). A file of two YAML documents,
// which the reference refused, is not imported. Which fields Stepline takes is read from
// its pipeline JSON Schema (Options.Schema; the CLI gives package
// compiler's), so a field Stepline gains is kept from then on; without a
// schema, the fields this package was written against. Fields Stepline
// has no place for are dropped with a note and a YAML comment where they
// were: at the time of writing readiness, calibration,
// include_approx_cost, a verifier's max_trace_chars, and unknown keys
// (the reference ignores them). Where steps take calibration,
// config.yaml's calibration n_min and bin_width are written into every
// calibration block that sets none. A verifier that runs an agent needs
// a person (a Stepline verifier is one model call). A webhook step whose
// prompt_template is a JSON object with every template inside a string
// becomes executor_config.payload, the same body encoded after
// rendering, so that a value holding a quote stays one string; each "$"
// in it is written "$$", since the reference never resolved a ${NAME} in
// a body and Stepline resolves a payload's. Of
// config.yaml, server, database, logging, dedup, concurrency,
// observability, calibration (but see above), durability, replay,
// team_budgets, live_pricing, artifacts, executors.gateway.rest_url,
// human_approval.ui_base_url and notifications.telegram.team are dropped
// with a note saying where Stepline keeps the equivalent.
//
// # Bounds
//
// Options.Limits bound the source, by default: config.yaml within
// MaxConfigBytes; each pipeline and library step file within MaxFileBytes
// and yamldoc's node, depth and alias bounds; at most MaxFiles files and
// MaxTotalBytes together. Template and condition conversion is linear in
// the text, and an expression nests at most MaxExprDepth deep.
package importer
