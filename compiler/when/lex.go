package when

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tName
	tString
	tNumber
	tEq     // ==
	tNe     // !=
	tLt     // <
	tLe     // <=
	tGt     // >
	tGe     // >=
	tLParen // (
	tRParen // )
	tLBrack // [
	tRBrack // ]
	tDot    // .
	tComma  // ,
	tMinus  // -
)

// token is one lexeme. For tName, text is the name (a slice of the
// source); for tString, the decoded value; for tNumber, num holds the value.
type token struct {
	kind     tokKind
	off, end int
	text     string
	num      float64
}

// lexer splits a condition into tokens on demand. It is a value: copying
// it saves its state, which the parser uses to look one token ahead.
type lexer struct {
	src string
	pos int
}

// lexError is a lexical error before it is positioned as line and column.
type lexError struct {
	off int
	msg string
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (l *lexer) next() (token, *lexError) {
	src := l.src
	for l.pos < len(src) && isSpace(src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if start >= len(src) {
		return token{kind: tEOF, off: start, end: start}, nil
	}
	c := src[start]
	tok := func(k tokKind, n int) (token, *lexError) {
		l.pos = start + n
		return token{kind: k, off: start, end: l.pos}, nil
	}
	peek := byte(0)
	if start+1 < len(src) {
		peek = src[start+1]
	}
	switch {
	case isNameStart(c):
		i := start + 1
		for i < len(src) && (isNameStart(src[i]) || isDigit(src[i])) {
			i++
		}
		l.pos = i
		return token{kind: tName, off: start, end: i, text: src[start:i]}, nil
	case isDigit(c):
		return l.number()
	case c == '"' || c == '\'':
		return l.str()
	}
	switch c {
	case '(':
		return tok(tLParen, 1)
	case ')':
		return tok(tRParen, 1)
	case '[':
		return tok(tLBrack, 1)
	case ']':
		return tok(tRBrack, 1)
	case '.':
		return tok(tDot, 1)
	case ',':
		return tok(tComma, 1)
	case '-':
		return tok(tMinus, 1)
	case '<':
		if peek == '=' {
			return tok(tLe, 2)
		}
		return tok(tLt, 1)
	case '>':
		if peek == '=' {
			return tok(tGe, 2)
		}
		return tok(tGt, 1)
	case '=':
		if peek == '=' {
			return tok(tEq, 2)
		}
		return token{}, &lexError{start, `unexpected "=", write == to compare`}
	case '!':
		if peek == '=' {
			return tok(tNe, 2)
		}
		return token{}, &lexError{start, `unexpected "!", write not to negate`}
	case '&':
		return token{}, &lexError{start, `unexpected "&", write and`}
	case '|':
		if peek == '|' {
			return token{}, &lexError{start, `unexpected "||", write or`}
		}
		return token{}, &lexError{start, "filters are not supported in when:"}
	case '+', '*', '/', '%', '~':
		return token{}, &lexError{start, strconv.Quote(string(c)) + ": arithmetic is not supported in when:"}
	case '{':
		switch peek {
		case '{':
			return token{}, &lexError{start, braceHint(src)}
		case '%':
			return token{}, &lexError{start, "when: takes a bare expression, not a {% %} tag"}
		}
	}
	r, _ := utf8.DecodeRuneInString(src[start:])
	return token{}, &lexError{start, "unexpected " + strconv.QuoteRune(r)}
}

// braceHint is the message for a condition written as {{ expression }}.
func braceHint(src string) string {
	s := strings.TrimSpace(src)
	if strings.HasPrefix(s, "{{") && strings.HasSuffix(s, "}}") && len(s) >= 4 {
		if inner := strings.TrimSpace(s[2 : len(s)-2]); inner != "" && !strings.Contains(inner, "{{") {
			return "write the bare expression " + strconv.Quote(inner) + ", without {{ }}"
		}
	}
	return "write the bare expression: when: steps.x.ok == true, without {{ }}"
}

func (l *lexer) number() (token, *lexError) {
	src, start := l.src, l.pos
	i := start
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i+1 < len(src) && src[i] == '.' && isDigit(src[i+1]) {
		i += 2
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			i = j
		}
	}
	v, err := strconv.ParseFloat(src[start:i], 64)
	if err != nil {
		return token{}, &lexError{start, "number " + strconv.Quote(src[start:i]) + " is out of range"}
	}
	l.pos = i
	return token{kind: tNumber, off: start, end: i, num: v}, nil
}

// str lexes a quoted string with Python's escapes (what Jinja accepts):
// \\ \' \" \n \t \r \a \b \f \v, \ooo, \xhh, \uhhhh, \Uhhhhhhhh and a
// backslash before a newline; any other backslash stays as written.
func (l *lexer) str() (token, *lexError) {
	src, start := l.src, l.pos
	q := src[start]
	var buf []byte // nil until the first escape
	i := start + 1
	for i < len(src) {
		c := src[i]
		if c == q {
			l.pos = i + 1
			text := src[start+1 : i]
			if buf != nil {
				text = string(buf)
			}
			return token{kind: tString, off: start, end: l.pos, text: text}, nil
		}
		if c != '\\' {
			if buf != nil {
				buf = append(buf, c)
			}
			i++
			continue
		}
		if buf == nil {
			buf = append(make([]byte, 0, i-start+8), src[start+1:i]...)
		}
		if i+1 >= len(src) {
			break
		}
		esc := i
		e := src[i+1]
		i += 2
		switch e {
		case '\\', '\'', '"':
			buf = append(buf, e)
		case 'n':
			buf = append(buf, '\n')
		case 't':
			buf = append(buf, '\t')
		case 'r':
			buf = append(buf, '\r')
		case 'a':
			buf = append(buf, 7)
		case 'b':
			buf = append(buf, 8)
		case 'f':
			buf = append(buf, 12)
		case 'v':
			buf = append(buf, 11)
		case '\n':
		case 'x', 'u', 'U':
			n := 2
			if e == 'u' {
				n = 4
			} else if e == 'U' {
				n = 8
			}
			if i+n > len(src) {
				return token{}, &lexError{esc, "escape " + strconv.Quote(src[esc:]) + " needs " + strconv.Itoa(n) + " hex digits"}
			}
			v, err := strconv.ParseUint(src[i:i+n], 16, 32)
			if err != nil {
				return token{}, &lexError{esc, "escape " + strconv.Quote(src[esc:i+n]) + " needs " + strconv.Itoa(n) + " hex digits"}
			}
			r := rune(v)
			if r >= 0xd800 && r <= 0xdfff {
				return token{}, &lexError{esc, "escape " + strconv.Quote(src[esc:i+n]) + " is a surrogate half; write the character itself or a \\U escape"}
			}
			if r > utf8.MaxRune {
				return token{}, &lexError{esc, "escape " + strconv.Quote(src[esc:i+n]) + " is beyond unicode"}
			}
			buf = utf8.AppendRune(buf, r)
			i += n
		case 'N':
			return token{}, &lexError{esc, `\N{...} escapes are not supported; write the character itself`}
		default:
			if e >= '0' && e <= '7' {
				v := rune(e - '0')
				for k := 0; k < 2 && i < len(src) && src[i] >= '0' && src[i] <= '7'; k++ {
					v = v*8 + rune(src[i]-'0')
					i++
				}
				buf = utf8.AppendRune(buf, v)
				continue
			}
			// Python keeps an unknown escape as written.
			buf = append(buf, '\\')
			i--
		}
	}
	return token{}, &lexError{start, "unclosed string"}
}
