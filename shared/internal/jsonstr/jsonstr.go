// Package jsonstr writes Go strings as JSON string literals, float64
// numbers, decoded values and JSON texts (checked and compacted, as a
// json.RawMessage: AppendCompact) as encoding/json does, and decodes JSON
// into an any as it does (Decode), without reflection, for the packages
// that handle JSON by hand on hot paths (the engine's events, checkpoints
// and Task results, the LLMOutput contract's values, a step's context, a
// Task's answer, a step record's digest).
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plainASCII and plainHTML mark the bytes Append copies as they are: the
// ASCII characters JSON needs no escape for, without and with '<', '>'
// and '&' escaped (a table look-up per byte: the engine writes every
// string of a step's events and checkpoint through Append).
var plainASCII, plainHTML = func() (plain, html [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		plain[b] = b != '"' && b != '\\'
		html[b] = plain[b] && b != '<' && b != '>' && b != '&'
	}
	return plain, html
}()

// Append appends s to dst as a quoted JSON string, escaping as
// encoding/json does: '"' and '\', control characters (\b \f \n \r \t
// short, others as \u00XX), invalid UTF-8 as \ufffd, and U+2028 and
// U+2029. With html set it also escapes '<', '>' and '&', as
// encoding/json does by default.
func Append(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	plain := &plainASCII
	if html {
		plain = &plainHTML
	}
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if plain[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
