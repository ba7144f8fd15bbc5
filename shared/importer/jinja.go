package importer

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxExprDepth bounds the nesting of one Jinja expression: the
// expression itself and each level of parentheses, brackets, call
// arguments, not and unary minus count one. Deeper is reported, never
// recursed into.
const MaxExprDepth = 64

// A jinja expression, as the reference's templates and when: write it.
// Every node keeps the byte offset of its first token in the expression.
type (
	jexpr interface{ at() int }

	jlit struct {
		off  int
		kind string // "str", "num", "bool", "none"
		val  string // str: the decoded text; num: as written; bool: true/false
	}
	jseg struct {
		name  string // attribute or string key
		index string // integer index as written, when not a name
	}
	jpath struct {
		off  int
		root string
		segs []jseg
	}
	jfilter struct {
		off  int
		x    jexpr
		name string
		args []jexpr
		kw   bool // keyword arguments were given
	}
	jtest struct {
		off  int
		x    jexpr
		name string
		not  bool
		args bool // the test took arguments
	}
	jbin struct {
		off  int
		op   string
		l, r jexpr
	}
	jnot struct {
		off int
		x   jexpr
	}
	jneg struct {
		off int
		x   jexpr
	}
	jcond struct {
		off        int
		then, cond jexpr
		els        jexpr // nil: no else
	}
	jlist struct {
		off   int
		items []jexpr
	}
	jcall struct { // a call or a mapping literal: never converted
		off  int
		what string
	}
)

func (e *jlit) at() int    { return e.off }
func (e *jpath) at() int   { return e.off }
func (e *jfilter) at() int { return e.off }
func (e *jtest) at() int   { return e.off }
func (e *jbin) at() int    { return e.off }
func (e *jnot) at() int    { return e.off }
func (e *jneg) at() int    { return e.off }
func (e *jcond) at() int   { return e.off }
func (e *jlist) at() int   { return e.off }
func (e *jcall) at() int   { return e.off }

type jtok struct {
	kind string // "name", "num", "str", "op", "eof"
	val  string
	off  int
}

// jerr is a Jinja expression the importer cannot read, at an offset.
type jerr struct {
	off int
	msg string
}

func (e *jerr) Error() string { return e.msg }

func lexJinja(src string) ([]jtok, error) {
	var toks []jtok
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isNameStart(c):
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			toks = append(toks, jtok{"name", src[i:j], i})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
				j++
			}
			if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			toks = append(toks, jtok{"num", strings.ReplaceAll(src[i:j], "_", ""), i})
			i = j
		case c == '\'' || c == '"':
			s, n, err := unquote(src[i:])
			if err != nil {
				return nil, &jerr{i, err.Error()}
			}
			toks = append(toks, jtok{"str", s, i})
			i += n
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%", "~", "|", ".", ",", "(", ")", "[", "]", "{", "}", ":", "="} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, &jerr{i, fmt.Sprintf("unexpected character %q", src[i:i+1])}
			}
			toks = append(toks, jtok{"op", op, i})
			i += len(op)
		}
	}
	return append(toks, jtok{"eof", "", len(src)}), nil
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// unquote reads a Python string literal at the start of s: its value and
// its length. Escapes other than the common ones are refused.
func unquote(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, fmt.Errorf("unterminated string")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"':
				b.WriteByte(s[i])
			default:
				return "", 0, fmt.Errorf("string escape \\%c is not converted", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

type jparser struct {
	toks  []jtok
	i     int
	depth int
}

// parseJinja parses one Jinja expression.
func parseJinja(src string) (jexpr, error) {
	toks, err := lexJinja(src)
	if err != nil {
		return nil, err
	}
	p := &jparser{toks: toks}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "eof" {
		return nil, &jerr{t.off, fmt.Sprintf("unexpected %q", t.val)}
	}
	return e, nil
}

func (p *jparser) peek() jtok { return p.toks[p.i] }

// next consumes a token; the end stays the end.
func (p *jparser) next() jtok {
	t := p.toks[p.i]
	if t.kind != "eof" {
		p.i++
	}
	return t
}
func (p *jparser) isOp(v string) bool {
	t := p.peek()
	return t.kind == "op" && t.val == v
}
func (p *jparser) isName(v string) bool {
	t := p.peek()
	return t.kind == "name" && t.val == v
}
func (p *jparser) expect(v string) error {
	if !p.isOp(v) {
		t := p.peek()
		return &jerr{t.off, fmt.Sprintf("expected %q", v)}
	}
	p.i++
	return nil
}

func (p *jparser) enter() error {
	p.depth++
	if p.depth > MaxExprDepth {
		return &jerr{p.peek().off, fmt.Sprintf("the expression nests deeper than %d", MaxExprDepth)}
	}
	return nil
}

// expr: conditional expression (lowest precedence).
func (p *jparser) expr() (jexpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		p.next()
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		ce := &jcond{off: e.at(), then: e, cond: c}
		if p.isName("else") {
			p.next()
			if ce.els, err = p.or(); err != nil {
				return nil, err
			}
		}
		e = ce
	}
	return e, nil
}

func (p *jparser) or() (jexpr, error) {
	l, err := p.and()
	for err == nil && p.isName("or") {
		p.next()
		var r jexpr
		if r, err = p.and(); err == nil {
			l = &jbin{l.at(), "or", l, r}
		}
	}
	return l, err
}

func (p *jparser) and() (jexpr, error) {
	l, err := p.not()
	for err == nil && p.isName("and") {
		p.next()
		var r jexpr
		if r, err = p.not(); err == nil {
			l = &jbin{l.at(), "and", l, r}
		}
	}
	return l, err
}

func (p *jparser) not() (jexpr, error) {
	if p.isName("not") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &jnot{t.off, x}, nil
	}
	return p.compare()
}

