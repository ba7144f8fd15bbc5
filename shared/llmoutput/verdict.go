package llmoutput

import (
	"fmt"
	"strings"

	"github.com/stepline/stepline/shared/fault"
)

// Error codes of FieldError. They are stable: tests, the CLI and callers
// match on them. The package documentation describes each.
const (
	CodeNoJSON        = "no_json"
	CodeSyntax        = "syntax"
	CodeNotObject     = "not_object"
	CodeTruncated     = "truncated"
	CodeAmbiguous     = "ambiguous"
	CodeDuplicateKey  = "duplicate_key"
	CodeMissingField  = "missing_field"
	CodeWrongType     = "wrong_type"
	CodeOutOfRange    = "out_of_range"
	CodeEmptyField    = "empty_field"
	CodePlaceholder   = "placeholder"
	CodeInvalidValue  = "invalid_value"
	CodeRefusal       = "refusal"
	CodeContentFilter = "content_filter"
	CodeTooLarge      = "too_large"
	CodeTooDeep       = "too_deep"
)

// FieldError is one reason a reply was not accepted. Path is the dotted
// path of the field ("confidence", "artifacts.report", "items[2].name"),
// "" for the reply as a whole.
type FieldError struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Code + ": " + e.Message
	}
	return e.Path + ": " + e.Code + ": " + e.Message
}

// Outcome is the verdict on a reply.
type Outcome string

// Outcomes. Truncated and refused replies are rejections of their own kind:
// a truncated reply is worth a re-ask, a refusal is not.
const (
	Accepted  Outcome = "accepted"
	Rejected  Outcome = "rejected"
	Truncated Outcome = "truncated"
	Refused   Outcome = "refused"
)

// Result is the verdict of Parse on one reply.
type Result struct {
	Outcome Outcome
	OK      bool         // Outcome == Accepted
	Output  *Output      // the answer, when accepted (LLMOutput replies only)
	Flags   []string     // how the answer was found and repaired, in a fixed order
	Errors  []FieldError // why it was not accepted; empty when accepted

	echo string // the reply text quoted back by Feedback
}

// Err returns nil for an accepted reply, a *fault.ModelRefused for a
// refusal or a content-filter stop, and a *fault.InvalidOutput otherwise.
func (r Result) Err() error {
	return verdictErr(r.Outcome, r.Errors, 1)
}

func verdictErr(o Outcome, errs []FieldError, attempts int) error {
	if o == Accepted {
		return nil
	}
	var b strings.Builder
	if o == Refused {
		b.WriteString("model refused")
	} else {
		fmt.Fprintf(&b, "model output %s", o)
		if attempts > 1 {
			fmt.Fprintf(&b, " after %d attempts", attempts)
		}
	}
	for i, e := range errs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(errs)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(capText(e.Error(), 200))
	}
	if o == Refused {
		return &fault.ModelRefused{Msg: b.String()}
	}
	return &fault.InvalidOutput{Msg: b.String()}
}

// Flags a caller may want to act on: the reply tried to set a field that
// is not the agent's. Callers record them with the step.
const (
	FlagExecutorFieldIgnored = "executor_field_ignored" // model, provider or raw_response dropped
	FlagReservedFieldIgnored = "reserved_field_ignored" // a runner-reserved name, or a contract, executor or runner name in another case, dropped
)

// flagSet holds the repairs and extraction steps applied to a reply.
type flagSet uint32

// Flags, in the order Result.Flags lists them.
const (
	flagEdgeNoise flagSet = 1 << iota
	flagThinkBlock
	flagStringDecoded
	flagFenced
	flagFenceUnclosed
	flagSurroundingText
	flagArrayUnwrapped
	flagEnvelopeUnwrapped
	flagPlaceholderSkipped
	flagRepeatedAnswer
	flagOtherJSONIgnored
	flagTrailingComma
	flagComments
	flagSingleQuotes
	flagEscapedApostrophe
	flagUnquotedKeys
	flagPythonLiterals
	flagControlChars
	flagDuplicateKey
	flagNumberString
	flagBoolString
	flagNullOptional
	flagObjectString
	flagExecutorFieldIgnored
	flagReservedFieldIgnored
	flagCount = iota
)

// flagNames returns the stable names of the flags, documented in doc.go.
func flagNames() [flagCount]string {
	return [flagCount]string{
		"edge_noise",
		"think_block",
		"string_decoded",
		"fenced",
		"fence_unclosed",
		"surrounding_text",
		"array_unwrapped",
		"envelope_unwrapped",
		"placeholder_skipped",
		"repeated_answer",
		"other_json_ignored",
		"trailing_comma",
		"comments",
		"single_quotes",
		"escaped_apostrophe",
		"unquoted_keys",
		"python_literals",
		"control_chars",
		"duplicate_key",
		"number_string",
		"bool_string",
		"null_optional",
		"object_string",
		FlagExecutorFieldIgnored,
		FlagReservedFieldIgnored,
	}
}

// FlagNames lists every flag Parse may report, in the order it reports them.
func FlagNames() []string {
	names := flagNames()
	return names[:]
}

func (f flagSet) names() []string {
	out := []string{}
	if f == 0 {
		return out
	}
	names := flagNames()
	for i := 0; i < flagCount; i++ {
		if f&(1<<i) != 0 {
			out = append(out, names[i])
		}
	}
	return out
}

// capText cuts s to at most n bytes at a rune boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
