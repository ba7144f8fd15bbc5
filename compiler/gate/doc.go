// Package gate is the one way a program turns a pipeline file into a
// state machine. stepline validate, compile, graph and run, stepline
// serve and its router, the CDK app (package infra/plan) and the ingest
// function (through package shared/intake) all compile through Compile or
// CompileFile (or their In forms), so a pipeline that validates compiles,
// synthesizes and runs, and one that does not is refused by each of them
// with the same positioned diagnostics.
//
// It runs every phase of the compiler (compiler.BuildIn: parse, check,
// lower, the definition's limits) with the executors' configuration
// checks (package shared/executor/settings, which the executors read their
// configs with too). The compiler takes those checks as a value; this is
// the one place they are joined to it, and it does not link the executors
// themselves (nor their MCP SDK). The Defaults (settings.Defaults)
// say what the place the pipeline will run provides
// (OPENAI_BASE_URL): main reads them from its environment, and only the
// warnings depend on them, never whether a file compiles.
//
// The project (package shared/project: stepline.yaml, its agents, MCP
// servers, tool policy and executor defaults) is an input too. A file
// compiles in the project of the first stepline.yaml found walking up
// from it, or in the one given (--config; CompileFileIn); a source
// without a file (Compile) in none. The project's problems are every
// pipeline's in it, its agents are what executor_config.agent names and
// its step library is what use: names, so every path resolves an agent
// step and a library step the same way. Library (what stepline steps
// lists) and CheckStepFile (what stepline validate does with a file of
// the steps directory) read the library with the same executor checks.
package gate
