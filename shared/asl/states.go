package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
)

// States is the "States" object of a state machine, a branch or an item
// processor: states by name, kept in the order they were added (or parsed),
// which is the order they are written in.
type States struct {
	names  []string
	byName map[string]State
}

// Add appends a state. It fails if the name is empty, already present, or the
// state is nil.
func (s *States) Add(name string, st State) error {
	if name == "" {
		return errors.New("add state: empty name")
	}
	if st == nil {
		return fmt.Errorf("add state %q: nil state", name)
	}
	if _, dup := s.byName[name]; dup {
		return fmt.Errorf("add state %q: name already used", name)
	}
	if s.byName == nil {
		s.byName = make(map[string]State)
	}
	s.names = append(s.names, name)
	s.byName[name] = st
	return nil
}

// Replace swaps the state stored under an existing name, keeping its place.
func (s *States) Replace(name string, st State) error {
	if _, ok := s.byName[name]; !ok || st == nil {
		return fmt.Errorf("replace state %q: no such state", name)
	}
	s.byName[name] = st
	return nil
}

// Get returns the state named name.
func (s States) Get(name string) (State, bool) {
	st, ok := s.byName[name]
	return st, ok
}

// Names returns the state names in order. The slice is a copy.
func (s States) Names() []string { return append([]string(nil), s.names...) }

// Len returns the number of states.
func (s States) Len() int { return len(s.names) }

// All iterates over the states in order.
func (s States) All() iter.Seq2[string, State] {
	return func(yield func(string, State) bool) {
		for _, n := range s.names {
			if !yield(n, s.byName[n]) {
				return
			}
		}
	}
}

// MarshalJSON writes the states as an object in order.
func (s States) MarshalJSON() ([]byte, error) {
	return s.appendJSON(make([]byte, 0, 2048*len(s.names)))
}

// appendJSON appends the states to b as MarshalJSON writes them.
func (s States) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, n := range s.names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, n)
		b = append(b, ':')
		var err error
		if b, err = appendState(b, s.byName[n]); err != nil {
			return nil, fmt.Errorf("state %q: %w", n, err)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a States object, keeping the document's order. Errors
// name the state they are about.
func (s *States) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("States must be an object")
	}
	*s = States{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("state %q: %w", name, err)
		}
		if _, dup := s.byName[name]; dup {
			return fmt.Errorf("state %q: defined twice", name)
		}
		st, err := decodeState(raw)
		if err != nil {
			var se *stateError
			if errors.As(err, &se) {
				return err
			}
			return &stateError{name: name, err: err}
		}
		if err := s.Add(name, st); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// stateError names the state a decoding error is about. Nested states wrap
// their own, so the innermost name wins.
type stateError struct {
	name string
	err  error
}

func (e *stateError) Error() string { return fmt.Sprintf("state %q: %v", e.name, e.err) }
func (e *stateError) Unwrap() error { return e.err }

func decodeState(raw json.RawMessage) (State, error) {
	typ, ok := leadingType(raw)
	if !ok {
		var head struct{ Type string }
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, cleanJSONError(err)
		}
		typ = head.Type
	}
	var st State
	switch typ {
	case TypePass:
		st = &Pass{}
	case TypeTask:
		st = &Task{}
	case TypeChoice:
		st = &Choice{}
	case TypeParallel:
		st = &Parallel{}
	case TypeMap:
		st = &Map{}
	case TypeWait:
		st = &Wait{}
	case TypeSucceed:
		st = &Succeed{}
	case TypeFail:
		st = &Fail{}
	case "":
		return nil, errors.New("missing Type")
	default:
		return nil, fmt.Errorf("unknown Type %q", typ)
	}
	// Decode into the concrete struct with Type accepted and any other
	// unknown field rejected.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var (
		err error
		got string // the Type the decode read: the last one given
	)
	switch v := st.(type) {
	case *Pass:
		type alias Pass
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Task:
		type alias Task
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Choice:
		type alias Choice
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Parallel:
		type alias Parallel
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Map:
		type alias Map
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Wait:
		type alias Wait
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Succeed:
		type alias Succeed
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	case *Fail:
		type alias Fail
		w := struct {
			Type string
			*alias
		}{alias: (*alias)(v)}
		err, got = dec.Decode(&w), w.Type
	}
	if err != nil {
		return nil, cleanJSONError(err)
	}
	if got != typ {
		return nil, fmt.Errorf("two Types given, %q and %q", typ, got)
	}
	return st, nil
}

// leadingType reads the Type of a state whose first member is "Type" with
// a plain string value (as Marshal and the compiler write every state)
// without decoding the rest; ok is false for any other shape, which the
// caller decodes in full. A state it reads is still decoded in full
// afterwards, which checks the whole object; decodeState refuses a second
// Type that differs from the first.
func leadingType(raw []byte) (string, bool) {
	rest, ok := skipPrefix(raw, '{')
	if !ok {
		return "", false
	}
	rest, ok = cutPrefix(rest, `"Type"`)
	if !ok {
		return "", false
	}
	if rest, ok = skipPrefix(rest, ':'); !ok {
		return "", false
	}
	if rest, ok = skipPrefix(rest, '"'); !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// skipPrefix skips JSON whitespace, then c.
func skipPrefix(b []byte, c byte) ([]byte, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != c {
		return nil, false
	}
	return b[1:], true
}

// cutPrefix skips JSON whitespace, then p.
func cutPrefix(b []byte, p string) ([]byte, bool) {
	return bytes.CutPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(p))
}

