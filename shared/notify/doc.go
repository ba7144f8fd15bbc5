// Package notify sends a pipeline's notifications: the messages its
// `notifications:` block configures for the actions a run fires.
//
// The runner fires an action when a step ends a run early (see [Action]):
// "escalate" when a step escalated or failed, the step's on_abort name when
// it aborted, "stopped" when it answered proceed: false, and "notify" when
// the budget was exceeded. A [Dispatcher] renders every notification
// configured for the action, in order, with the step's template context
// plus the notification extras (escalation_reason, confidence,
// confidence_threshold, step_summary, contradicts, proceed_reason, …), and
// sends it on its channel:
//
//   - log: a log record at config.level (debug, info, warning (default),
//     warn, error, critical) naming config.logger.
//   - webhook: an HTTP request to config.url with the rendered text as body;
//     config.method (POST), config.headers, config.content_type (default:
//     application/json when the body is JSON, else text/plain),
//     config.timeout_seconds (10).
//   - slack: {"text": rendered} posted to the incoming-webhook config.url.
//   - sns: the rendered text published to config.topic_arn (config.subject,
//     default "Stepline: <pipeline> <action>"), through a [Publisher]; on
//     AWS only.
//   - telegram: the Bot API's sendMessage to config.chat_id (a number, or
//     an @channel name) as the bot of config.bot_token (a ${NAME} secret;
//     the compiler fills both from stepline.yaml's notifications.telegram
//     when the pipeline leaves them out). config.teams.<team> {chat_id,
//     bot_token} sends a run of that team elsewhere (also filled from
//     stepline.yaml's notifications.telegram.teams). The message is Telegram HTML: the
//     template is the author's markup, and every value it pastes is
//     escaped first (package telegram's EscapeData), so event and model
//     text is shown as text and can open no tag or link. The result is
//     made well formed and cut to 4096 characters ("[truncated]"). The bot
//     token is in the Bot API's URL; it is scrubbed from every error.
//   - msteams: {"text": rendered} posted to config.url, a Microsoft Teams
//     incoming webhook or Power Automate workflow URL (write it as a
//     ${NAME} secret: the URL is the credential).
//
// URLs and header values may hold ${NAME} secret references; they are
// resolved at send time, and resolved values are scrubbed from every error
// and log line. Templates never feed secret expansion. A redirect is
// followed only within the request's origin (package
// shared/internal/origin): another host never receives the headers or
// the body.
//
// In stage testing nothing leaves the process: every notification is
// written to the log instead, at its config.level (warning by default, as
// a log notification; `stepline run` shows warnings), and its [Delivery]
// says Muted.
//
// A notification never fails a run: a template that does not render, a
// missing secret, a refused or timed-out request are logged and returned
// (and recorded) as the Delivery's Err. Each delivery is bounded by a
// timeout, 10 seconds by default.
package notify