func (p *jparser) compare() (jexpr, error) {
	l, err := p.math1()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		op := ""
		switch {
		case t.kind == "op" && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == "name" && p.toks[p.i+1].val == "in":
			op = "not in"
			p.i += 2
		default:
			return l, nil
		}
		r, err := p.math1()
		if err != nil {
			return nil, err
		}
		l = &jbin{l.at(), op, l, r}
	}
}

func (p *jparser) math1() (jexpr, error) {
	l, err := p.concat()
	for err == nil && (p.isOp("+") || p.isOp("-")) {
		op := p.next().val
		var r jexpr
		if r, err = p.concat(); err == nil {
			l = &jbin{l.at(), op, l, r}
		}
	}
	return l, err
}

func (p *jparser) concat() (jexpr, error) {
	l, err := p.math2()
	for err == nil && p.isOp("~") {
		p.next()
		var r jexpr
		if r, err = p.math2(); err == nil {
			l = &jbin{l.at(), "~", l, r}
		}
	}
	return l, err
}

func (p *jparser) math2() (jexpr, error) {
	l, err := p.pow()
	for err == nil && (p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%")) {
		op := p.next().val
		var r jexpr
		if r, err = p.pow(); err == nil {
			l = &jbin{l.at(), op, l, r}
		}
	}
	return l, err
}

func (p *jparser) pow() (jexpr, error) {
	l, err := p.unary()
	for err == nil && p.isOp("**") {
		p.next()
		var r jexpr
		if r, err = p.unary(); err == nil {
			l = &jbin{l.at(), "**", l, r}
		}
	}
	return l, err
}

func (p *jparser) unary() (jexpr, error) {
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if t.val == "+" {
			return x, nil
		}
		if l, ok := x.(*jlit); ok && l.kind == "num" && !strings.HasPrefix(l.val, "-") {
			return &jlit{t.off, "num", "-" + l.val}, nil
		}
		return &jneg{t.off, x}, nil
	}
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.postfix(x)
}

