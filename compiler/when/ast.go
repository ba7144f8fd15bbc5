package when

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Expr is a node of a parsed condition: *Binary, *Not, *Test, *Path or
// *Literal.
type Expr interface {
	// Pos is the byte offset in the source where the node starts.
	Pos() int
	// String prints the node in canonical form; Parse reads it back to
	// the same tree.
	String() string
	exprNode()
}

// Op is a binary operator.
type Op uint8

// The binary operators, from loosest to tightest binding.
const (
	OpOr Op = iota
	OpAnd
	OpEq    // ==
	OpNe    // !=
	OpLt    // <
	OpLe    // <=
	OpGt    // >
	OpGe    // >=
	OpIn    // in
	OpNotIn // not in
)

var opText = [...]string{"or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}

func (o Op) String() string {
	if int(o) < len(opText) {
		return opText[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// IsComparison reports whether o compares two values (every operator
// but and/or).
func (o Op) IsComparison() bool { return o >= OpEq && o <= OpNotIn }

func (o Op) isOrdering() bool { return o >= OpLt && o <= OpGe }

// Binary is "X op Y": and, or, or a comparison. The operands of a
// comparison are values (*Path or *Literal).
type Binary struct {
	Op       Op
	X, Y     Expr
	OpOffset int // byte offset of the operator
}

// Not is "not X".
type Not struct {
	X      Expr
	Offset int
}

// Test is "X is [not] defined" or "X is [not] none". X is a value.
// "X is undefined" parses as Name "defined" with Negated set.
type Test struct {
	X       Expr
	Name    string // "defined" or "none"
	Negated bool
	Offset  int // byte offset of "is"
}

// Path is a reference such as steps.triage.action or
// steps["first-line-triage"].summary: a root name and the keys below it,
// however they were written (dot or brackets).
type Path struct {
	Root     string
	Segments []string
	Offset   int
}

// Literal is a constant. Value is a string, a float64, a bool, nil (none)
// or a []any of those (a list).
type Literal struct {
	Value  any
	Offset int
}

func (e *Binary) Pos() int  { return e.X.Pos() }
func (e *Not) Pos() int     { return e.Offset }
func (e *Test) Pos() int    { return e.X.Pos() }
func (e *Path) Pos() int    { return e.Offset }
func (e *Literal) Pos() int { return e.Offset }

func (*Binary) exprNode()  {}
func (*Not) exprNode()     {}
func (*Test) exprNode()    {}
func (*Path) exprNode()    {}
func (*Literal) exprNode() {}

// Walk calls fn for e and, while fn returns true, for each node below
// it, depth first in source order.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch n := e.(type) {
	case *Binary:
		Walk(n.X, fn)
		Walk(n.Y, fn)
	case *Not:
		Walk(n.X, fn)
	case *Test:
		Walk(n.X, fn)
	}
}

// Paths lists every path e references, in source order.
func Paths(e Expr) []Path {
	var out []Path
	Walk(e, func(n Expr) bool {
		if p, ok := n.(*Path); ok {
			out = append(out, *p)
		}
		return true
	})
	return out
}

func (p *Path) write(b *strings.Builder) {
	b.WriteString(p.Root)
	for _, s := range p.Segments {
		if isIdent(s) {
			b.WriteByte('.')
			b.WriteString(s)
		} else {
			b.WriteByte('[')
			writeQuoted(b, s)
			b.WriteByte(']')
		}
	}
}

// Precedence levels of the printed grammar.
const (
	precOr = 1 + iota
	precAnd
	precNot
	precCmp
	precAtom
)

func (e *Binary) String() string  { return printExpr(e) }
func (e *Not) String() string     { return printExpr(e) }
func (e *Test) String() string    { return printExpr(e) }
func (e *Path) String() string    { return printExpr(e) }
func (e *Literal) String() string { return printExpr(e) }

func printExpr(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e, 0)
	return b.String()
}

func exprPrec(e Expr) int {
	switch n := e.(type) {
	case *Binary:
		switch n.Op {
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		}
		return precCmp
	case *Not:
		return precNot
	case *Test:
		return precCmp
	}
	return precAtom
}

func writeExpr(b *strings.Builder, e Expr, ctx int) {
	p := exprPrec(e)
	if p < ctx {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch n := e.(type) {
	case *Binary:
		left, right := p, p+1
		if n.Op.IsComparison() {
			left, right = precAtom, precAtom
		}
		writeExpr(b, n.X, left)
		b.WriteByte(' ')
		b.WriteString(n.Op.String())
		b.WriteByte(' ')
		writeExpr(b, n.Y, right)
	case *Not:
		b.WriteString("not ")
		writeExpr(b, n.X, precNot)
	case *Test:
		writeExpr(b, n.X, precAtom)
		b.WriteString(" is ")
		if n.Negated {
			b.WriteString("not ")
		}
		b.WriteString(n.Name)
	case *Path:
		n.write(b)
	case *Literal:
		writeValue(b, n.Value)
	case nil:
		b.WriteString("<nil>")
	}
}

func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("none")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		writeQuoted(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	default:
		b.WriteString("<invalid>")
	}
}

// writeQuoted writes s as a double-quoted string literal of the when
// language (Python escapes).
func writeQuoted(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&15])
		case r >= 0x80 && !strconv.IsPrint(r):
			if r > 0xffff {
				b.WriteString(`\U`)
				for sh := 28; sh >= 0; sh -= 4 {
					b.WriteByte(hex[(r>>sh)&15])
				}
			} else {
				b.WriteString(`\u`)
				for sh := 12; sh >= 0; sh -= 4 {
					b.WriteByte(hex[(r>>sh)&15])
				}
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// isIdent reports whether s is an ASCII identifier, printable after a dot.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// Clone returns a deep copy of e, to rewrite without changing e. A
// Literal's Value is shared: nothing rewrites it.
func Clone(e Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		c := *n
		c.X, c.Y = Clone(n.X), Clone(n.Y)
		return &c
	case *Not:
		c := *n
		c.X = Clone(n.X)
		return &c
	case *Test:
		c := *n
		c.X = Clone(n.X)
		return &c
	case *Path:
		c := *n
		c.Segments = slices.Clone(n.Segments)
		return &c
	case *Literal:
		c := *n
		return &c
	}
	return e
}
