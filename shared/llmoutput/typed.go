package llmoutput

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/xeipuuv/gojsonschema"
)

// DefaultMaxRetries is the number of re-asks after the first call: up to
// three calls in all.
const DefaultMaxRetries = 2

// OutputSchema is the answer a Runner asks for: a Go type T, the JSON
// Schema of its JSON form, and how hard to try. Build it with
// NewOutputSchema, NewOutputSchemaFromJSON or ContractSchema; it is
// immutable once built (set the exported fields before use) and safe for
// concurrent use.
type OutputSchema[T any] struct {
	Name        string // SchemaSpec name, [a-zA-Z0-9_-]{1,64}
	Description string // what the answer is for
	MaxRetries  int    // re-asks after the first call; 0 makes a single call
	Strict      bool   // ask for strict adherence where offered (OpenAI: send StrictSchema of the JSON)

	schema json.RawMessage
	check  func(raw string, opts ParseOptions) (T, Result)
	// instr is the last Instruction rendered, with the name and
	// description it was rendered for: a runner asks for it on every
	// call, and rendering it (the schema indented) costs more than the
	// rest of judging a short reply.
	instr atomic.Pointer[instruction]
}

// instruction is an OutputSchema's rendered Instruction.
type instruction struct{ name, description, text string }

// NewOutputSchema builds the schema of T from its Go type (DeriveSchema),
// strict, with DefaultMaxRetries.
func NewOutputSchema[T any](name, description string) (*OutputSchema[T], error) {
	raw, err := DeriveSchema[T](name, description)
	if err != nil {
		return nil, fmt.Errorf("output schema %q: %w", name, err)
	}
	return NewOutputSchemaFromJSON[T](name, description, raw)
}

// NewOutputSchemaFromJSON builds the schema of T from a JSON Schema given
// by the caller. Answers must satisfy the schema and decode into T.
func NewOutputSchemaFromJSON[T any](name, description string, schema json.RawMessage) (*OutputSchema[T], error) {
	if !validSchemaName(name) {
		return nil, fmt.Errorf("output schema %q: the name must match [a-zA-Z0-9_-]{1,64}", name)
	}
	j, err := newSchemaJudge[T](schema)
	if err != nil {
		return nil, fmt.Errorf("output schema %q: %w", name, err)
	}
	s := &OutputSchema[T]{
		Name:        name,
		Description: description,
		MaxRetries:  DefaultMaxRetries,
		Strict:      true,
		schema:      append(json.RawMessage(nil), schema...),
	}
	s.check = func(raw string, opts ParseOptions) (T, Result) {
		f := find(raw, opts, j)
		res := Result{Outcome: f.outcome, OK: f.outcome == Accepted, Flags: f.flags.names(), Errors: f.errs, echo: f.echo}
		var out T
		if res.OK {
			out = f.answer.(T)
			res.Errors = nil
		}
		return out, res
	}
	return s, nil
}

// ContractSchema is the OutputSchema of the LLMOutput contract: answers
// are judged by Parse. It is not strict (see ContractSpec).
func ContractSchema() *OutputSchema[Output] {
	spec := ContractSpec()
	return &OutputSchema[Output]{
		Name:        spec.Name,
		Description: spec.Description,
		MaxRetries:  DefaultMaxRetries,
		schema:      spec.JSON,
		check: func(raw string, opts ParseOptions) (Output, Result) {
			r := Parse(raw, opts)
			if r.OK {
				return *r.Output, r
			}
			return Output{}, r
		},
	}
}

// JSON returns the JSON Schema of the answer.
func (s *OutputSchema[T]) JSON() json.RawMessage { return append(json.RawMessage(nil), s.schema...) }

// Spec returns the SchemaSpec a Request carries.
func (s *OutputSchema[T]) Spec() SchemaSpec {
	return SchemaSpec{Name: s.Name, Description: s.Description, JSON: s.JSON(), Strict: s.Strict}
}

// Instruction renders the system-prompt text asking for this answer.
func (s *OutputSchema[T]) Instruction() string {
	if in := s.instr.Load(); in != nil && in.name == s.Name && in.description == s.Description {
		return in.text
	}
	text := Instruction(SchemaSpec{Name: s.Name, Description: s.Description, JSON: s.schema})
	s.instr.Store(&instruction{name: s.Name, description: s.Description, text: text})
	return text
}

// Check judges one raw reply against the schema, as the runner does.
func (s *OutputSchema[T]) Check(raw string, opts ParseOptions) (T, Result) {
	if s == nil || s.check == nil {
		var zero T
		return zero, Result{Outcome: Rejected, Errors: []FieldError{{"", CodeInvalidValue, "the output schema was not built by a constructor"}}}
	}
	return s.check(raw, opts)
}

