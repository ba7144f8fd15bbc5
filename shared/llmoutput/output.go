package llmoutput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// Output is one step's answer: the LLMOutput contract. Parse builds it
// from a model reply; executors that synthesise answers (webhook, notify,
// human) build it with New.
type Output struct {
	Confidence      float64           // in [0,1]
	Summary         string            // non-empty one-line outcome
	NextStepContext string            // brief for the next steps; "" allowed
	Proceed         bool              // false stops the run cleanly; the contract's default is true
	ProceedReason   string            // why Proceed is false; optional, as in the reference contract
	Reasoning       map[string]any    // conventional keys: supports, contradicts, assumptions
	Artifacts       map[string]string // name → content
	Extra           Extras            // fields outside the contract, in the order the model gave them

	// Set by the executor, never taken from the agent's reply.
	Model       string
	Provider    string
	RawResponse string // kept for the record; not part of CompactJSON or Map
}

// Field is one extra field of an answer.
type Field struct {
	Name  string
	Value json.RawMessage // compact JSON
}

// Extras are the fields of an answer outside the contract, in order.
type Extras []Field

// Get returns the value of the extra field name.
func (x Extras) Get(name string) (json.RawMessage, bool) {
	for _, f := range x {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Contract and executor field names.
const (
	keyConfidence      = "confidence"
	keySummary         = "summary"
	keyNextStepContext = "next_step_context"
	keyProceed         = "proceed"
	keyProceedReason   = "proceed_reason"
	keyReasoning       = "reasoning"
	keyArtifacts       = "artifacts"
	keyModel           = "model"
	keyProvider        = "provider"
	keyRawResponse     = "raw_response"
)

// Runner-reserved names: the fields the runner writes into a step's output
// for its own bookkeeping. The runner sets them with SetExtra; a reply never
// does (Parse drops them, flagged reserved_field_ignored), so whatever
// reads them reads the runner's value.
const (
	FieldFailed            = "failed"              // true on the output of a failed step or branch
	FieldFailedBranches    = "failed_branches"     // a group's output: the branches that failed
	FieldJoin              = "join"                // a group's output: its join rule
	FieldSubRunID          = "sub_run_id"          // a pipeline step's output: the child run
	FieldSubPipelineStatus = "sub_pipeline_status" // a pipeline step's output: the child run's status
)

var runnerFields = [...]string{FieldFailed, FieldFailedBranches, FieldJoin, FieldSubRunID, FieldSubPipelineStatus}

// contractNames are the contract and executor fields, which no extra field
// may use.
var contractNames = [...]string{keyConfidence, keySummary, keyNextStepContext, keyProceed, keyProceedReason,
	keyReasoning, keyArtifacts, keyModel, keyProvider, keyRawResponse}

// RunnerFields returns the runner-reserved names, in a new slice.
func RunnerFields() []string {
	return append([]string(nil), runnerFields[:]...)
}

// Reserved reports whether an answer from an agent may not carry name as
// a field of its own: a contract or executor field (as an extra), a
// runner-reserved name, or any of these written in another case. The last
// rule exists because encoding/json matches object keys to struct fields
// case-insensitively (with Unicode folding: "ſummary" is summary), so
// a Go reader of an output would take "Confidence" for confidence.
func Reserved(name string) bool {
	for _, n := range contractNames {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	for _, n := range runnerFields {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// isReserved reports whether name is a contract or executor field, which
// an extra field may not use.
func isReserved(name string) bool {
	switch name {
	case keyConfidence, keySummary, keyNextStepContext, keyProceed, keyProceedReason,
		keyReasoning, keyArtifacts, keyModel, keyProvider, keyRawResponse:
		return true
	}
	return false
}

// New returns an answer with the three required fields and Proceed true.
func New(confidence float64, summary, nextStepContext string) *Output {
	return &Output{Confidence: confidence, Summary: summary, NextStepContext: nextStepContext, Proceed: true}
}

// SetExtra sets the extra field name to the JSON encoding of v, replacing
// an existing field of that name in place or appending a new one.
func (o *Output) SetExtra(name string, v any) error {
	if isReserved(name) {
		return fmt.Errorf("set extra %q: the name belongs to the contract", name)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("set extra %q: %w", name, err)
	}
	for i := range o.Extra {
		if o.Extra[i].Name == name {
			o.Extra[i].Value = raw
			return nil
		}
	}
	o.Extra = append(o.Extra, Field{Name: name, Value: raw})
	return nil
}

// Validate checks an answer built in Go against the contract, with the
// same rules and codes Parse applies to a reply.
func (o *Output) Validate() []FieldError {
	var errs []FieldError
	if math.IsNaN(o.Confidence) || o.Confidence < 0 || o.Confidence > 1 {
		errs = append(errs, FieldError{keyConfidence, CodeOutOfRange,
			fmt.Sprintf("confidence must be a number from 0 to 1; got %v", o.Confidence)})
	}
	if strings.TrimSpace(o.Summary) == "" {
		errs = append(errs, FieldError{keySummary, CodeEmptyField, "summary must not be empty"})
	}
	if o.Reasoning != nil {
		if _, err := json.Marshal(o.Reasoning); err != nil {
			errs = append(errs, FieldError{keyReasoning, CodeWrongType, "reasoning cannot be encoded as JSON: " + err.Error()})
		}
	}
	for _, f := range o.Extra {
		switch {
		case isReserved(f.Name):
			errs = append(errs, FieldError{f.Name, CodeInvalidValue, "an extra field may not use a contract name"})
		case !json.Valid(f.Value):
			errs = append(errs, FieldError{f.Name, CodeSyntax, "the extra field's value is not valid JSON"})
		}
	}
	return errs
}

// MarshalJSON encodes the contract fields in a fixed order, then the extra
// fields in their order, then the executor fields. Empty optional fields
// are left out. It fails on a non-finite confidence, as encoding/json does.
func (o Output) MarshalJSON() ([]byte, error) {
	return o.appendJSON(make([]byte, 0, 256), true)
}

// CompactJSON is MarshalJSON without raw_response: the form later steps
// and templates see.
func (o *Output) CompactJSON() ([]byte, error) {
	return o.appendJSON(make([]byte, 0, 256), false)
}

func (o *Output) appendJSON(b []byte, withRaw bool) ([]byte, error) {
	if math.IsNaN(o.Confidence) || math.IsInf(o.Confidence, 0) {
		return nil, fmt.Errorf("encode output: confidence %v is not a finite number", o.Confidence)
	}
	b = append(b, `{"confidence":`...)
	b = appendFloat(b, o.Confidence)
	b = append(b, `,"summary":`...)
	b = appendString(b, o.Summary)
	b = append(b, `,"next_step_context":`...)
	b = appendString(b, o.NextStepContext)
	b = append(b, `,"proceed":`...)
	b = strconv.AppendBool(b, o.Proceed)
	if o.ProceedReason != "" {
		b = append(b, `,"proceed_reason":`...)
		b = appendString(b, o.ProceedReason)
	}
	var err error
	if o.Reasoning != nil {
		b = append(b, `,"reasoning":`...)
		if b, err = appendAny(b, o.Reasoning); err != nil {
			return nil, fmt.Errorf("encode output reasoning: %w", err)
		}
	}
	if o.Artifacts != nil {
		b = append(b, `,"artifacts":{`...)
		names := make([]string, 0, len(o.Artifacts))
		for n := range o.Artifacts {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, n)
			b = append(b, ':')
			b = appendString(b, o.Artifacts[n])
		}
		b = append(b, '}')
	}
	for _, f := range o.Extra {
		if isReserved(f.Name) {
			continue
		}
		b = append(b, ',')
		b = appendString(b, f.Name)
		b = append(b, ':')
		if len(f.Value) == 0 {
			b = append(b, "null"...)
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, f.Value); err != nil {
			return nil, fmt.Errorf("encode output extra %q: %w", f.Name, err)
		}
		b = append(b, buf.Bytes()...)
	}
	for _, kv := range [...][2]string{{keyModel, o.Model}, {keyProvider, o.Provider}} {
		if kv[1] != "" {
			b = append(b, ',')
			b = appendString(b, kv[0])
			b = append(b, ':')
			b = appendString(b, kv[1])
		}
	}
	if withRaw && o.RawResponse != "" {
		b = append(b, `,"raw_response":`...)
		b = appendString(b, o.RawResponse)
	}
	return append(b, '}'), nil
}

// appendFloat formats a finite f as encoding/json does.
func appendFloat(b []byte, f float64) []byte { return jsonstr.AppendFloat(b, f) }

// appendAny encodes the values toAny produces, with sorted object keys
// (jsonstr.AppendValue); other Go values go through encoding/json, and a
// number that is not finite is refused.
func appendAny(b []byte, v any) ([]byte, error) {
	return jsonstr.AppendValue(b, v, false, func(b []byte, v any) ([]byte, error) {
		if f, ok := v.(float64); ok {
			return nil, fmt.Errorf("%v is not a finite number", f)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	})
}

// UnmarshalJSON reads an answer Stepline encoded (a stored step record,
// a step's output passed between states). It does not judge: model
// replies go through Parse, which does. model, provider and raw_response
// are read, since a record carries the executor's values.
func (o *Output) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decode output: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("decode output: want a JSON object, got %v", tok)
	}
	*o = Output{Proceed: true}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("decode output: %w", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("decode output %q: %w", key, err)
		}
		var dst any
		switch key {
		case keyConfidence:
			dst = &o.Confidence
		case keySummary:
			dst = &o.Summary
		case keyNextStepContext:
			dst = &o.NextStepContext
		case keyProceed:
			dst = &o.Proceed
		case keyProceedReason:
			dst = &o.ProceedReason
		case keyReasoning:
			dst = &o.Reasoning
		case keyArtifacts:
			dst = &o.Artifacts
		case keyModel:
			dst = &o.Model
		case keyProvider:
			dst = &o.Provider
		case keyRawResponse:
			dst = &o.RawResponse
		default:
			o.Extra = append(o.Extra, Field{Name: key, Value: append(json.RawMessage(nil), raw...)})
			continue
		}
		if string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("decode output %q: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("decode output: %w", err)
	}
	return nil
}

// Map returns the answer as the value templates and conditions read:
// contract fields, extras decoded (numbers as float64), model and provider
// when set; raw_response is left out. Reasoning is shared, not copied.
func (o *Output) Map() map[string]any {
	m := make(map[string]any, 8+len(o.Extra))
	m[keyConfidence] = o.Confidence
	m[keySummary] = o.Summary
	m[keyNextStepContext] = o.NextStepContext
	m[keyProceed] = o.Proceed
	if o.ProceedReason != "" {
		m[keyProceedReason] = o.ProceedReason
	}
	if o.Reasoning != nil {
		m[keyReasoning] = o.Reasoning
	}
	if o.Artifacts != nil {
		a := make(map[string]any, len(o.Artifacts))
		for k, v := range o.Artifacts {
			a[k] = v
		}
		m[keyArtifacts] = a
	}
	for _, f := range o.Extra {
		if isReserved(f.Name) {
			continue
		}
		v, _, _, err := parseLenient(string(f.Value), 0, len(f.Value), DefaultMaxDepth)
		if err != nil {
			m[f.Name] = string(f.Value)
			continue
		}
		m[f.Name] = toAny(&v)
	}
	if o.Model != "" {
		m[keyModel] = o.Model
	}
	if o.Provider != "" {
		m[keyProvider] = o.Provider
	}
	return m
}
