package llmoutput

import (
	"math"
	"strconv"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// kind is the type of a parsed JSON value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
	kindNonFinite // NaN, Infinity or a literal beyond float64: never valid, kept for messages
)

func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindNumber:
		return "a number"
	case kindString:
		return "a string"
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	}
	return "a non-finite number"
}

// value is a parsed JSON value that keeps the order of object members.
type value struct {
	kind    kind
	str     string // string content; number literal; "true"/"false"; the non-finite literal
	items   []value
	members []member
}

type member struct {
	key string
	val value
}

// get returns the member named key, or nil.
func (v *value) get(key string) *value {
	for i := range v.members {
		if v.members[i].key == key {
			return &v.members[i].val
		}
	}
	return nil
}

// float returns the float64 of a number value (finite by construction).
func (v *value) float() float64 {
	f, _ := strconv.ParseFloat(v.str, 64)
	return f
}

// equalValue reports whether a and b are the same JSON value: object
// members compare as sets, numbers by their float64 value.
func equalValue(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindNumber:
		return a.str == b.str || a.float() == b.float()
	case kindArray:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !equalValue(&a.items[i], &b.items[i]) {
				return false
			}
		}
		return true
	case kindObject:
		if len(a.members) != len(b.members) {
			return false
		}
		for i := range a.members {
			m := &a.members[i]
			o := b.get(m.key)
			if o == nil || !equalValue(&m.val, o) {
				return false
			}
		}
		return true
	}
	return a.str == b.str
}

// appendJSON appends the compact JSON encoding of v to dst. Strings are
// valid UTF-8 by construction (the parser replaces invalid bytes).
func appendJSON(dst []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindBool, kindNumber:
		return append(dst, v.str...)
	case kindString:
		return appendString(dst, v.str)
	case kindArray:
		dst = append(dst, '[')
		for i := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, &v.items[i])
		}
		return append(dst, ']')
	case kindObject:
		dst = append(dst, '{')
		for i := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v.members[i].key)
			dst = append(dst, ':')
			dst = appendJSON(dst, &v.members[i].val)
		}
		return append(dst, '}')
	}
	// Non-finite values never reach an encoder: the judges reject them.
	return append(dst, "null"...)
}

// appendString appends s as a JSON string. It escapes only what JSON
// requires (plus U+2028/U+2029), so the text stays readable.
func appendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s, false) }

// toAny converts v to the values encoding/json produces: map[string]any,
// []any, float64, string, bool, nil.
func toAny(v *value) any {
	switch v.kind {
	case kindBool:
		return v.str == "true"
	case kindNumber:
		return v.float()
	case kindString:
		return v.str
	case kindArray:
		out := make([]any, len(v.items))
		for i := range v.items {
			out[i] = toAny(&v.items[i])
		}
		return out
	case kindObject:
		out := make(map[string]any, len(v.members))
		for i := range v.members {
			out[v.members[i].key] = toAny(&v.members[i].val)
		}
		return out
	}
	return nil
}

// firstNonFinite returns the path (dotted, under path) and literal of
// the first non-finite number inside v. The path is built only when one
// is found.
func firstNonFinite(v *value, path string) (string, string, bool) {
	switch v.kind {
	case kindNonFinite:
		return path, v.str, true
	case kindArray:
		for i := range v.items {
			if p, lit, ok := firstNonFinite(&v.items[i], ""); ok {
				return composePath(indexPath(path, i), p), lit, true
			}
		}
	case kindObject:
		for i := range v.members {
			if p, lit, ok := firstNonFinite(&v.members[i].val, ""); ok {
				return composePath(joinPath(path, v.members[i].key), p), lit, true
			}
		}
	}
	return "", "", false
}

// joinPath and indexPath build the dotted paths of FieldError.
func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// composePath appends the relative path rel ("a.b", "[2].c") to prefix.
func composePath(prefix, rel string) string {
	switch {
	case rel == "":
		return prefix
	case prefix == "" || rel[0] == '[':
		return prefix + rel
	}
	return prefix + "." + rel
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// isFiniteLiteral reports whether a JSON number literal fits a float64.
func isFiniteLiteral(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}
