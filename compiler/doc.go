// Package compiler turns a pipeline file into an AWS Step Functions state
// machine. It works in three phases over the model in shared/pipeline:
//
//   - Parse reads the YAML, checks it against the published JSON Schema
//     (Schema) and builds the model with the format's defaults applied;
//   - Check finds what the schema cannot: duplicate names, references to
//     steps that do not exist or run later, when: expressions that do not
//     parse, executor requirements, cron and regex syntax, and warnings for
//     pipelines that work but likely not as meant;
//   - the lowering phase emits the state machine.
//
// Every problem is a Diagnostic positioned file:line:col; all of a file's
// problems are collected and sorted, never only the first.
package compiler
