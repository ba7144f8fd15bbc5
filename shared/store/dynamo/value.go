package dynamo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Value is one attribute value as DynamoDB's JSON protocol writes it: a
// single-member object naming the type, {"S":"text"}, {"N":"12.5"},
// {"SS":["a","b"]} or {"L":[…]}. Those are the types the store writes;
// any other type (BOOL, NULL, M, B, NS, BS) decodes to a value of that
// type that none of the accessors accept. The zero Value is no value.
type Value struct {
	typ  string // "S", "N", "SS", "L", another type's name, or "" for none
	text string // S and N
	set  []string
	list []Value
}

// Item is an item, or a key, or a set of expression values: attribute
// name to value.
type Item map[string]Value

// S returns a string value.
func S(s string) Value { return Value{typ: "S", text: s} }

// N returns a number value; s is the number's decimal text.
func N(s string) Value { return Value{typ: "N", text: s} }

// SS returns a string set value. DynamoDB refuses an empty set.
func SS(s ...string) Value { return Value{typ: "SS", set: s} }

// L returns a list value.
func L(v ...Value) Value { return Value{typ: "L", list: v} }

// Type returns the value's type name ("S", "N", …), "" for the zero Value.
func (v Value) Type() string { return v.typ }

// Str returns a string value's text.
func (v Value) Str() (string, bool) { return v.text, v.typ == "S" }

// Num returns a number value's decimal text.
func (v Value) Num() (string, bool) { return v.text, v.typ == "N" }

// StrSet returns a string set's members.
func (v Value) StrSet() ([]string, bool) { return v.set, v.typ == "SS" }

// List returns a list's elements.
func (v Value) List() ([]Value, bool) { return v.list, v.typ == "L" }

// Equal reports whether v and w are the same value (sets compared in
// order, as written).
func (v Value) Equal(w Value) bool {
	return v.typ == w.typ && v.text == w.text && slices.Equal(v.set, w.set) &&
		slices.EqualFunc(v.list, w.list, Value.Equal)
}

// String formats v for messages and test failures.
func (v Value) String() string {
	b, err := v.MarshalJSON()
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// MarshalJSON writes v in DynamoDB's JSON form.
func (v Value) MarshalJSON() ([]byte, error) {
	var member any
	switch v.typ {
	case "S", "N":
		member = v.text
	case "SS":
		if len(v.set) == 0 {
			return nil, fmt.Errorf("empty string set")
		}
		member = v.set
	case "L":
		member = v.list
		if v.list == nil {
			member = []Value{}
		}
	case "":
		return nil, fmt.Errorf("no attribute value")
	default:
		return nil, fmt.Errorf("attribute type %s is only read, never written", v.typ)
	}
	b, err := json.Marshal(member)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(v.typ)+5)
	out = append(out, `{"`...)
	out = append(out, v.typ...)
	out = append(out, `":`...)
	out = append(out, b...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads a value in DynamoDB's JSON form.
func (v *Value) UnmarshalJSON(b []byte) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("attribute value: %w", err)
	}
	if len(doc) != 1 {
		return fmt.Errorf("attribute value %s: want exactly one type member", abbreviate(b))
	}
	for typ, raw := range doc {
		*v = Value{typ: typ}
		var err error
		switch typ {
		case "S", "N":
			err = json.Unmarshal(raw, &v.text)
		case "SS":
			err = json.Unmarshal(raw, &v.set)
		case "L":
			v.list = []Value{}
			err = json.Unmarshal(raw, &v.list)
		case "":
			err = fmt.Errorf("empty type name")
		}
		if err != nil {
			return fmt.Errorf("attribute value of type %s: %w", typ, err)
		}
	}
	return nil
}

func abbreviate(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
