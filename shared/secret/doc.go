// Package secret resolves the ${NAME} references that pipeline files use in
// place of credentials.
//
// A reference may stand for a whole value ("${API_KEY}") or sit inside one
// ("Bearer ${TOKEN}", "https://hooks.example.com/${HOOK_PATH}"). NAME follows
// the shell's rule, [A-Za-z_][A-Za-z0-9_]*; anything else after "${" is left
// as written. "$$" is the escape for a literal "$", so "$${NAME}" is the
// literal text "${NAME}" (and "$$" alone a single "$").
//
// References are resolved at call time, inside the function that makes the
// call, through a [Resolver]: [Env] reads the process environment (local
// runs), [AWS] reads AWS Secrets Manager and SSM Parameter Store with a
// per-container cache (Lambda). Secret values are never compiled into a
// state machine, never logged and never part of an error: a missing secret
// is a *fault.ConfigError that names it, and a [Redactor] scrubs resolved
// values from any message or record that might echo them (a URL in a
// transport error, a server that reflects request headers).
//
// Values rendered from untrusted text (a model's answer, a trigger payload)
// must not be expanded, or a reply saying "${DB_PASSWORD}" would fetch the
// password into an outgoing request. Whoever renders such text into a value
// that is expanded later passes it through [Escape] first.
package secret
