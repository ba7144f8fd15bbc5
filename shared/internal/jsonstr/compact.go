package jsonstr

// maxCompactDepth is encoding/json's limit on nesting: text nested deeper
// is not valid JSON to it.
const maxCompactDepth = 10000

// AppendCompact appends src, one JSON value, without the white space
// outside its strings, as encoding/json writes a json.RawMessage: with
// html set, '<', '>' and '&' as \u003c, \u003e and \u0026, and U+2028
// and U+2029 as \u2028 and \u2029; the strings' other bytes as they are
// (invalid UTF-8 too). It reports false, with dst as it was, when src is
// not what json.Valid accepts (encoding/json then fails): the caller
// takes encoding/json's own path for its error.
func AppendCompact(dst, src []byte, html bool) ([]byte, bool) {
	c := compactor{src: src, dst: dst, html: html}
	c.i = SkipSpace(src, 0)
	if !c.value(0) {
		return dst, false
	}
	if SkipSpace(src, c.i) != len(src) {
		return dst, false
	}
	return c.dst, true
}

type compactor struct {
	src  []byte
	i    int
	dst  []byte
	html bool
}

func (c *compactor) space() { c.i = SkipSpace(c.src, c.i) }

func (c *compactor) value(depth int) bool {
	if c.i >= len(c.src) {
		return false
	}
	switch b := c.src[c.i]; {
	case b == '{':
		return c.object(depth)
	case b == '[':
		return c.array(depth)
	case b == '"':
		return c.str()
	case b == '-' || ('0' <= b && b <= '9'):
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return false
}

func (c *compactor) object(depth int) bool {
	if depth >= maxCompactDepth {
		return false
	}
	c.dst = append(c.dst, '{')
	c.i++
	c.space()
	if c.i < len(c.src) && c.src[c.i] == '}' {
		c.dst = append(c.dst, '}')
		c.i++
		return true
	}
	for {
		if c.i >= len(c.src) || c.src[c.i] != '"' || !c.str() {
			return false
		}
		c.space()
		if c.i >= len(c.src) || c.src[c.i] != ':' {
			return false
		}
		c.dst = append(c.dst, ':')
		c.i++
		c.space()
		if !c.value(depth + 1) {
			return false
		}
		next, more, ok := afterMember(c.src, c.i, '}')
		if !ok {
			return false
		}
		c.dst = append(c.dst, c.src[next-1])
		c.i = next
		if !more {
			return true
		}
		c.space()
	}
}

func (c *compactor) array(depth int) bool {
	if depth >= maxCompactDepth {
		return false
	}
	c.dst = append(c.dst, '[')
	c.i++
	c.space()
	if c.i < len(c.src) && c.src[c.i] == ']' {
		c.dst = append(c.dst, ']')
		c.i++
		return true
	}
	for {
		if !c.value(depth + 1) {
			return false
		}
		next, more, ok := afterMember(c.src, c.i, ']')
		if !ok {
			return false
		}
		c.dst = append(c.dst, c.src[next-1])
		c.i = next
		if !more {
			return true
		}
		c.space()
	}
}

// str copies a string, its opening quote at c.i, escaping for html.
func (c *compactor) str() bool {
	start := c.i
	c.i++
	for c.i < len(c.src) {
		b := c.src[c.i]
		switch {
		case b == '"':
			c.i++
			c.dst = append(c.dst, c.src[start:c.i]...)
			return true
		case b < 0x20:
			return false
		case b == '\\':
			c.i++
			if c.i >= len(c.src) {
				return false
			}
			switch c.src[c.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i++
			case 'u':
				if c.i+4 >= len(c.src) {
					return false
				}
				for _, h := range c.src[c.i+1 : c.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				c.i += 5
			default:
				return false
			}
		case c.html && (b == '<' || b == '>' || b == '&'):
			c.dst = append(c.dst, c.src[start:c.i]...)
			c.dst = append(c.dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			c.i++
			start = c.i
		case c.html && b == 0xE2 && c.i+2 < len(c.src) && c.src[c.i+1] == 0x80 && c.src[c.i+2]&^1 == 0xA8:
			c.dst = append(c.dst, c.src[start:c.i]...)
			c.dst = append(c.dst, '\\', 'u', '2', '0', '2', hexDigits[c.src[c.i+2]&0xF])
			c.i += 3
			start = c.i
		default:
			c.i++
		}
	}
	return false
}

// number copies a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *compactor) number() bool {
	start := c.i
	if c.src[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(c.src) && c.src[c.i] == '0':
		c.i++
	case c.i < len(c.src) && '1' <= c.src[c.i] && c.src[c.i] <= '9':
		c.digits()
	default:
		return false
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if !c.digits() {
			return false
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if !c.digits() {
			return false
		}
	}
	c.dst = append(c.dst, c.src[start:c.i]...)
	return true
}

// digits skips one or more decimal digits; false when there is none.
func (c *compactor) digits() bool {
	start := c.i
	for c.i < len(c.src) && '0' <= c.src[c.i] && c.src[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}

func (c *compactor) literal(lit string) bool {
	if len(c.src)-c.i < len(lit) || string(c.src[c.i:c.i+len(lit)]) != lit {
		return false
	}
	c.dst = append(c.dst, lit...)
	c.i += len(lit)
	return true
}