func (p *jparser) primary() (jexpr, error) {
	t := p.next()
	switch t.kind {
	case "str":
		s := &jlit{t.off, "str", t.val}
		for p.peek().kind == "str" { // adjacent literals concatenate
			s.val += p.next().val
		}
		return s, nil
	case "num":
		if _, err := strconv.ParseFloat(t.val, 64); err != nil {
			return nil, &jerr{t.off, fmt.Sprintf("number %s is not converted", t.val)}
		}
		return &jlit{t.off, "num", t.val}, nil
	case "name":
		switch t.val {
		case "true", "True":
			return &jlit{t.off, "bool", "true"}, nil
		case "false", "False":
			return &jlit{t.off, "bool", "false"}, nil
		case "none", "None":
			return &jlit{t.off, "none", ""}, nil
		case "and", "or", "not", "in", "is", "if", "else":
			return nil, &jerr{t.off, fmt.Sprintf("unexpected %q", t.val)}
		}
		return &jpath{off: t.off, root: t.val}, nil
	case "op":
		switch t.val {
		case "(":
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				return nil, &jerr{t.off, "tuples are not converted"}
			}
			return e, p.expect(")")
		case "[":
			l := &jlist{off: t.off}
			for !p.isOp("]") {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, e)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return l, p.expect("]")
		case "{":
			return nil, &jerr{t.off, "mapping literals are not converted"}
		}
	case "eof":
		return nil, &jerr{t.off, "unexpected end of expression"}
	}
	return nil, &jerr{t.off, fmt.Sprintf("unexpected %q", t.val)}
}

func (p *jparser) postfix(x jexpr) (jexpr, error) {
	for {
		switch {
		case p.isOp("."):
			p.next()
			t := p.next()
			switch t.kind {
			case "name":
				x = p.seg(x, jseg{name: t.val})
			case "num":
				if strings.ContainsAny(t.val, ".eE") {
					return nil, &jerr{t.off, "unexpected number"}
				}
				x = p.seg(x, jseg{index: t.val})
			default:
				return nil, &jerr{t.off, "expected a name after \".\""}
			}
		case p.isOp("["):
			open := p.next()
			t := p.next()
			var s jseg
			switch {
			case t.kind == "str":
				s = jseg{name: t.val}
			case t.kind == "num" && !strings.ContainsAny(t.val, ".eE"):
				s = jseg{index: t.val}
			case t.kind == "op" && t.val == "-" && p.peek().kind == "num":
				s = jseg{index: "-" + p.next().val}
			default:
				return nil, &jerr{open.off, "only a string or an integer index is converted inside [ ]"}
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			x = p.seg(x, s)
		case p.isOp("("):
			t := p.next()
			return nil, &jerr{t.off, "function and method calls are not converted"}
		case p.isOp("|"):
			p.next()
			t := p.next()
			if t.kind != "name" {
				return nil, &jerr{t.off, "expected a filter name after \"|\""}
			}
			f := &jfilter{off: x.at(), x: x, name: t.val}
			for p.isOp(".") { // dotted filter names are not Jinja's builtins
				p.next()
				n := p.next()
				if n.kind != "name" {
					return nil, &jerr{n.off, "expected a name after \".\""}
				}
				f.name += "." + n.val
			}
			if p.isOp("(") {
				if err := p.args(&f.args, &f.kw); err != nil {
					return nil, err
				}
			}
			x = f
		case p.isName("is"):
			p.next()
			tt := &jtest{off: x.at(), x: x}
			if p.isName("not") {
				p.next()
				tt.not = true
			}
			t := p.next()
			if t.kind != "name" {
				return nil, &jerr{t.off, "expected a test name after \"is\""}
			}
			tt.name = t.val
			if p.isOp("(") {
				var args []jexpr
				var kw bool
				if err := p.args(&args, &kw); err != nil {
					return nil, err
				}
				tt.args = true
			} else if k := p.peek(); k.kind == "str" || k.kind == "num" || (k.kind == "name" && !isKeyword(k.val)) {
				p.next() // "x is divisibleby 3": an argument without parentheses
				tt.args = true
			}
			x = tt
		default:
			return x, nil
		}
	}
}

func isKeyword(s string) bool {
	switch s {
	case "and", "or", "not", "in", "is", "if", "else":
		return true
	}
	return false
}

// seg appends a segment to a path, or turns x into a path that is not
// convertible (an attribute of a literal or of a filtered value).
func (p *jparser) seg(x jexpr, s jseg) jexpr {
	if pa, ok := x.(*jpath); ok {
		pa.segs = append(pa.segs, s)
		return pa
	}
	return &jcall{off: x.at(), what: "an attribute of a computed value"}
}

func (p *jparser) args(out *[]jexpr, kw *bool) error {
	if err := p.expect("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if p.peek().kind == "name" && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == "op" && p.toks[p.i+1].val == "=" {
			p.i += 2
			*kw = true
		}
		e, err := p.expr()
		if err != nil {
			return err
		}
		*out = append(*out, e)
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	return p.expect(")")
}
