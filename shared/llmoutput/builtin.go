package llmoutput

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The built-in answers are LLMOutput answers that also carry fields of
// their own, as extras: the contract's one path (Parse, the Runner) judges
// them, and the fields are then checked against their list. A step keeps
// them as it keeps any extra field, so templates reach them
// ({{steps.triage.task_type}}).

// TaskAnalysis classifies a task before work starts.
type TaskAnalysis struct {
	TaskType    string   `json:"task_type"`
	Complexity  string   `json:"complexity"`
	ToolsNeeded []string `json:"tools_needed"`
	Approach    string   `json:"approach"`
}

// ErrorAnalysis explains a failure and whether to try again.
type ErrorAnalysis struct {
	ErrorType    string `json:"error_type"`
	RootCause    string `json:"root_cause"`
	SuggestedFix string `json:"suggested_fix"`
	CanRetry     bool   `json:"can_retry"`
}

// ConversationSummary condenses a conversation.
type ConversationSummary struct {
	KeyTopics         []string `json:"key_topics"`
	DecisionsMade     []string `json:"decisions_made"`
	ActionItems       []string `json:"action_items"`
	EntitiesMentioned []string `json:"entities_mentioned"`
	OverallSummary    string   `json:"overall_summary"`
}

// fieldKind is the JSON form of a built-in answer's field.
type fieldKind uint8

const (
	textField fieldKind = iota // a string
	listField                  // an array of strings
	flagField                  // a boolean
)

// extraField is one field a built-in answer adds to the contract. Every
// such field is required.
type extraField struct {
	name string
	kind fieldKind
	desc string
	enum []string // the values a text field may take; nil: any
}

func taskAnalysisFields() []extraField {
	return []extraField{
		{"task_type", textField, "What kind of task this is.", []string{"question", "code", "research", "file_operation", "system_admin"}},
		{"complexity", textField, "How much work the task takes.", []string{"simple", "moderate", "complex"}},
		{"tools_needed", listField, "The tools the task needs; [] when none.", nil},
		{"approach", textField, "How to go about the task, in a few sentences.", nil},
	}
}

func errorAnalysisFields() []extraField {
	return []extraField{
		{"error_type", textField, "The kind of error.", []string{"syntax", "runtime", "logic", "permission", "network", "unknown"}},
		{"root_cause", textField, "What caused the error.", nil},
		{"suggested_fix", textField, "What would fix it.", nil},
		{"can_retry", flagField, "Whether trying again as is may succeed.", nil},
	}
}

func conversationSummaryFields() []extraField {
	return []extraField{
		{"key_topics", listField, "The main topics discussed.", nil},
		{"decisions_made", listField, "Decisions reached; [] when none.", nil},
		{"action_items", listField, "Follow-up tasks; [] when none.", nil},
		{"entities_mentioned", listField, "People, systems, services and other named things.", nil},
		{"overall_summary", textField, "The conversation in a few sentences.", nil},
	}
}

// TaskAnalysisSchema asks for an LLMOutput answer that also carries a
// TaskAnalysis; ReadTaskAnalysis reads it from the accepted Output.
func TaskAnalysisSchema() *OutputSchema {
	return extendedSchema("task_analysis", "An analysis of a task: its type, complexity, the tools it needs and the approach", taskAnalysisFields())
}

// ErrorAnalysisSchema asks for an LLMOutput answer that also carries an
// ErrorAnalysis; ReadErrorAnalysis reads it from the accepted Output.
func ErrorAnalysisSchema() *OutputSchema {
	return extendedSchema("error_analysis", "An analysis of an error: its type, root cause, a fix, and whether a retry may succeed", errorAnalysisFields())
}

// ConversationSummarySchema asks for an LLMOutput answer that also carries
// a ConversationSummary; ReadConversationSummary reads it from the
// accepted Output.
func ConversationSummarySchema() *OutputSchema {
	return extendedSchema("conversation_summary", "A summary of a conversation: topics, decisions, action items, entities and an overview", conversationSummaryFields())
}

// ReadTaskAnalysis checks o's task analysis fields and returns them. The
// error is a *fault.InvalidOutput naming every field that is missing or
// wrong.
func ReadTaskAnalysis(o *Output) (TaskAnalysis, error) {
	return readFields[TaskAnalysis](o, taskAnalysisFields())
}

// ReadErrorAnalysis checks o's error analysis fields and returns them, as
// ReadTaskAnalysis does.
func ReadErrorAnalysis(o *Output) (ErrorAnalysis, error) {
	return readFields[ErrorAnalysis](o, errorAnalysisFields())
}

// ReadConversationSummary checks o's conversation summary fields and
// returns them, as ReadTaskAnalysis does.
func ReadConversationSummary(o *Output) (ConversationSummary, error) {
	return readFields[ConversationSummary](o, conversationSummaryFields())
}

// extendedSchema is the contract's OutputSchema with fields added: its JSON
// Schema lists them (required), and its check judges them after Parse.
func extendedSchema(name, description string, fields []extraField) *OutputSchema {
	s := ContractSchema()
	s.Name, s.Description, s.fields = name, description, fields
	s.schema = extendedSchemaJSON(description, fields)
	return s
}

