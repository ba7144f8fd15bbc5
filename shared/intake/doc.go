// Package intake reads from files what package shared/inbound turns
// events into runs with (authenticate, normalize, route, stage gate,
// deduplicate, record, start: see its documentation). Reading files needs
// the compiler and the YAML parser: LoadPipelines and LoadPipelinesIn
// compile a directory's pipeline files through package gate, ParseTokens
// reads a YAML or JSON tokens file, and ParseTokenList reads a token list
// as inbound.ParseTokenList does but a YAML flow mapping too.
//
// A program that takes compiled pipelines and reads tokens only from JSON
// or name=token lists (the ingest function) imports package inbound alone
// and links neither the compiler nor the YAML parser.
package intake
