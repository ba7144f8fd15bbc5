package jsonstr

import "iter"

// Outside yields the index and value of each byte of raw, JSON text, that
// is neither inside a string nor one of its quotes: the structure and the
// other values' bytes (a size without the whitespace, a nesting depth).
// raw need not be valid; a string left open runs to the end.
func Outside(raw []byte) iter.Seq2[int, byte] {
	return func(yield func(int, byte) bool) {
		inString, escaped := false, false
		for i, c := range raw {
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
				}
			case c == '"':
				inString = true
			default:
				if !yield(i, c) {
					return
				}
			}
		}
	}
}
