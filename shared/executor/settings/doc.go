// Package settings reads and checks the executor_config of a step: the
// keys each executor takes, their types and ranges, URL and header
// syntax, and the defaults that come from where a pipeline runs
// (Defaults). The compiler checks a pipeline's configs with it (through
// package compiler/gate, Defaults.CheckConfig) and the executors read
// them with it when a step is built and called (package shared/executor),
// so a config is judged by the same code before it is deployed and when
// it runs.
//
// It is apart from package executor so that a program that compiles
// pipelines without calling executors (the ingest function) does not link
// the executors' dependencies: the MCP SDK and, through it, JSON Schema
// and encoding/gob, whose package initialisers every cold start pays.
//
// A config is read in one of three modes: ModeCompile (a string holding a
// Liquid tag or a ${NAME} reference stands for any type), ModeBuild
// (${NAME} unresolved) and ModeCall (everything resolved). Every problem
// is a *ConfigIssue naming its key; warnings do not stop a pipeline.
package settings