// cleanJSONError rewrites encoding/json's messages into ones about the
// definition rather than Go types.
func cleanJSONError(err error) error {
	var se *stateError
	if errors.As(err, &se) {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.TrimPrefix(te.Field, "alias.")
		if field == "" {
			field = "value"
		}
		return fmt.Errorf("%s: %s is not a valid %s", field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", rest)
	}
	return errors.New(strings.TrimPrefix(msg, "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "number"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice":
		return "array"
	case "struct", "map":
		return "object"
	}
	return goKind
}

// encode marshals v without escaping <, > and &, which JSONata uses.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// MarshalJSON writes the machine's fields in a fixed order. The states,
// which are nearly all of a definition, are written straight into the
// result rather than handed back through encoding/json, which would check
// and copy them again.
func (m *StateMachine) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2048*m.States.Len()+256)
	b = append(b, '{')
	field := func(name string, v any) error {
		e, err := encode(v)
		if err != nil {
			return err
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = append(b, e...)
		b = append(b, ',')
		return nil
	}
	if m.Comment != "" {
		if err := field("Comment", m.Comment); err != nil {
			return nil, err
		}
	}
	if m.QueryLanguage != "" {
		if err := field("QueryLanguage", m.QueryLanguage); err != nil {
			return nil, err
		}
	}
	if err := field("StartAt", m.StartAt); err != nil {
		return nil, err
	}
	if m.TimeoutSeconds != 0 {
		if err := field("TimeoutSeconds", m.TimeoutSeconds); err != nil {
			return nil, err
		}
	}
	b = append(b, `"States":`...)
	b, err := m.States.appendJSON(b)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a definition without validating it; see Parse.
func (m *StateMachine) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v struct {
		Comment        string
		QueryLanguage  string
		StartAt        string
		TimeoutSeconds int
		Version        string
		States         States
	}
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return errors.New("empty definition")
		}
		return cleanJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON after the definition")
	}
	*m = StateMachine{Comment: v.Comment, QueryLanguage: v.QueryLanguage, StartAt: v.StartAt,
		TimeoutSeconds: v.TimeoutSeconds, States: v.States}
	return nil
}

// Marshal returns the definition as indented JSON (two spaces), states in
// the order they were added and each state's fields in a fixed order, so the
// same machine always yields the same bytes. It does not validate.
func Marshal(m *StateMachine) ([]byte, error) {
	compact, err := m.MarshalJSON() // compact already: encoding/json would only check and copy it
	if err != nil {
		return nil, fmt.Errorf("marshal state machine: %w", err)
	}
	return indent(compact), nil
}

// indent returns compact JSON, as encoding/json writes it (no whitespace
// outside strings), indented as json.Indent(dst, compact, "", "  ")
// indents it: a newline and two spaces per level before each member and
// element and before a non-empty object's or array's end, ": " between a
// key and its value, empty objects and arrays as {} and []. It reads the
// text once, copying strings and numbers whole, where json.Indent runs
// its validating scanner over every byte.
func indent(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/2)
	depth := 0
	newline := func(depth int) {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(compact); i++ {
		switch c := compact[i]; c {
		case '"':
			j := i + 1
			for j < len(compact) && compact[j] != '"' {
				if compact[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, compact[i:min(j+1, len(compact))]...)
			i = j
		case '{', '[':
			if i+1 < len(compact) && (compact[i+1] == '}' || compact[i+1] == ']') {
				out = append(out, c, compact[i+1])
				i++
				continue
			}
			out = append(out, c)
			depth++
			newline(depth)
		case '}', ']':
			depth--
			newline(depth)
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline(depth)
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return out
}

// Parse decodes and validates a definition. The error is an ErrorList when
// the definition decodes but breaks the rules Validate checks.
func Parse(data []byte) (*StateMachine, error) {
	m, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("parse state machine: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Decode reads a definition without validating it, as json.Unmarshal
// into a StateMachine does. A definition written as Marshal writes one is
// read in one pass by hand (fastDecode); any other text, and every text
// with an error, is read by UnmarshalJSON, less the pass over the whole
// text that json.Unmarshal makes before decoding (the decoder checks what
// it reads). Errors name the state they are about.
func Decode(data []byte) (*StateMachine, error) {
	if m, err := fastDecode(data); err == nil {
		return m, nil
	}
	return slowDecode(data)
}

// slowDecode is Decode by encoding/json alone.
func slowDecode(data []byte) (*StateMachine, error) {
	var m StateMachine
	if err := m.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return &m, nil
}
