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

// litEqual is == between two literal values: deep, with booleans never
// equal to numbers.
func litEqual(a, b any) bool {
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
			if !litEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// litTruthy is Python's truth value of a literal.
func litTruthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	}
	return false
}
