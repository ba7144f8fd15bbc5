// Package yamldoc reads YAML documents within bounds. Every YAML file
// Stepline reads goes through it: pipelines (package compiler, which
// validate, compile, run, serve, the CDK stack and the ingest function
// use), the scripted responses file (package executor), price tables
// (package pricing) and team token files (package intake).
//
// YAML aliases make a small file describe a huge document: nine levels of
// nine aliases each ("billion laughs") are a file of a few hundred bytes
// that reads as 435 million nodes. go.yaml.in/yaml/v3 does not expand aliases when it
// decodes into a yaml.Node, but every walker that follows them does, and
// its own guard for decoding into Go values is a ratio checked per Decode
// call, not a budget for the document (see TestLibraryAliasGuard). So
// [Parse] measures the document once, right after parsing, as if every
// alias were expanded, and refuses it when it crosses a bound:
//
//   - MaxBytes: the source is at most 8 MiB;
//   - MaxNodes: at most 1,000,000 nodes (every scalar, list and mapping,
//     keys included), an alias counting as a copy of the value it names;
//   - MaxDepth: lists and mappings nest at most 100 levels deep, aliases
//     expanded;
//   - no alias may name a value it is part of (it would expand forever).
//
// The measure is linear in the file: each anchored value's expanded size
// and depth are computed once and reused for every alias to it, so a
// refusal takes microseconds whatever the expansion would have been. A
// refusal is an [*Error] positioned at the alias (or node) that crosses
// the bound, which loaders print as file:line:col.
//
// The node budget is about twice the nodes of the largest pipeline file
// the compiler reads (the 10,000-step pipeline of its benchmark, 2.8 MB,
// holds 151,197 nodes; 8 MiB of such steps about 450,000). A document
// just under the budget, made of aliases, costs the compiler's Load 180 MB
// of allocations and 0.65 s on an idle 2-core machine (2.5 s under a load
// of 12); anything larger is refused before any walker expands it.
//
// Two helpers serve files that users write by hand. [ParseSingle] is
// Parse for a file that holds one document (pipelines, library steps): a
// second document is refused where it starts rather than left unread.
// [SyntaxError] places a syntax error at the character whose reading
// breaks the document: the YAML library names, for most structural
// errors, the line before the start of the enclosing block instead.
package yamldoc
