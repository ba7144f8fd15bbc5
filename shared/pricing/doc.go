// Package pricing turns a model call's token usage into a cost in US
// dollars, from a price table the operator maintains.
//
// A table is a list of entries {provider, model_prefix, input_per_mtok,
// output_per_mtok} with prices per million tokens. A call is priced by the
// entry with the longest model_prefix that prefixes its model, among entries
// of the same provider or of no provider (a provider-specific entry wins a
// tie); failing that, by the provider's own entry without a model_prefix.
// A call nothing matches has no cost: [Table.Cost] says so rather than
// answering zero, so unknown spending is never counted as free.
//
// default.yaml is the example table [Default] returns (built from the
// same entries written as Go values, which a test pins to the file), an
// example covering a few well-known models at list prices of its date;
// operators are expected to keep their own table current.
//
// [Lazy] defers loading a table to its first use, so that a process (a
// Lambda function's cold start) does not parse a table before it prices
// its first call.
package pricing
