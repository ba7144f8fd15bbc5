// Package webui is the browser interface of stepline serve: the runs and
// their steps, the pipelines' state graphs coloured by what happened in a
// run, the approvals waiting across runs, the pipelines and the agents.
//
// It is server-rendered HTML (html/template), with every asset embedded
// (a small hand-written stylesheet and a little vanilla JavaScript), so
// it works offline from the single binary, with no CDN and no build step.
// The JavaScript only adds liveness: the runs list refreshes itself, and
// a run's page follows the run through server-sent events. Everything
// else — filtering runs, deciding approvals, starting a run, giving
// feedback — is a plain HTML form that works without it.
//
// # Who may do what
//
// The UI authenticates as the API does, with the teams' tokens
// ([inbound.Tokens]): the login form takes a token and sets a session
// cookie (HttpOnly, SameSite=Strict, Secure over TLS) that carries the
// team, signed with a key of the process, never the token itself. A team
// sees its own runs and approvals, the admin token every team's. Without
// tokens everyone is served, as by the API. Every POST form carries a
// CSRF token bound to the session, and cross-origin POSTs are refused
// ([http.CrossOriginProtection]).
//
// Approvals are decided through the same path as the API's POST
// /approvals/{token}: the UI signs a link token for the approval with
// the server's approval.Signer and calls approval.Service.Decide with it,
// so a decision is recorded once, by a conditional write, whichever way
// it arrives.
//
// Event text, prompts and model replies are untrusted: html/template
// escapes them everywhere, and the graph's SVG is built from escaped
// names.
package webui
