package llmoutput

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// lenient parses JSON with the lossless repairs of the contract: trailing
// commas, comments, single-quoted strings, unquoted identifier keys,
// Python literals, raw control characters inside strings and \' escapes.
// It reads src[pos:end] in one pass; each repair sets a flag.
type lenient struct {
	src      string
	pos      int
	end      int
	depth    int
	maxDepth int
	flags    flagSet
	path     []pathElem // keys and indexes down to the current value, for messages
	dups     []FieldError
	err      *FieldError // the first fatal error (syntax or depth)

	// Members and items of the open containers: a container takes an
	// exact-size copy when it closes, one allocation each. The stacks
	// double when full (append grows large slices by only a quarter).
	members []member
	items   []value
}

// pathElem is a key, or an index when idx >= 0.
type pathElem struct {
	key string
	idx int
}

// stacks are a parse's working stacks (members, items, path), kept
// between parses: a parse allocated them afresh, 1.4 KB for the members
// of the first object alone, most of a short reply's parse.
type stacks struct {
	members []member
	items   []value
	path    []pathElem
}

var stackPool = sync.Pool{New: func() any { return new(stacks) }}

// maxPooledStack bounds the entries of a stack kept for the next parse:
// a very large reply's stacks are left to the collector.
const maxPooledStack = 1024

// parseLenient parses the single JSON value in src[start:end]; trailing
// whitespace and comments are allowed, anything else is a syntax error.
func parseLenient(src string, start, end, maxDepth int) (value, flagSet, []FieldError, *FieldError) {
	s := stackPool.Get().(*stacks)
	p := lenient{src: src, pos: start, end: end, maxDepth: maxDepth, members: s.members, items: s.items, path: s.path}
	defer p.release(s)
	var v value
	p.skipSpace()
	if p.err == nil {
		v = p.parseValue()
	}
	if p.err == nil {
		p.skipSpace()
		if p.err == nil && p.pos < p.end {
			p.fail("unexpected %s after the end of the JSON value", p.describe())
		}
	}
	return v, p.flags, p.dups, p.err
}

// release hands the parse's stacks back to the pool, emptied (no text of
// this reply stays reachable from it), unless one grew past
// maxPooledStack.
func (p *lenient) release(s *stacks) {
	if !p.poolable() {
		return
	}
	clear(p.members[:cap(p.members)])
	clear(p.items[:cap(p.items)])
	clear(p.path[:cap(p.path)])
	s.members, s.items, s.path = p.members[:0], p.items[:0], p.path[:0]
	stackPool.Put(s)
}

// poolable reports whether every stack of the parse is small enough to
// keep: at most maxPooledStack entries.
func (p *lenient) poolable() bool {
	return cap(p.members) <= maxPooledStack && cap(p.items) <= maxPooledStack && cap(p.path) <= maxPooledStack
}

func (p *lenient) curPath() string {
	path := ""
	for _, e := range p.path {
		if e.idx >= 0 {
			path = indexPath(path, e.idx)
		} else {
			path = joinPath(path, e.key)
		}
	}
	return path
}

// fail records the first fatal error, with its line and column.
func (p *lenient) fail(format string, args ...any) {
	if p.err != nil {
		return
	}
	line, col := jsonstr.LineCol(p.src, p.pos)
	p.err = &FieldError{
		Path:    p.curPath(),
		Code:    CodeSyntax,
		Message: fmt.Sprintf("line %d, column %d: ", line, col) + fmt.Sprintf(format, args...),
	}
}

// describe names the byte at pos for a message.
func (p *lenient) describe() string {
	if p.pos >= p.end {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:p.end])
	if r < 0x20 || r == utf8.RuneError {
		return fmt.Sprintf("byte %#x", p.src[p.pos])
	}
	return strconv.QuoteRune(r)
}

// skipSpace skips whitespace and comments (a repair: comments are not JSON).
func (p *lenient) skipSpace() {
	for p.pos < p.end {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		case '/':
			if p.pos+1 >= p.end {
				return
			}
			switch p.src[p.pos+1] {
			case '/':
				nl := strings.IndexByte(p.src[p.pos:p.end], '\n')
				if nl < 0 {
					p.pos = p.end
				} else {
					p.pos += nl + 1
				}
			case '*':
				cl := strings.Index(p.src[p.pos+2:p.end], "*/")
				if cl < 0 {
					p.fail("unclosed /* comment")
					p.pos = p.end
					return
				}
				p.pos += 2 + cl + 2
			default:
				return
			}
			p.flags |= flagComments
		default:
			return
		}
	}
}

func (p *lenient) parseValue() value {
	if p.pos >= p.end {
		p.fail("unexpected end of input, a value was expected")
		return value{}
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.parseObject()
	case c == '[':
		return p.parseArray()
	case c == '"' || c == '\'':
		s, ok := p.parseString()
		if !ok {
			return value{}
		}
		return value{kind: kindString, str: s}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.parseNumber()
	case isIdentStart(c):
		return p.parseLiteral()
	}
	p.fail("unexpected %s, a value was expected", p.describe())
	return value{}
}

