// Package template is Stepline's one Liquid engine: every template a
// pipeline holds (prompts, verifier prompts, human approval messages,
// executor_config values such as webhook URLs, headers and payloads,
// failure webhooks, notification templates) is parsed by the compiler's
// checks and rendered at run time through it, with the same settings.
//
// Templates are written by pipeline authors and trusted; what they render
// (events, model replies, tool output, webhook answers) is not. The engine
// therefore guarantees, for any data:
//
//   - Nothing outside the template is reached. The engine has no file
//     loader and no environment: {% include %} and {% render %} are refused
//     when a template is parsed (stepline validate reports them, positioned),
//     and no tag or filter reads a file, the environment or the network.
//     Data is only ever a value: a binding never becomes template source.
//   - Rendering is bounded. Loop iterations (all loops of one render
//     together), the rendered output and every value a filter, {% assign %}
//     or {% capture %} produces have caps (DefaultLimits); a render that
//     would pass one stops with a *LimitError, and a render stops when its
//     context is done (a step's timeout).
//   - Unknown tags and unknown filters are parse errors, so a template that
//     validates does not fail later for a misspelt filter.
//
// The tags are Liquid's control-flow and variable tags: assign, capture,
// case/when/else, comment, cycle, for/else with break and continue (limit,
// offset, reversed), if/elsif/else, raw, unless/else. tablerow (HTML
// tables) is not provided. The filters are the standard ones of
// github.com/osteele/liquid, each run under the value cap.
//
// The tags are implemented here rather than taken from the library's
// standard set because its loop cannot be bounded from outside (it iterates
// a (1..2000000000) range to the end, holding no check a caller could hook)
// and its include tag reads any path; the library's standard tags cannot be
// registered without include. Their behaviour is the library's, checked by
// a differential test against it; the one deliberate difference is that a
// map is iterated in sorted key order instead of Go's random order.
package template
