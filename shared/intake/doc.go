// Package intake turns inbound events into pipeline runs. The work is
// package shared/inbound's (authenticate, normalize, route, stage gate,
// deduplicate, record, start: see its documentation); this package adds
// what reads files, which needs the compiler and the YAML parser:
// LoadPipelines and LoadPipelinesIn compile a directory's pipeline files
// through package gate, ParseTokens reads a YAML or JSON tokens file.
//
// Its other names are package inbound's, as aliases, so that a caller
// that loads files uses one package. A program that takes compiled
// pipelines and reads tokens only from JSON or name=token lists (the
// ingest function) imports package inbound alone and links neither the
// compiler nor the YAML parser.
package intake
