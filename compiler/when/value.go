package when

// kind is the JSON type of a literal or value.
type kind uint8

const (
	kInvalid kind = iota
	kNone
	kBool
	kNumber
	kString
	kList
)

func kindOf(v any) kind {
	switch v.(type) {
	case nil:
		return kNone
	case bool:
		return kBool
	case float64:
		return kNumber
	case string:
		return kString
	case []any:
		return kList
	}
	return kInvalid
}

func kindName(k kind) string {
	switch k {
	case kNone:
		return "none"
	case kBool:
		return "a boolean"
	case kNumber:
		return "a number"
	case kString:
		return "a string"
	case kList:
		return "a list"
	}
	return "an unsupported value"
}

// validLiteral reports whether v is a value a Literal may hold.
func validLiteral(v any) bool {
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return x == x && x-x == 0 // finite
	case []any:
		for _, e := range x {
			if !validLiteral(e) {
				return false
			}
		}
		return true
	}
	return false
}

// Equal is the when: language's == between two JSON values, as
// encoding/json decodes them into an any (nil, bool, float64, string,
// []any, map[string]any): null equals only null, booleans never equal
// numbers (true != 1), numbers compare by value (1 == 1.0), a string never
// equals a number ("1" != 1), and lists and objects compare element by
// element and key by key. A value of any other Go type equals nothing.
// The state machine's lowering of == folds literals with it, and a
// deterministic check's expect: evaluates with it (package
// shared/steprun), so both read == alike.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// Truthy is a JSON value's truth value in the when: language, Python's
// (Jinja's): false for null, false, 0 (and 0.0), "", [] and {}; true for
// every other boolean, number, string, list and object. A value of any
// other Go type is false. Undefined (a path that does not resolve) is no
// value: the language reads it as false, and callers check for it before
// they ask.
func Truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}
