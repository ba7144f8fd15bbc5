package llmoutput

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// DefaultMaxRetries is the number of re-asks after the first call: up to
// three calls in all.
const DefaultMaxRetries = 2

// OutputSchema is the answer a Runner asks for: the LLMOutput contract
// (ContractSchema), or the contract with fields of its own (the built-in
// TaskAnalysisSchema, ErrorAnalysisSchema and ConversationSummarySchema);
// its JSON Schema; and how hard to try. Every answer is judged by Parse.
// The answer is always an Output. A schema is immutable once built (set
// the exported fields before use) and safe for concurrent use.
type OutputSchema struct {
	Name        string // SchemaSpec name, [a-zA-Z0-9_-]{1,64}
	Description string // what the answer is for
	MaxRetries  int    // re-asks after the first call; 0 makes a single call

	schema json.RawMessage
	fields []extraField // a built-in answer's fields, judged after Parse
	// instr is the last Instruction rendered, with the name and
	// description it was rendered for: a runner asks for it on every
	// call, and rendering it (the schema indented) costs more than the
	// rest of judging a short reply.
	instr atomic.Pointer[instruction]
}

// instruction is an OutputSchema's rendered Instruction.
type instruction struct{ name, description, text string }

// ContractSchema is the OutputSchema of the LLMOutput contract, with
// DefaultMaxRetries. It is not strict (see ContractSpec).
func ContractSchema() *OutputSchema {
	spec := ContractSpec()
	return &OutputSchema{
		Name:        spec.Name,
		Description: spec.Description,
		MaxRetries:  DefaultMaxRetries,
		schema:      spec.JSON,
	}
}

// JSON returns the JSON Schema of the answer.
func (s *OutputSchema) JSON() json.RawMessage { return append(json.RawMessage(nil), s.schema...) }

// Spec returns the SchemaSpec a Request carries.
func (s *OutputSchema) Spec() SchemaSpec {
	return SchemaSpec{Name: s.Name, Description: s.Description, JSON: s.JSON()}
}

// requestSpec is Spec with the schema's JSON shared, not copied, for the
// Requests the Runner makes (providers never change a Request's schema):
// the copy was 3% of the bytes a step allocated in BenchmarkRun.
func (s *OutputSchema) requestSpec() SchemaSpec {
	return SchemaSpec{Name: s.Name, Description: s.Description, JSON: s.schema[:len(s.schema):len(s.schema)]}
}

// Instruction renders the system-prompt text asking for this answer.
func (s *OutputSchema) Instruction() string {
	if in := s.instr.Load(); in != nil && in.name == s.Name && in.description == s.Description {
		return in.text
	}
	text := Instruction(SchemaSpec{Name: s.Name, Description: s.Description, JSON: s.schema})
	s.instr.Store(&instruction{name: s.Name, description: s.Description, text: text})
	return text
}

// Check judges one raw reply against the schema, as the runner does: Parse,
// then a built-in answer's own fields. A schema that was not built by a
// constructor rejects every reply.
func (s *OutputSchema) Check(raw string, opts ParseOptions) (Output, Result) {
	if !s.built() {
		return Output{}, Result{Outcome: Rejected, Errors: []FieldError{{"", CodeInvalidValue, "the output schema was not built by a constructor"}}}
	}
	r := Parse(raw, opts)
	if !r.OK {
		return Output{}, r
	}
	if len(s.fields) > 0 {
		flags, errs := checkFields(r.Output, s.fields)
		if len(errs) > 0 {
			return Output{}, Result{Outcome: Rejected, Flags: r.Flags, Errors: errs, echo: r.echo}
		}
		if flags != 0 {
			r.Flags = addFlags(r.Flags, flags)
		}
	}
	if opts.MaxAnswerBytes > 0 {
		if n := answerBytes(*r.Output); n > opts.MaxAnswerBytes {
			return Output{}, Result{Outcome: Rejected, Flags: r.Flags, echo: r.echo, Errors: []FieldError{{"", CodeTooLarge,
				fmt.Sprintf("the answer is %d bytes with its artifacts stored apart, more than %d: keep summary, next_step_context and the other fields short and put long text in artifacts", n, opts.MaxAnswerBytes)}}}
		}
	}
	return Output(*r.Output), r
}

// ArtifactRefBytes is what an artifact counts in an answer's size for
// MaxAnswerBytes besides its name: the most a runner's reference to it
// takes in place of its content.
const ArtifactRefBytes = 256

// answerBytes is the length of o's CompactJSON with each artifact's
// content counted as ArtifactRefBytes.
func answerBytes(o Output) int {
	n := len(o.Artifacts)
	if n > 0 {
		arts := make(map[string]string, n)
		for k := range o.Artifacts {
			arts[k] = ""
		}
		o.Artifacts = arts
	}
	b, err := o.CompactJSON()
	if err != nil {
		return 0 // Parse accepted only a finite confidence
	}
	return len(b) + ArtifactRefBytes*n
}

func (s *OutputSchema) built() bool { return s != nil && len(s.schema) > 0 }

// addFlags adds flags to names, keeping the order Result.Flags lists them.
func addFlags(names []string, add flagSet) []string {
	var have flagSet
	all := flagNames()
	for _, n := range names {
		for i, a := range all {
			if a == n {
				have |= 1 << i
			}
		}
	}
	return (have | add).names()
}