func (p *lenient) enter() bool {
	p.depth++
	if p.depth > p.maxDepth {
		p.err = &FieldError{Code: CodeTooDeep,
			Message: fmt.Sprintf("the JSON nests deeper than %d levels", p.maxDepth)}
		return false
	}
	return true
}

func (p *lenient) parseObject() value {
	if !p.enter() {
		return value{}
	}
	p.pos++ // '{'
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	for n := 0; ; n++ {
		p.skipSpace()
		if p.err != nil {
			return value{}
		}
		if p.pos >= p.end {
			p.fail("unexpected end of input inside an object")
			return value{}
		}
		if p.src[p.pos] == '}' {
			p.pos++
			break
		}
		if n > 0 {
			if p.src[p.pos] != ',' {
				hint := ""
				if p.members[len(p.members)-1].val.kind == kindString && isIdentPart(p.src[p.pos]) {
					hint = ` (a quote inside a string must be escaped as \")`
				}
				p.fail("unexpected %s after a member, a comma or } was expected%s", p.describe(), hint)
				return value{}
			}
			p.pos++
			p.skipSpace()
			if p.err != nil {
				return value{}
			}
			if p.pos < p.end && p.src[p.pos] == '}' {
				p.flags |= flagTrailingComma
				p.pos++
				break
			}
		}
		if p.pos >= p.end {
			p.fail("unexpected end of input inside an object")
			return value{}
		}
		key, ok := p.parseKey()
		if !ok {
			return value{}
		}
		p.skipSpace()
		if p.err != nil {
			return value{}
		}
		if p.pos >= p.end || p.src[p.pos] != ':' {
			p.fail("unexpected %s after key %q, a colon was expected", p.describe(), key)
			return value{}
		}
		p.pos++
		p.skipSpace()
		if p.err != nil {
			return value{}
		}
		p.path = append(p.path, pathElem{key: key, idx: -1})
		val := p.parseValue()
		p.path = p.path[:len(p.path)-1]
		if p.err != nil {
			return value{}
		}
		if len(p.members) == cap(p.members) {
			p.members = append(make([]member, 0, max(2*cap(p.members), 16)), p.members...)
		}
		p.members = append(p.members, member{key: key, val: val})
	}
	p.depth--
	v := value{kind: kindObject}
	if n := len(p.members) - base; n > 0 {
		v.members = make([]member, n)
		copy(v.members, p.members[base:])
		if n > 1 {
			v.members = p.dedupe(v.members)
		}
	}
	return v
}

// dedupe removes repeated keys that carry the same value as their first
// occurrence (a flagged repair) and records an error for repeated keys
// with different values. The first occurrence keeps its place.
func (p *lenient) dedupe(ms []member) []member {
	var index map[string]int
	if len(ms) > 16 {
		index = make(map[string]int, len(ms))
	}
	var out []member // nil until the first repeated key
	for i := range ms {
		j := -1
		if index != nil {
			if k, ok := index[ms[i].key]; ok {
				j = k
			} else {
				index[ms[i].key] = i
			}
		} else {
			for k := 0; k < i; k++ {
				if ms[k].key == ms[i].key {
					j = k
					break
				}
			}
		}
		if j < 0 {
			if out != nil {
				out = append(out, ms[i])
			}
			continue
		}
		if out == nil {
			out = append(make([]member, 0, len(ms)), ms[:i]...)
		}
		if equalValue(&ms[j].val, &ms[i].val) {
			p.flags |= flagDuplicateKey
			continue
		}
		p.dups = append(p.dups, FieldError{
			Path:    joinPath(p.curPath(), ms[i].key),
			Code:    CodeDuplicateKey,
			Message: fmt.Sprintf("key %q appears more than once with different values; give it once", ms[i].key),
		})
	}
	if out == nil {
		return ms
	}
	return out
}

