package jsonstr

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// maxDepth is the nesting Decode reads itself; deeper text is left to
// encoding/json (which refuses past 10,000 levels).
const maxDepth = 1000

// Decode returns the value json.Unmarshal decodes b into an any: nil,
// bool, float64, string, []any or map[string]any (a repeated key's last
// value kept), with the same error when b is not valid JSON or holds a
// number a float64 cannot hold. It reads valid text in one pass, without
// encoding/json's separate validating scan and reflection (about twice as
// fast on the engine's Task results); text it does not read itself (a
// string with a \u escape or bytes that are not UTF-8, nesting deeper
// than maxDepth) and every error go to json.Unmarshal, which FuzzDecode
// holds it to.
func Decode(b []byte) (any, error) {
	d := decoder{b: b}
	v, ok := d.value(0)
	if ok {
		d.space()
		ok = d.i == len(b)
	}
	if ok {
		return v, nil
	}
	var u any
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, err
	}
	return u, nil
}

// decoder reads one JSON text; a false ok means: leave it to
// encoding/json.
type decoder struct {
	b   []byte
	i   int
	buf []byte // an escaped string's bytes
}

func (d *decoder) space() { d.i = SkipSpace(d.b, d.i) }

// SkipSpace returns the index of the first byte of b from i on that is
// not JSON whitespace (space, tab, newline, carriage return), or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (d *decoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		if depth >= maxDepth {
			return nil, false
		}
		return d.object(depth + 1)
	case c == '[':
		if depth >= maxDepth {
			return nil, false
		}
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.string()
		return s, ok
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *decoder) literal(s string) bool {
	if len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

func (d *decoder) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		var more bool
		if d.i, more, ok = afterMember(d.b, d.i, '}'); !ok {
			return nil, false
		}
		if !more {
			return m, true
		}
	}
}

func (d *decoder) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		var more bool
		if d.i, more, ok = afterMember(d.b, d.i, ']'); !ok {
			return nil, false
		}
		if !more {
			return a, true
		}
	}
}

// afterMember reads, from b[i:], the white space and then the ',' or the
// close that follow a member of an object or an array: next is the index
// past it, more is true for a ','; ok is false for anything else.
func afterMember(b []byte, i int, close byte) (next int, more, ok bool) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return i + 1, true, true
	case close:
		return i + 1, false, true
	}
	return i, false, false
}

// string reads a string whose escapes are all short ones (\" \\ \/ \b
// \f \n \r \t) and whose bytes are UTF-8.
func (d *decoder) string() (string, bool) {
	d.i++ // "
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped reads the rest of a string from its first escape on, the
// string having begun at start.
func (d *decoder) escaped(start int) (string, bool) {
	buf := append(d.buf[:0], d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			d.buf = buf
			if !utf8.Valid(buf) {
				return "", false
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		c, ok := Unescape(d.b[d.i+1])
		if !ok { // \u and what is not JSON
			return "", false
		}
		buf = append(buf, c)
		d.i += 2
	}
	return "", false
}

// number reads a number in JSON's grammar that a float64 holds.
func (d *decoder) number() (any, bool) {
	start := d.i
	if d.b[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.b) && d.b[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

// Unescape returns the byte a JSON escape of one letter stands for (the
// letter after the backslash: " \ / b f n r t), or false for any other
// (\u and what is not JSON).
func Unescape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