// extendedSchemaJSON is the contract's JSON Schema with fields added.
func extendedSchemaJSON(description string, fields []extraField) json.RawMessage {
	root, _, _, _ := parseLenient(contractSchemaJSON, 0, len(contractSchemaJSON), DefaultMaxDepth)
	for i := range root.members {
		m := &root.members[i]
		switch m.key {
		case "title":
			m.val = str(description)
		case "properties":
			for _, f := range fields {
				m.val.members = append(m.val.members, member{f.name, f.schema()})
			}
		case "required":
			for _, f := range fields {
				m.val.items = append(m.val.items, str(f.name))
			}
		}
	}
	return json.RawMessage(appendJSON(nil, &root))
}

func str(s string) value { return value{kind: kindString, str: s} }

// schema is the JSON Schema of the field.
func (f extraField) schema() value {
	s := value{kind: kindObject, members: []member{{"description", str(f.desc)}}}
	switch f.kind {
	case textField:
		s.members = append(s.members, member{"type", str("string")})
		if f.enum != nil {
			e := value{kind: kindArray}
			for _, v := range f.enum {
				e.items = append(e.items, str(v))
			}
			s.members = append(s.members, member{"enum", e})
		}
	case listField:
		s.members = append(s.members, member{"type", str("array")},
			member{"items", value{kind: kindObject, members: []member{{"type", str("string")}}}})
	case flagField:
		s.members = append(s.members, member{"type", str("boolean")})
	}
	return s
}

// checkFields judges an accepted answer's added fields. A boolean given as
// the string "true" or "false" is read as the boolean (bool_string), as
// Parse reads proceed; o is changed in place then. It returns the flags
// added and every error.
func checkFields(o *Output, fields []extraField) (flagSet, []FieldError) {
	var flags flagSet
	var errs []FieldError
	fail := func(path, code, format string, args ...any) {
		errs = append(errs, FieldError{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	for _, f := range fields {
		raw, ok := o.Extra.Get(f.name)
		if !ok {
			fail(f.name, CodeMissingField, "%s is required: %s", f.name, f.hint())
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			fail(f.name, CodeWrongType, "%s could not be read: %v", f.name, err)
			continue
		}
		switch f.kind {
		case textField:
			s, ok := v.(string)
			switch {
			case !ok:
				fail(f.name, CodeWrongType, "%s must be a string; got %s", f.name, describeAny(v))
			case isPlaceholder(s):
				fail(f.name, CodePlaceholder, "%s holds the placeholder %q; write the real value", f.name, capText(s, 40))
			case f.enum != nil && !slices.Contains(f.enum, s):
				fail(f.name, CodeInvalidValue, "%s must be one of %s; got %q", f.name, strings.Join(f.enum, ", "), capText(s, 40))
			}
		case listField:
			items, ok := v.([]any)
			if !ok {
				fail(f.name, CodeWrongType, "%s must be an array of strings ([] when none); got %s", f.name, describeAny(v))
				continue
			}
			for i, it := range items {
				if _, ok := it.(string); !ok {
					fail(indexPath(f.name, i), CodeWrongType, "%s must hold strings; got %s", f.name, describeAny(it))
				}
			}
		case flagField:
			switch b := v.(type) {
			case bool:
			case string:
				lb := strings.ToLower(strings.TrimSpace(b))
				if lb != "true" && lb != "false" {
					fail(f.name, CodeWrongType, "%s must be true or false; got the string %q", f.name, capText(b, 40))
					continue
				}
				flags |= flagBoolString
				_ = o.SetExtra(f.name, lb == "true")
			default:
				fail(f.name, CodeWrongType, "%s must be true or false; got %s", f.name, describeAny(v))
			}
		}
	}
	return flags, errs
}

// hint says what a missing field wants.
func (f extraField) hint() string {
	h := strings.TrimSuffix(f.desc, ".")
	if f.enum != nil {
		h += ", one of " + strings.Join(f.enum, ", ")
	}
	return h
}

// describeAny names the JSON type of a value encoding/json decoded.
func describeAny(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return kindBool.String()
	case float64:
		return kindNumber.String()
	case string:
		return kindString.String()
	case []any:
		return kindArray.String()
	}
	return kindObject.String()
}

// readFields checks o's added fields and decodes them, and only them, into
// a T.
func readFields[T any](o *Output, fields []extraField) (T, error) {
	var out T
	if o == nil {
		return out, verdictErr(Rejected, []FieldError{{"", CodeNoJSON, "no answer"}}, 1)
	}
	c := *o
	c.Extra = slices.Clone(o.Extra)
	if _, errs := checkFields(&c, fields); len(errs) > 0 {
		return out, verdictErr(Rejected, errs, 1)
	}
	b := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		raw, _ := c.Extra.Get(f.name)
		b = appendString(b, f.name)
		b = append(b, ':')
		b = append(b, raw...)
	}
	b = append(b, '}')
	if err := json.Unmarshal(b, &out); err != nil {
		return out, verdictErr(Rejected, []FieldError{{"", CodeWrongType, "the fields do not fit the expected type: " + err.Error()}}, 1)
	}
	return out, nil
}