func (p *lenient) parseArray() value {
	if !p.enter() {
		return value{}
	}
	p.pos++ // '['
	base := len(p.items)
	defer func() { p.items = p.items[:base] }()
	for n := 0; ; n++ {
		p.skipSpace()
		if p.err != nil {
			return value{}
		}
		if p.pos >= p.end {
			p.fail("unexpected end of input inside an array")
			return value{}
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		if n > 0 {
			if p.src[p.pos] != ',' {
				p.fail("unexpected %s after an array element, a comma or ] was expected", p.describe())
				return value{}
			}
			p.pos++
			p.skipSpace()
			if p.err != nil {
				return value{}
			}
			if p.pos < p.end && p.src[p.pos] == ']' {
				p.flags |= flagTrailingComma
				p.pos++
				break
			}
		}
		p.path = append(p.path, pathElem{idx: n})
		item := p.parseValue()
		p.path = p.path[:len(p.path)-1]
		if p.err != nil {
			return value{}
		}
		if len(p.items) == cap(p.items) {
			p.items = append(make([]value, 0, max(2*cap(p.items), 16)), p.items...)
		}
		p.items = append(p.items, item)
	}
	p.depth--
	v := value{kind: kindArray}
	if n := len(p.items) - base; n > 0 {
		v.items = make([]value, n)
		copy(v.items, p.items[base:])
	}
	return v
}

func (p *lenient) parseKey() (string, bool) {
	c := p.src[p.pos]
	if c == '"' || c == '\'' {
		return p.parseString()
	}
	if isIdentStart(c) {
		start := p.pos
		for p.pos < p.end && isIdentPart(p.src[p.pos]) {
			p.pos++
		}
		p.flags |= flagUnquotedKeys
		return p.src[start:p.pos], true
	}
	p.fail("unexpected %s, a key was expected", p.describe())
	return "", false
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// parseString reads a string quoted with " or ' (the latter a repair).
// Strings without escapes are slices of the source.
func (p *lenient) parseString() (string, bool) {
	q := p.src[p.pos]
	if q == '\'' {
		p.flags |= flagSingleQuotes
	}
	start := p.pos + 1
	i := start
	// Fast path: no escapes, no control characters, valid UTF-8.
	for i < p.end {
		c := p.src[i]
		if c == q {
			s := p.src[start:i]
			p.pos = i + 1
			if !utf8.ValidString(s) {
				s = strings.ToValidUTF8(s, "\uFFFD")
			}
			return s, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, p.src[start:i]...)
	for i < p.end {
		c := p.src[i]
		switch {
		case c == q:
			p.pos = i + 1
			s := string(buf)
			if !utf8.ValidString(s) {
				s = strings.ToValidUTF8(s, "\uFFFD")
			}
			return s, true
		case c < 0x20:
			p.flags |= flagControlChars
			buf = append(buf, c)
			i++
		case c == '\\':
			if i+1 >= p.end {
				p.pos = i + 1
				p.fail("unexpected end of input inside a string")
				return "", false
			}
			e := p.src[i+1]
			i += 2
			if c, ok := jsonstr.Unescape(e); ok {
				buf = append(buf, c)
				continue
			}
			switch e {
			case '\'':
				if q != '\'' {
					p.flags |= flagEscapedApostrophe
				}
				buf = append(buf, '\'')
			case 'u':
				r, ok := p.hex4(i)
				if !ok {
					p.pos = i - 2
					p.fail(`invalid \u escape`)
					return "", false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := p.hex4(i + 2); ok && i+1 < p.end && p.src[i] == '\\' && p.src[i+1] == 'u' {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				p.pos = i - 2
				p.fail("invalid escape \\%c in a string", e)
				return "", false
			}
		default:
			buf = append(buf, c)
			i++
		}
	}
	p.pos = p.end
	p.fail("unexpected end of input inside a string")
	return "", false
}

func (p *lenient) hex4(i int) (rune, bool) {
	if i+4 > p.end {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.src[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// parseNumber reads a JSON number; -Infinity is read here too.
func (p *lenient) parseNumber() value {
	start := p.pos
	i := p.pos
	if p.src[i] == '-' {
		i++
		if i < p.end && p.src[i] == 'I' {
			p.pos = i
			v := p.parseLiteral()
			if v.kind == kindNonFinite {
				v.str = "-" + v.str
			}
			return v
		}
	}
	digits := func() int {
		n := 0
		for i < p.end && p.src[i] >= '0' && p.src[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < p.end && p.src[i] == '0' {
		i++
	} else if digits() == 0 {
		p.pos = i
		p.fail("invalid number")
		return value{}
	}
	check := false
	if i < p.end && p.src[i] == '.' {
		i++
		if digits() == 0 {
			p.pos = i
			p.fail("invalid number: digits are expected after the decimal point")
			return value{}
		}
	}
	if i < p.end && (p.src[i] == 'e' || p.src[i] == 'E') {
		check = true
		i++
		if i < p.end && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.pos = i
			p.fail("invalid number: digits are expected in the exponent")
			return value{}
		}
	}
	if i < p.end && (isIdentPart(p.src[i]) || p.src[i] == '.') {
		p.pos = i
		p.fail("invalid number: unexpected %s", p.describe())
		return value{}
	}
	p.pos = i
	lit := p.src[start:i]
	if (check || len(lit) > 300) && !isFiniteLiteral(lit) {
		return value{kind: kindNonFinite, str: lit}
	}
	return value{kind: kindNumber, str: lit}
}

// parseLiteral reads true, false, null, their Python spellings (a repair),
// and NaN/Infinity (kept as non-finite values so the judge can say why).
func (p *lenient) parseLiteral() value {
	start := p.pos
	i := p.pos
	for i < p.end && isIdentPart(p.src[i]) {
		i++
	}
	word := p.src[start:i]
	switch word {
	case "true", "false":
		p.pos = i
		return value{kind: kindBool, str: word}
	case "null":
		p.pos = i
		return value{kind: kindNull}
	case "True", "False":
		p.pos = i
		p.flags |= flagPythonLiterals
		return value{kind: kindBool, str: strings.ToLower(word)}
	case "None":
		p.pos = i
		p.flags |= flagPythonLiterals
		return value{kind: kindNull}
	case "NaN", "Infinity":
		p.pos = i
		return value{kind: kindNonFinite, str: word}
	}
	p.fail("unexpected word %q, a value was expected (strings need quotes)", capText(word, 40))
	return value{}
}
