// Package llmoutput holds the LLMOutput contract every step answers with,
// the parser that judges a model's raw reply against it, and the
// structured-output runner that asks a model again, with precise
// feedback, until the answer is valid.
//
// # The contract
//
// An answer is one JSON object. Required: confidence (a finite number in
// [0,1]), summary (a non-empty string), next_step_context (a string, ""
// allowed). Optional: proceed (boolean, default true), proceed_reason
// (a string or null, also when proceed is false: a stop without a reason
// is accepted as the reference contract accepts it, not re-asked, and the
// runner gives the summary as the stop's reason), reasoning (an object; conventional
// keys supports, contradicts, assumptions), artifacts (an object mapping
// a name to text content). Any other field is kept, in order, as an extra
// ([Output.Extra]) and reaches templates through [Output.Map]. model,
// provider and raw_response are set by the executor; the agent's values
// for them are dropped. [ContractSchemaJSON] publishes the JSON Schema,
// [ContractInstruction] the system-prompt text asking for it.
//
// # Reserved names
//
// Some names in a step's output belong to the runner, which writes them
// and decides on them; an answer may not set them. [RunnerFields]:
//
//	failed               true on the output of a failed step or branch
//	failed_branches      a group's output: the names of the branches that failed
//	join                 a group's output: its join rule
//	sub_run_id           a pipeline step's output: the child run's id
//	sub_pipeline_status  a pipeline step's output: the child run's status
//
// and the executor's model, provider and raw_response. Parse drops such a
// field from an answer and flags it (reserved_field_ignored, or
// executor_field_ignored for the executor's three), and does the same
// with a contract, executor or runner name written in another case
// ("Confidence", "FAILED"), which encoding/json would match to the real
// field in any Go struct reading the output. [Reserved] is the test. The
// field is dropped rather than moved under another key: its value has no
// meaning of its own under the runner's name, the reply as received is
// kept whole in raw_response for audit, and a pipeline that wants such a
// value from its model asks for it under a name of its own. The runner
// sets these names with [Output.SetExtra], and takes a branch's or a
// step's state from its own record (the Task's status), never from an
// output. decided_by and comment (human steps) and muted (notify steps)
// are not reserved: those outputs are built whole by the runner or the
// executor, with no reply to mix in, and nothing decides on them.
//
// # Parsing: tolerant where lossless, strict where it would guess
//
// [Parse] finds the answer in a reply: the whole reply; else every
// balanced {…} or […] region found by one string-aware scan (fenced
// blocks with any info string, ``` or ~~~, closed or not; JSON embedded in
// prose); after stripping edge noise (BOM, zero-width characters, ANSI
// escapes), leading <think>/<thinking> blocks (or reasoning up to a
// closing tag whose opening tag the chat template emitted), and decoding
// once a reply that is a JSON string holding the document. A
// one-element array, or a single-key envelope ({"output": {...}}), is
// unwrapped when its inner object is the answer.
//
// Repairs are made only where nothing is guessed; each is reported as a
// flag. Flags, in the order Result.Flags lists them:
//
//	edge_noise              BOM, zero-width characters or ANSI escapes stripped at the edges
//	think_block             a leading reasoning block stripped
//	string_decoded          the reply was a JSON string holding the document
//	fenced                  the answer was inside a code fence
//	fence_unclosed          ... whose closing fence is missing
//	surrounding_text        other text surrounded the answer
//	array_unwrapped         the answer was the only element of an array
//	envelope_unwrapped      the answer was the only member of an object
//	placeholder_skipped     a template object ("...", "<summary>") was ignored
//	repeated_answer         the same answer appeared more than once
//	other_json_ignored      an invalid object that resembles an answer was ignored
//	trailing_comma          trailing commas removed
//	comments                // and /* */ comments outside strings removed
//	single_quotes           single-quoted strings read
//	escaped_apostrophe      \' read as '
//	unquoted_keys           identifier keys read
//	python_literals         True, False, None read as true, false, null
//	control_chars           raw control characters inside strings kept as text
//	duplicate_key           a key repeated with the same value kept once
//	number_string           a number given as a string ("0.8") read as the number
//	bool_string             a boolean given as a string ("false") read as the boolean
//	null_optional           null on an optional field read as absent
//	object_string           an object given as a JSON string (reasoning) decoded
//	executor_field_ignored  model, provider or raw_response sent by the agent dropped
//	reserved_field_ignored  a runner-reserved name, or a contract, executor or runner name in another case, dropped
//
// Parse never guesses: it invents no required field; it never clamps or
// rescales confidence (85, 1.2, -0.1, "high", "0.7-0.9", "0,8", NaN are
// errors); it rejects truncated output, also when the provider's finish
// reason says so (length, max_tokens) even if the text parses, and a cut
// reply is truncated even when a complete inner object could be taken
// from it; it never picks between two different answers (equal answers
// count once; a template of placeholders is not an answer; an example
// with real values is an answer, so an example and an answer together
// are ambiguous); proceed comes only from true or false; a key repeated
// with different values is an error; inside broken JSON, a nested object
// counts only when the broken part before it names no answer field.
// Refusals (prose that opens like one, an {"error": …} or {"refusal": …}
// object with no answer field, a provider refusal, a content-filter stop)
// are their own outcome. Size and nesting limits (DefaultMaxBytes 1 MiB,
// DefaultMaxDepth 64) are checked before any repair.
//
// # Verdicts and error codes
//
// A [Result] has an [Outcome] (accepted, rejected, truncated, refused),
// the answer, the flags, and on failure every error as a [FieldError]
// {path, code, message}. The codes are stable:
//
//	no_json         the reply holds no JSON object (or is empty)
//	syntax          JSON that no lossless repair can read; the message gives line and column
//	not_object      the reply is a JSON value other than an object (or an array of several)
//	truncated       the reply was cut off
//	ambiguous       the reply holds two or more different answers (or over 1000 JSON values)
//	duplicate_key   a key appears twice with different values
//	missing_field   a required field is absent
//	wrong_type      a field has the wrong JSON type (also NaN or Infinity outside confidence)
//	out_of_range    a number outside its range (confidence outside [0,1], non-finite)
//	empty_field     a string that must not be blank is blank
//	placeholder     a required field holds a template slot ("...", "<summary>")
//	invalid_value   a value its field does not allow (a built-in answer's enum)
//	refusal         the model declined to answer
//	content_filter  the provider's content filter stopped the reply
//	too_large       the reply exceeds the size limit
//	too_deep        the reply nests deeper than the depth limit
//
// [Result.Feedback] renders the re-ask message: one header, one bullet per
// error (at most 20, then a count), the first 600 bytes of the reply, one
// closing instruction. [Result.Err] gives a *fault.InvalidOutput or a
// *fault.ModelRefused.
//
// # Structured output: the contract, and built-in answers
//
// An [OutputSchema] names the answer a [Runner] asks for. There is one
// answer type, [Output], and one judge, Parse: [ContractSchema] asks for
// the contract, and the built-in schemas ask for the contract plus fields
// of their own, required, as extras ([TaskAnalysisSchema] for a
// [TaskAnalysis]: task_type, complexity, tools_needed, approach;
// [ErrorAnalysisSchema] for an [ErrorAnalysis]; [ConversationSummarySchema]
// for a [ConversationSummary]). Their JSON Schema is the contract's with
// those fields added; after Parse accepts a reply, each field is checked
// (present, of its type, in its enum, not a placeholder; "true" or
// "false" read as a boolean, bool_string), and a failure is re-asked like
// any other. [ReadTaskAnalysis], [ReadErrorAnalysis] and
// [ReadConversationSummary] check and decode the fields of an accepted
// Output, reading only the declared names. A step keeps them as it keeps
// any extra, so templates reach them ({{steps.triage.task_type}}).
//
// [Runner.Complete] sends the schema's instruction and SchemaSpec (for
// providers with native structured output: OpenAI json_schema, not
// strict, since the contract's extras, reasoning and artifacts are free
// form; Anthropic and Bedrock forced tool use), validates every reply, and
// re-asks up to MaxRetries times (DefaultMaxRetries 2: three calls),
// appending the rejected reply as an assistant message and the feedback
// as a user message. A refusal stops at once; a provider error is
// returned as is, never re-asked; the last failure is returned in the
// [RunResult], not as an error.
//
// # Performance
//
// One pass finds the candidates (no regular expressions), one pass parses
// each with the repairs, containers are allocated once at their exact
// size and extras are encoded into one buffer; time grows linearly with
// the reply. Measured on this project's shared 2-core machine (AMD EPYC,
// Go 1.26, load average about 2 from other builds: figures move by up to
// 2x between runs, the best of five is quoted) with
//
//	go test ./shared/llmoutput -run '^$' -bench . -benchmem -count 5
//
//	BenchmarkParse/clean-4KB       13.7 µs/op    22.9 KB/op     58 allocs/op
//	BenchmarkParse/repairs-4KB     16.8 µs/op    26.9 KB/op     88 allocs/op
//	BenchmarkParse/clean-64KB      0.32 ms/op     370 KB/op    459 allocs/op
//	BenchmarkParse/repairs-64KB    0.27 ms/op     383 KB/op    863 allocs/op
//	BenchmarkParse/clean-256KB     0.91 ms/op     1.4 MB/op   1729 allocs/op
//	BenchmarkParse/repairs-256KB   1.32 ms/op     1.5 MB/op   3337 allocs/op
//	BenchmarkParse/clean-1MiB      5.1 ms/op      5.8 MB/op   6799 allocs/op
//	BenchmarkParse/repairs-1MiB    7.3 ms/op      6.0 MB/op  13219 allocs/op
//	BenchmarkCheckTaskAnalysis     9.0 µs/op      6.2 KB/op     38 allocs/op
//
// That is 3.3 to 4.9 ns a byte from 4 KB to 1 MiB (the larger replies pay
// for cache misses and garbage collection, not for extra passes).
// "repairs" replies sit in a fence with prose around them and need every
// syntax repair; CheckTaskAnalysis judges a TaskAnalysis answer (Parse,
// then its four fields), measured at a load average of 6, when clean-4KB
// took 34 µs: its time is an upper bound (the JSON Schema judge it
// replaced took 9.4 µs, 8.1 KB and 118 allocations at load 2).
// The targets are clean 4 KB under 20 µs and 1 MiB under 20 ms.
// TestLinearTime feeds 1 MiB of each hostile pattern (open brackets,
// quotes, backslashes, stray braces, comments, thousands of objects,
// duplicate keys, broken objects) and fails past 5 s; each takes under
// 0.2 s, where a quadratic scan would take minutes. FuzzParse checks that any input is judged without panic, the
// same way twice, and that an accepted answer re-validates:
//
//	go test ./shared/llmoutput -run '^$' -fuzz FuzzParse -fuzztime 30s
//
// The corpus of raw replies and their verdicts is testdata/corpus (one
// file per reply; accepted ones have a golden output, rewritten with
// go test ./shared/llmoutput -run TestCorpus -update).
package llmoutput
