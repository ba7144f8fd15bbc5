package when

import (
	"strconv"
	"unicode/utf8"
)

// Error is a syntax or meaning error in a condition, positioned in its
// source so a caller can report file:line:col.
type Error struct {
	Offset int    // byte offset in the condition source (len(src) at its end)
	Line   int    // 1-based line within the source; 0 when unknown
	Col    int    // 1-based column, in runes, within that line; 0 when unknown
	Msg    string // lowercase, user text quoted
}

// Error prints "line:col: msg", or "offset N: msg" when the error comes
// from JSONata, which does not see the source (Position converts).
func (e *Error) Error() string {
	if e.Line == 0 {
		return "offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
	}
	return strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col) + ": " + e.Msg
}

// Position converts a byte offset in src to a 1-based line and a 1-based
// column counted in runes, clamping the offset to src.
func Position(src string, offset int) (line, col int) {
	offset = max(0, min(offset, len(src)))
	line, lineStart := 1, 0
	for i := 0; i < offset; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCountInString(src[lineStart:offset]) + 1
}

func newError(src string, off int, msg string) *Error {
	off = max(0, min(off, len(src)))
	line, col := Position(src, off)
	return &Error{Offset: off, Line: line, Col: col, Msg: msg}
}

// Parse parses a when: condition. Errors are *Error.
func Parse(src string) (Expr, error) {
	if !utf8.ValidString(src) {
		off := 0
		for off < len(src) {
			r, n := utf8.DecodeRuneInString(src[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return nil, newError(src, off, "invalid UTF-8 encoding")
	}
	p := &parser{lx: lexer{src: src}}
	if !p.advance() {
		return nil, p.err
	}
	if p.tok.kind == tEOF {
		return nil, newError(src, p.tok.off, "empty condition")
	}
	e := p.or()
	if p.err == nil && p.tok.kind != tEOF {
		p.unexpected("and, or, or the end of the condition")
	}
	if p.err != nil {
		return nil, p.err
	}
	return e, nil
}

// MaxDepth is how deeply "not" and parentheses may nest in a condition.
const MaxDepth = 100

type parser struct {
	lx    lexer
	tok   token
	prev  token
	err   *Error
	depth int
}

// enter counts one level of nesting; it reports false past MaxDepth.
func (p *parser) enter(off int) bool {
	p.depth++
	if p.depth > MaxDepth {
		p.fail(off, "condition nests deeper than "+strconv.Itoa(MaxDepth)+" levels of not and parentheses")
		return false
	}
	return true
}

// advance reads the next token; it reports false once an error is set.
func (p *parser) advance() bool {
	if p.err != nil {
		return false
	}
	p.prev = p.tok
	t, lerr := p.lx.next()
	if lerr != nil {
		p.err = newError(p.lx.src, lerr.off, lerr.msg)
		p.tok = token{kind: tEOF, off: lerr.off, end: lerr.off}
		return false
	}
	p.tok = t
	return true
}

// peek returns the token after the current one without consuming it.
func (p *parser) peek() token {
	l := p.lx
	t, lerr := l.next()
	if lerr != nil {
		return token{kind: tEOF, off: lerr.off}
	}
	return t
}

func (p *parser) fail(off int, msg string) {
	if p.err == nil {
		p.err = newError(p.lx.src, off, msg)
	}
}

func (p *parser) tokText() string {
	if p.tok.kind == tEOF {
		return "end of condition"
	}
	return strconv.Quote(p.lx.src[p.tok.off:p.tok.end])
}

func (p *parser) unexpected(expected string) {
	if p.tok.kind == tEOF {
		p.fail(p.tok.off, "unexpected end of condition, expected "+expected)
		return
	}
	p.fail(p.tok.off, "unexpected "+p.tokText()+", expected "+expected)
}

func (p *parser) isName(s string) bool { return p.tok.kind == tName && p.tok.text == s }

func (p *parser) or() Expr {
	x := p.and()
	for p.err == nil && p.isName("or") {
		off := p.tok.off
		p.advance()
		y := p.and()
		x = &Binary{Op: OpOr, X: x, Y: y, OpOffset: off}
	}
	return x
}

func (p *parser) and() Expr {
	x := p.not()
	for p.err == nil && p.isName("and") {
		off := p.tok.off
		p.advance()
		y := p.not()
		x = &Binary{Op: OpAnd, X: x, Y: y, OpOffset: off}
	}
	return x
}

func (p *parser) not() Expr {
	if p.isName("not") {
		off := p.tok.off
		if !p.enter(off) {
			return nil
		}
		defer func() { p.depth-- }()
		p.advance()
		return &Not{X: p.not(), Offset: off}
	}
	return p.comparison()
}

func (p *parser) compOp() (Op, bool) {
	switch p.tok.kind {
	case tEq:
		return OpEq, true
	case tNe:
		return OpNe, true
	case tLt:
		return OpLt, true
	case tLe:
		return OpLe, true
	case tGt:
		return OpGt, true
	case tGe:
		return OpGe, true
	case tName:
		switch p.tok.text {
		case "in":
			return OpIn, true
		case "not":
			if nt := p.peek(); nt.kind == tName && p.lx.src[nt.off:nt.end] == "in" {
				return OpNotIn, true
			}
		}
	}
	return 0, false
}

func (p *parser) comparison() Expr {
	x := p.operand()
	if p.err != nil {
		return x
	}
	op, ok := p.compOp()
	if !ok {
		if _, isVal := x.(*Path); isVal || isLiteral(x) {
			switch p.tok.kind {
			case tEOF, tRParen:
			case tName:
				if t := p.tok.text; t != "and" && t != "or" {
					p.unexpected("a comparison operator, and, or")
				}
			default:
				p.unexpected("a comparison operator")
			}
		}
		return x
	}
	off := p.tok.off
	p.advance()
	if op == OpNotIn {
		p.advance()
	}
	y := p.operand()
	if p.err != nil {
		return x
	}
	b := &Binary{Op: op, X: x, Y: y, OpOffset: off}
	if msg, at := checkComparison(b); msg != "" {
		p.fail(at, msg)
		return b
	}
	if _, again := p.compOp(); again {
		p.fail(p.tok.off, "comparisons cannot be chained; join them with and, as in a < b and b < c")
	}
	return b
}

func isLiteral(e Expr) bool { _, ok := e.(*Literal); return ok }

func isValue(e Expr) bool {
	switch e.(type) {
	case *Path, *Literal:
		return true
	}
	return false
}

// checkComparison reports a comparison that can never evaluate: an
// operand that is not a value, or literals that Jinja would refuse to
// compare. It returns the message and where to point.
func checkComparison(b *Binary) (string, int) {
	if !isValue(b.X) {
		return "the left side of " + b.Op.String() + " must be a path or a literal", b.X.Pos()
	}
	if !isValue(b.Y) {
		return "the right side of " + b.Op.String() + " must be a path or a literal", b.Y.Pos()
	}
	lx, _ := b.X.(*Literal)
	ly, _ := b.Y.(*Literal)
	switch {
	case b.Op.isOrdering():
		for _, l := range [2]*Literal{lx, ly} {
			if l == nil {
				continue
			}
			if k := kindOf(l.Value); k != kNumber && k != kString {
				return b.Op.String() + " compares numbers or strings, not " + kindName(k), l.Offset
			}
		}
		if lx != nil && ly != nil && kindOf(lx.Value) != kindOf(ly.Value) {
			return "cannot order " + kindName(kindOf(lx.Value)) + " and " + kindName(kindOf(ly.Value)), b.OpOffset
		}
	case b.Op == OpIn || b.Op == OpNotIn:
		if ly == nil {
			return "", 0
		}
		switch kindOf(ly.Value) {
		case kList:
		case kString:
			if lx != nil && kindOf(lx.Value) != kString {
				return "only a string can be in a string, not " + kindName(kindOf(lx.Value)), lx.Offset
			}
		default:
			return b.Op.String() + " needs a list or a string on its right, not " + kindName(kindOf(ly.Value)), ly.Offset
		}
	}
	return "", 0
}

func (p *parser) operand() Expr {
	x := p.primary()
	if p.err != nil || !p.isName("is") {
		return x
	}
	t := &Test{X: x, Offset: p.tok.off}
	p.advance()
	if p.isName("not") {
		t.Negated = true
		p.advance()
	}
	if p.err != nil {
		return t
	}
	switch {
	case p.isName("defined"):
		t.Name = "defined"
	case p.isName("undefined"):
		t.Name, t.Negated = "defined", !t.Negated
	case p.isName("none"), p.isName("None"):
		t.Name = "none"
	default:
		p.unexpected("defined, undefined or none after is")
		return t
	}
	if !isValue(x) {
		p.fail(x.Pos(), "is "+t.Name+" applies to a path or a literal")
		return t
	}
	p.advance()
	return t
}

func (p *parser) primary() Expr {
	if p.err != nil {
		return nil
	}
	switch p.tok.kind {
	case tLParen:
		open := p.tok.off
		if !p.enter(open) {
			return nil
		}
		defer func() { p.depth-- }()
		p.advance()
		x := p.or()
		if p.err != nil {
			return x
		}
		if p.tok.kind != tRParen {
			if p.tok.kind == tEOF {
				p.fail(open, `unclosed "("`)
			} else {
				p.unexpected(`")"`)
			}
			return x
		}
		p.advance()
		return x
	case tName:
		switch p.tok.text {
		case "and", "or", "not", "in", "is", "if", "else":
			p.unexpected("a value")
			return nil
		}
	}
	if lit := p.literal(); lit != nil || p.err != nil {
		return lit
	}
	if p.tok.kind != tName {
		p.unexpected("a value")
		return nil
	}
	return p.path()
}

// literal parses a literal at the current token, or returns nil if the
// token does not start one.
func (p *parser) literal() *Literal {
	off := p.tok.off
	var v any
	switch p.tok.kind {
	case tString:
		v = p.tok.text
	case tNumber:
		v = p.tok.num
	case tMinus:
		p.advance()
		if p.tok.kind != tNumber {
			if p.err == nil {
				p.fail(off, `"-" applies only to a number`)
			}
			return nil
		}
		v = -p.tok.num
	case tLBrack:
		return p.list()
	case tName:
		switch p.tok.text {
		case "true", "True":
			v = true
		case "false", "False":
			v = false
		case "none", "None", "null":
			v = nil
		default:
			return nil
		}
	default:
		return nil
	}
	p.advance()
	return &Literal{Value: v, Offset: off}
}

func (p *parser) list() *Literal {
	open := p.tok.off
	p.advance()
	items := []any{}
	for p.err == nil && p.tok.kind != tRBrack {
		if p.tok.kind == tEOF {
			p.fail(open, `unclosed "["`)
			return nil
		}
		el := p.literal()
		if p.err != nil {
			return nil
		}
		if el == nil {
			p.fail(p.tok.off, "list items must be literals (strings, numbers, true, false, none or lists)")
			return nil
		}
		items = append(items, el.Value)
		if p.tok.kind == tComma {
			p.advance()
			continue
		}
		if p.tok.kind != tRBrack {
			if p.tok.kind == tEOF {
				p.fail(open, `unclosed "["`)
			} else {
				p.unexpected(`"," or "]"`)
			}
			return nil
		}
	}
	if p.err != nil {
		return nil
	}
	p.advance()
	return &Literal{Value: items, Offset: open}
}

func (p *parser) path() Expr {
	path := &Path{Root: p.tok.text, Offset: p.tok.off}
	p.advance()
	for p.err == nil {
		switch p.tok.kind {
		case tDot:
			p.advance()
			switch p.tok.kind {
			case tName:
				path.Segments = append(path.Segments, p.tok.text)
				p.advance()
				continue
			case tNumber:
				p.fail(p.tok.off, "indexing by position is not supported in when:; test membership with in instead")
			default:
				p.unexpected("a name after \".\"")
			}
		case tLBrack:
			p.advance()
			switch p.tok.kind {
			case tString:
				path.Segments = append(path.Segments, p.tok.text)
				p.advance()
			case tNumber, tMinus:
				p.fail(p.tok.off, "indexing by position is not supported in when:; test membership with in instead")
				return path
			default:
				p.unexpected("a quoted key")
				return path
			}
			if p.tok.kind != tRBrack {
				p.unexpected(`"]"`)
				return path
			}
			p.advance()
			continue
		case tMinus:
			if p.tok.off == p.prev.end && p.prev.kind == tName {
				p.hyphenHint(path)
			}
		case tLParen:
			if p.tok.off == p.prev.end {
				p.fail(p.tok.off, "function calls are not supported in when:")
			}
		}
		return path
	}
	return path
}

// hyphenHint reports a hyphenated name written after a dot, as in
// steps.first-line-triage.summary, and shows the two spellings that work.
func (p *parser) hyphenHint(path *Path) {
	src := p.lx.src
	start := p.prev.off
	end := start
	for end < len(src) && (isNameStart(src[end]) || isDigit(src[end]) || src[end] == '-') {
		end++
	}
	name := src[start:end]
	head := path.Root
	if len(path.Segments) > 0 {
		head = (&Path{Root: path.Root, Segments: path.Segments[:len(path.Segments)-1]}).String()
	}
	under := []byte(name)
	for i, c := range under {
		if c == '-' {
			under[i] = '_'
		}
	}
	if len(path.Segments) == 0 {
		p.fail(p.tok.off, `unexpected "-": names cannot contain "-"; write `+strconv.Quote(string(under)))
		return
	}
	p.fail(p.tok.off, `unexpected "-" in a name: write `+strconv.Quote(head+"['"+name+"']")+
		" or "+strconv.Quote(head+"."+string(under)))
}
