// Package pipeline is the model of a Stepline pipeline: what the compiler
// produces from YAML and what the runtime reads.
//
// Every node carries the source position it came from, so that checks made
// after parsing can still point at the line and column of the problem.
// Defaults from the pipeline format are applied while parsing: a Step whose
// YAML omits confidence_threshold holds DefaultConfidenceThreshold, and the
// map returned by a node's Set method says which fields the author wrote.
package pipeline