func validSchemaName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isIdentPart(c) && c != '-' || c == '$' {
			return false
		}
	}
	return true
}

// schemaJudge judges answers against a JSON Schema with gojsonschema,
// after the lossless coercions the schema makes unambiguous, and decodes
// them into T.
type schemaJudge[T any] struct {
	root     value
	compiled *gojsonschema.Schema
}

func newSchemaJudge[T any](schema json.RawMessage) (*schemaJudge[T], error) {
	s := string(schema)
	root, _, _, perr := parseLenient(s, 0, len(s), DefaultMaxDepth)
	if perr != nil {
		return nil, fmt.Errorf("read JSON Schema: %s", perr.Message)
	}
	if root.kind != kindObject {
		return nil, fmt.Errorf("read JSON Schema: want an object, got %s", root.kind)
	}
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schema))
	if err != nil {
		return nil, fmt.Errorf("compile JSON Schema: %w", err)
	}
	return &schemaJudge[T]{root: root, compiled: compiled}, nil
}

// resolve follows local $ref pointers (#, #/$defs/x, #/definitions/x).
func (s *schemaJudge[T]) resolve(n *value) *value {
	for hops := 0; n != nil && n.kind == kindObject && hops < 16; hops++ {
		ref := n.get("$ref")
		if ref == nil || ref.kind != kindString {
			return n
		}
		if ref.str == "#" {
			n = &s.root
			continue
		}
		var next *value
		for _, prefix := range [...]string{"#/$defs/", "#/definitions/"} {
			if name, ok := strings.CutPrefix(ref.str, prefix); ok {
				if defs := s.root.get(prefix[2 : len(prefix)-1]); defs != nil {
					next = defs.get(name)
				}
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// schemaTypes lists the JSON types a schema node names.
func schemaTypes(n *value) map[string]bool {
	t := map[string]bool{}
	if n == nil {
		return t
	}
	if tv := n.get("type"); tv != nil {
		switch tv.kind {
		case kindString:
			t[tv.str] = true
		case kindArray:
			for _, x := range tv.items {
				t[x.str] = true
			}
		}
	}
	return t
}

func (s *schemaJudge[T]) properties() *value {
	root := s.resolve(&s.root)
	if root == nil {
		return nil
	}
	return root.get("properties")
}

func (s *schemaJudge[T]) keyNames() []string {
	props := s.properties()
	if props == nil {
		return nil
	}
	names := make([]string, len(props.members))
	for i, p := range props.members {
		names[i] = p.key
	}
	return names
}

func (s *schemaJudge[T]) keyScore(text string) int { return countNames(text, s.keyNames()) }

func (s *schemaJudge[T]) judgeObject(v *value, maxDepth int) judgement {
	var jd judgement
	props := s.properties()
	if props != nil {
		for _, m := range v.members {
			if props.get(m.key) != nil {
				jd.score++
			}
		}
	}
	if jd.score == 0 {
		for _, k := range [...]string{"error", "refusal"} {
			if e := v.get(k); e != nil {
				jd.refusal = true
				jd.refusalText = e.str
				if e.kind != kindString {
					jd.refusalText = string(appendJSON(nil, e))
				}
				break
			}
		}
	}
	c := s.coerce(v, &s.root, &jd.flags, maxDepth)
	if p, lit, bad := firstNonFinite(&c, ""); bad {
		jd.errs = append(jd.errs, FieldError{p, CodeWrongType, lit + " is not a JSON number; use a finite number"})
	}
	root := s.resolve(&s.root)
	for _, m := range c.members {
		if m.val.kind == kindString && isPlaceholder(m.val.str) && inRequired(root, m.key) {
			jd.placeholder = true
			jd.errs = append(jd.errs, FieldError{m.key, CodePlaceholder,
				fmt.Sprintf("%s holds the placeholder %q; write the real value", m.key, capText(m.val.str, 40))})
		}
	}
	doc := appendJSON(nil, &c)
	if len(jd.errs) == 0 {
		res, err := s.compiled.Validate(gojsonschema.NewBytesLoader(doc))
		if err != nil {
			jd.errs = append(jd.errs, FieldError{"", CodeSyntax, "the answer could not be read: " + err.Error()})
		} else {
			jd.errs = append(jd.errs, schemaErrors(res.Errors())...)
		}
	}
	var out T
	if len(jd.errs) == 0 {
		if err := json.Unmarshal(doc, &out); err != nil {
			jd.errs = append(jd.errs, FieldError{"", CodeWrongType, "the answer does not fit the expected type: " + err.Error()})
		}
	}
	jd.ok = len(jd.errs) == 0
	jd.norm = &c
	jd.answer = out
	return jd
}

func isBoolString(v *value) bool {
	_, fromString, ok := boolValue(v)
	return ok && fromString
}

func inRequired(schema *value, key string) bool {
	if schema == nil {
		return false
	}
	req := schema.get("required")
	return req != nil && hasString(req.items, key)
}

// coerce applies the lossless coercions a schema node makes unambiguous:
// a numeric string where only a number fits, "true"/"false" where only a
// boolean fits, a JSON string of an object where only an object fits, and
// null on an optional property that does not allow null (dropped). The
// value is copied, never changed in place.
func (s *schemaJudge[T]) coerce(v *value, node *value, flags *flagSet, budget int) value {
	node = s.resolve(node)
	if node == nil || budget <= 0 {
		return *v
	}
	types := schemaTypes(node)
	switch v.kind {
	case kindString:
		if len(types) == 0 || types["string"] {
			return *v
		}
		t := strings.TrimSpace(v.str)
		switch {
		case (types["number"] || types["integer"]) && isNumberLiteral(t):
			*flags |= flagNumberString
			return value{kind: kindNumber, str: t}
		case types["boolean"] && isBoolString(v):
			*flags |= flagBoolString
			return value{kind: kindBool, str: strings.ToLower(t)}
		case types["object"]:
			if d, ok := decodeObjectString(v.str, budget-1); ok {
				*flags |= flagObjectString | d.flags
				return s.coerce(&d.v, node, flags, budget-1)
			}
		}
		return *v
	case kindObject:
		props := node.get("properties")
		if props == nil || props.kind != kindObject {
			return *v
		}
		out := value{kind: kindObject, members: make([]member, 0, len(v.members))}
		for _, m := range v.members {
			ps := props.get(m.key)
			if ps == nil {
				out.members = append(out.members, m)
				continue
			}
			if m.val.kind == kindNull && !inRequired(node, m.key) && !schemaTypes(s.resolve(ps))["null"] {
				*flags |= flagNullOptional
				continue
			}
			out.members = append(out.members, member{m.key, s.coerce(&m.val, ps, flags, budget-1)})
		}
		return out
	case kindArray:
		items := node.get("items")
		if items == nil || items.kind != kindObject {
			return *v
		}
		out := value{kind: kindArray, items: make([]value, len(v.items))}
		for i := range v.items {
			out.items[i] = s.coerce(&v.items[i], items, flags, budget-1)
		}
		return out
	}
	return *v
}

// schemaErrors maps gojsonschema's errors to FieldErrors, sorted so the
// verdict does not depend on map order.
func schemaErrors(rs []gojsonschema.ResultError) []FieldError {
	out := make([]FieldError, 0, len(rs))
	for _, r := range rs {
		path := schemaPath(r.Field())
		code := CodeInvalidValue
		msg := r.Description()
		switch r.Type() {
		case "required":
			code = CodeMissingField
			if p, ok := r.Details()["property"].(string); ok {
				path = joinPath(path, p)
				msg = p + " is required"
			}
		case "additional_property_not_allowed":
			code = CodeUnknownField
			if p, ok := r.Details()["property"].(string); ok {
				path = joinPath(path, p)
				msg = fmt.Sprintf("%q is not a field of the answer; remove it", p)
			}
		case "invalid_type":
			code = CodeWrongType
		case "number_gte", "number_gt", "number_lte", "number_lt", "number_multiple_of":
			code = CodeOutOfRange
		case "string_gte":
			if s, ok := r.Value().(string); ok && s == "" {
				code = CodeEmptyField
			}
		}
		if code != CodeMissingField && code != CodeUnknownField {
			if val := r.Value(); val != nil {
				if b, err := json.Marshal(val); err == nil {
					msg += "; got " + capText(string(b), 60)
				}
			}
		}
		out = append(out, FieldError{Path: path, Code: code, Message: msg})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// schemaPath turns gojsonschema's "(root)" and "a.b.0" into "" and "a.b[0]".
func schemaPath(field string) string {
	if field == "(root)" || field == "" {
		return ""
	}
	field = strings.TrimPrefix(field, "(root).")
	var b strings.Builder
	for i, part := range strings.Split(field, ".") {
		if part != "" && strings.Trim(part, "0123456789") == "" {
			b.WriteString("[" + part + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}
