package when

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/asl"
)

// Root tells the lowering where one path root reads from in the state
// machine.
type Root struct {
	// Expr is the JSONata the root's value comes from: a variable,
	// optionally followed by field names, e.g. "$steps",
	// "$trigger.labels" or "$trigger.labels.service". Every object on
	// that path must be an object when present (never an array).
	Expr string
	// Keyed is how many of the path's own segments below the root are
	// looked up in values known to be objects or absent, never arrays,
	// so they need no type guard. For steps it is 2 ($steps is an
	// object of step outputs, and each step output is an object); for
	// vars and labels 1; for a root that is itself a leaf value, 0.
	Keyed int
}

// Scope maps each path root a condition may use to where it reads from.
type Scope map[string]Root

// Locals the lowered expressions bind; a Scope root may not use them.
var reservedLocals = [...]string{"$v", "$c", "$t", "$p", "$r", "$a", "$b", "$e"}

// JSONata lowers e to a JSONata expression (without the {% %}
// delimiters) that always evaluates to true or false and never raises an
// error, whatever the variables hold. Unknown roots are reported as
// *Error at the path's offset.
func JSONata(e Expr, s Scope) (string, error) {
	if e == nil {
		return "", errors.New("when: nil expression")
	}
	l := lowerer{scope: s}
	if err := l.check(e); err != nil {
		return "", err
	}
	f := l.cond(e, false, true)
	if l.err != nil {
		return "", l.err
	}
	return f.code, nil
}

// Condition is JSONata wrapped as the string a Choice rule's Condition
// holds: "{% <expression> %}".
func Condition(e Expr, s Scope) (string, error) {
	j, err := JSONata(e, s)
	if err != nil {
		return "", err
	}
	return asl.Expr(j), nil
}

type lowerer struct {
	scope Scope
	roots map[string]rootInfo
	err   error
}

type rootInfo struct {
	base  string   // the variable, e.g. "$trigger"
	keys  []string // fields below it, e.g. ["labels", "service"]
	keyed int
}

// check validates the tree and resolves every root before any output.
func (l *lowerer) check(e Expr) error {
	var err error
	Walk(e, func(n Expr) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *Binary:
			if x.X == nil || x.Y == nil {
				err = errors.New("when: binary node without operand")
			} else if x.Op.IsComparison() {
				if msg, at := checkComparison(x); msg != "" {
					err = &Error{Offset: at, Msg: msg}
				}
			} else if x.Op != OpAnd && x.Op != OpOr {
				err = errors.New("when: unknown operator " + x.Op.String())
			}
		case *Not:
			if x.X == nil {
				err = errors.New("when: not without operand")
			}
		case *Test:
			if !isValue(x.X) || (x.Name != "defined" && x.Name != "none") {
				err = errors.New("when: invalid test " + strconv.Quote(x.Name))
			}
		case *Literal:
			if !validLiteral(x.Value) {
				err = errors.New("when: invalid literal value")
			}
		case *Path:
			var ri rootInfo
			if ri, err = l.root(x); err != nil {
				break
			}
			for _, k := range ri.keys {
				if !fieldName(k) {
					err = errors.New("when: scope root " + strconv.Quote(x.Root) + ": field " + strconv.Quote(k) + " cannot be addressed in JSONata")
				}
			}
			for _, k := range x.Segments {
				if !fieldName(k) && err == nil {
					err = &Error{Offset: x.Offset, Msg: "key " + strconv.Quote(k) +
						" cannot be addressed in JSONata: it is empty or holds a backtick, a control character or {% %}"}
				}
			}
		}
		return true
	})
	return err
}

func (l *lowerer) root(p *Path) (rootInfo, error) {
	if ri, ok := l.roots[p.Root]; ok {
		return ri, nil
	}
	r, ok := l.scope[p.Root]
	if !ok {
		names := make([]string, 0, len(l.scope))
		for n := range l.scope {
			names = append(names, n)
		}
		sort.Strings(names)
		msg := "unknown name " + strconv.Quote(p.Root)
		if len(names) > 0 {
			msg += "; known: " + strings.Join(names, ", ")
		}
		return rootInfo{}, &Error{Offset: p.Offset, Msg: msg}
	}
	ri, err := parseRoot(r.Expr)
	if err != nil {
		return rootInfo{}, errors.New("when: scope root " + strconv.Quote(p.Root) + ": " + err.Error())
	}
	ri.keyed = r.Keyed
	if l.roots == nil {
		l.roots = make(map[string]rootInfo, 4)
	}
	l.roots[p.Root] = ri
	return ri, nil
}

// parseRoot splits a root expression like $trigger.labels.`app-name`
// into its variable and field names.
func parseRoot(expr string) (rootInfo, error) {
	bad := errors.New("expression " + strconv.Quote(expr) + " is not a variable followed by field names")
	if len(expr) < 2 || expr[0] != '$' {
		return rootInfo{}, bad
	}
	i := 1
	for i < len(expr) && (isNameStart(expr[i]) || isDigit(expr[i])) {
		i++
	}
	if i == 1 {
		return rootInfo{}, bad
	}
	ri := rootInfo{base: expr[:i]}
	for _, r := range reservedLocals {
		if ri.base == r {
			return rootInfo{}, errors.New("variable " + r + " is reserved for the lowering's own locals")
		}
	}
	for i < len(expr) {
		if expr[i] != '.' || i+1 >= len(expr) {
			return rootInfo{}, bad
		}
		i++
		if expr[i] == '`' {
			end := strings.IndexByte(expr[i+1:], '`')
			if end <= 0 {
				return rootInfo{}, bad
			}
			ri.keys = append(ri.keys, expr[i+1:i+1+end])
			i += end + 2
			continue
		}
		j := i
		for j < len(expr) && (isNameStart(expr[j]) || isDigit(expr[j])) {
			j++
		}
		if j == i || isDigit(expr[i]) {
			return rootInfo{}, bad
		}
		ri.keys = append(ri.keys, expr[i:j])
		i = j
	}
	return ri, nil
}

// JSONata operator precedences (binding powers of the reference parser).
const (
	jCond = 20
	jOr   = 25
	jAnd  = 30
	jCmp  = 40
	jAtom = 100
)

// frag is lowered JSONata. tri marks an expression that yields true,
// false, or nothing (undefined) where Jinja would raise an error; every
// other frag yields exactly true or false.
type frag struct {
	code string
	prec int
	tri  bool
}

func (f frag) in(min int) string {
	if f.prec < min {
		return "(" + f.code + ")"
	}
	return f.code
}

func constFrag(b bool) frag {
	if b {
		return frag{"true", jAtom, false}
	}
	return frag{"false", jAtom, false}
}

// not wraps a boolean JSONata expression in $not when neg is set.
func not(neg bool, code string) string {
	if neg {
		return "$not(" + code + ")"
	}
	return code
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// errTail ends a conditional chain whose fall-through is a Jinja error:
// nothing in a tri context, false in a strict one.
func errTail(strict bool) string {
	if strict {
		return " : false"
	}
	return ""
}

// cond lowers a node in boolean position. neg asks for its negation
// (pushed down: Jinja's and/or/not obey De Morgan's laws even with errors,
// because both sides evaluate left to right and short-circuit alike);
// strict asks for a result that is never undefined (an error becomes
// false), as the top level needs.
func (l *lowerer) cond(e Expr, neg, strict bool) frag {
	switch n := e.(type) {
	case *Not:
		return l.cond(n.X, !neg, strict)
	case *Binary:
		switch n.Op {
		case OpAnd, OpOr:
			isAnd := (n.Op == OpAnd) != neg
			return l.logical(isAnd, n.X, n.Y, neg, strict)
		}
		return l.compare(n, neg, strict)
	case *Test:
		return l.test(n, neg)
	case *Literal:
		return constFrag(Truthy(n.Value) != neg)
	case *Path:
		return l.truthy(n, neg)
	}
	l.fail(errors.New("when: unsupported node"))
	return constFrag(false)
}

func (l *lowerer) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// logical lowers x and y (isAnd) or x or y, both operands negated when neg.
func (l *lowerer) logical(isAnd bool, x, y Expr, neg, strict bool) frag {
	if isAnd && strict {
		// An error on either side makes the whole false, as does false.
		a, b := l.cond(x, neg, true), l.cond(y, neg, true)
		return frag{a.in(jAnd) + " and " + b.in(jAnd), jAnd, false}
	}
	a := l.cond(x, neg, false)
	b := l.cond(y, neg, strict)
	switch {
	case isAnd && !a.tri && !b.tri:
		return frag{a.in(jAnd) + " and " + b.in(jAnd), jAnd, false}
	case isAnd && !a.tri:
		return frag{a.in(jCond+1) + " ? " + b.in(jCond+1) + " : false", jCond, true}
	case isAnd:
		return frag{"($r := " + a.code + "; $r ? " + b.in(jCond+1) + " : $r)", jAtom, true}
	case !a.tri && !b.tri:
		return frag{a.in(jOr) + " or " + b.in(jOr), jOr, false}
	case !a.tri:
		return frag{a.in(jCond+1) + " ? true : " + b.in(jCond), jCond, b.tri}
	case strict:
		return frag{"($r := " + a.code + "; $r = false ? " + b.in(jCond+1) + " : $r = true)", jAtom, false}
	default:
		return frag{"($r := " + a.code + "; $r = false ? " + b.in(jCond+1) + " : $r)", jAtom, true}
	}
}

// operand is one side of a comparison, lowered.
type operand struct {
	lit  *Literal
	path *Path
}

func operandOf(e Expr) operand {
	switch x := e.(type) {
	case *Literal:
		return operand{lit: x}
	case *Path:
		return operand{path: x}
	}
	return operand{}
}

// value renders an operand's value. Loose values may read an empty list
// as nothing (jsonata-go drops an empty array reached through a path);
// exact values keep it, and null, as the data holds them. simple reports
// an expression cheap and clear enough to repeat.
func (l *lowerer) value(o operand, exact bool) (code string, simple bool) {
	if o.lit != nil {
		return jsonataLiteral(o.lit.Value), true
	}
	return l.pathValue(o.path, exact)
}

// bind repeats a value uses times: inline when simple and used at most
// twice, otherwise bound once to name in a block around body.
func bind(name, code string, simple bool, uses int, body func(ref string) string) frag {
	if simple && uses <= 2 {
		return frag{body(code), jCond, false}
	}
	return frag{"(" + name + " := " + code + "; " + body(name) + ")", jAtom, false}
}

// truthy lowers bare truthiness of a path: Python's truth value
// (undefined, none, false, 0, "", [] and {} are false).
func (l *lowerer) truthy(p *Path, neg bool) frag {
	code, simple := l.pathValue(p, false)
	return bind("$v", code, simple, 3, func(v string) string {
		if neg {
			return "$type(" + v + ") = 'array' ? $count(" + v + ") = 0 : " + v + " ? false : true"
		}
		return "$type(" + v + ") = 'array' ? $count(" + v + ") > 0 : " + v + " ? true : false"
	})
}

// test lowers "is defined" and "is none".
func (l *lowerer) test(t *Test, neg bool) frag {
	neg = neg != t.Negated
	if lit, ok := t.X.(*Literal); ok {
		if t.Name == "defined" {
			return constFrag(!neg)
		}
		return constFrag((lit.Value == nil) != neg)
	}
	p := t.X.(*Path)
	if t.Name == "none" {
		code, _ := l.pathValue(p, false)
		return frag{not(neg, "$type("+code+") = 'null'"), jCmp, false}
	}
	return l.defined(p, neg)
}

// defined tests whether the last key of p is present in its parent
// object: a key holding null is defined, as in Jinja.
func (l *lowerer) defined(p *Path, neg bool) frag {
	ri, _ := l.root(p)
	n := len(ri.keys) + len(p.Segments)
	if n == 0 {
		return frag{not(neg, "$exists("+ri.base+")"), jCmp, false}
	}
	last, guarded := l.key(ri, p, n-1)
	parent, simple := l.walk(ri, p, n-1, false)
	test := func(v string) string {
		t := asl.Quote(last) + " in $keys(" + v + ")"
		if guarded {
			t = "$type(" + v + ") = 'object' and " + t
		}
		return t
	}
	if neg {
		f := bind("$p", parent, simple, 2, test)
		return frag{"$not(" + f.code + ")", jAtom, false}
	}
	f := bind("$p", parent, simple, 2, test)
	if f.prec == jCond { // inlined: a comparison or an and
		f.prec = jAnd
	}
	return f
}

// key returns the i-th key of a path (root keys first) and whether its
// parent needs a guard (it may be something other than an object).
func (l *lowerer) key(ri rootInfo, p *Path, i int) (string, bool) {
	if i < len(ri.keys) {
		return ri.keys[i], false
	}
	j := i - len(ri.keys)
	return p.Segments[j], j >= ri.keyed
}

// pathValue renders the value at the end of p.
func (l *lowerer) pathValue(p *Path, exact bool) (string, bool) {
	ri, err := l.root(p)
	if err != nil {
		l.fail(err)
		return "false", true
	}
	return l.walk(ri, p, len(ri.keys)+len(p.Segments), exact)
}

// walk renders the value after the first n keys of p. Keys whose parent
// is known to be an object are written as a plain path; the rest go
// through a block that checks each parent is an object (Jinja finds no
// attribute on a list or a string, where a JSONata path would map over a
// list). An exact value reads the last key so that an empty list stays a
// list: jsonata-go returns nothing for a path ending at an empty array, so
// a key that is present but reads as nothing holds [].
func (l *lowerer) walk(ri rootInfo, p *Path, n int, exact bool) (string, bool) {
	var b strings.Builder
	b.WriteString(ri.base)
	i := 0
	for ; i < n; i++ {
		k, guarded := l.key(ri, p, i)
		if guarded || exact && i == n-1 {
			break
		}
		writeField(&b, k)
	}
	if i == n {
		return b.String(), true
	}
	plain := b.String()
	b.Reset()
	b.WriteString("($p := ")
	b.WriteString(plain)
	for ; i < n; i++ {
		k, guarded := l.key(ri, p, i)
		last := i == n-1
		if last {
			b.WriteString("; ")
		} else {
			b.WriteString("; $p := ")
		}
		if guarded {
			b.WriteString("$type($p) = 'object' ? ")
		}
		if exact && last {
			if guarded {
				b.WriteByte('(')
			}
			b.WriteString("$exists($p")
			writeField(&b, k)
			b.WriteString(") ? $p")
			writeField(&b, k)
			b.WriteString(" : ")
			b.WriteString(asl.Quote(k))
			b.WriteString(" in $keys($p) ? []")
			if guarded {
				b.WriteByte(')')
			}
			continue
		}
		b.WriteString("$p")
		writeField(&b, k)
	}
	b.WriteString(")")
	return b.String(), false
}

// fieldName reports whether JSONata can address k as a field: .k or
// .`k`. A backtick cannot be escaped inside a quoted name, and control
// characters, the line and paragraph separators (a definition's text is
// one line) or a {% %} delimiter have no place in one.
func fieldName(k string) bool {
	if k == "" || strings.Contains(k, "{%") || strings.Contains(k, "%}") || strings.ContainsAny(k, "\u2028\u2029") {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c == '`' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func writeField(b *strings.Builder, k string) {
	b.WriteByte('.')
	if isIdent(k) && !jsonataKeyword(k) {
		b.WriteString(k)
		return
	}
	b.WriteByte('`')
	b.WriteString(k)
	b.WriteByte('`')
}

func jsonataKeyword(k string) bool {
	switch k {
	case "and", "or", "in", "true", "false", "null", "function":
		return true
	}
	return false
}

// compare lowers a comparison (negated when neg).
func (l *lowerer) compare(n *Binary, neg, strict bool) frag {
	x, y := operandOf(n.X), operandOf(n.Y)
	if x.lit != nil && y.lit != nil {
		return constFrag(foldComparison(n.Op, x.lit.Value, y.lit.Value) != neg)
	}
	switch n.Op {
	case OpEq:
		return l.equal(x, y, neg)
	case OpNe:
		return l.equal(x, y, !neg)
	case OpIn:
		return l.in(x, y, neg, strict)
	case OpNotIn:
		return l.in(x, y, !neg, strict)
	}
	return l.order(n.Op, x, y, neg, strict)
}

// equal lowers x == y: deep equality; a missing side is equal to nothing.
func (l *lowerer) equal(x, y operand, neg bool) frag {
	if x.lit != nil {
		x, y = y, x
	}
	if y.lit == nil {
		a, _ := l.value(x, true)
		b, _ := l.value(y, true)
		return frag{not(neg, a+" = "+b), jCmp, false}
	}
	switch v := y.lit.Value.(type) {
	case nil:
		a, _ := l.value(x, false)
		return frag{not(neg, "$type("+a+") = 'null'"), jCmp, false}
	case []any:
		if len(v) == 0 {
			a, _ := l.value(x, true)
			return frag{not(neg, a+" = []"), jCmp, false}
		}
	}
	a, _ := l.value(x, false)
	return frag{not(neg, a+" = "+jsonataLiteral(y.lit.Value)), jCmp, false}
}

var orderOps = [...]string{OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}
var negatedOrder = [...]Op{OpLt: OpGe, OpLe: OpGt, OpGt: OpLe, OpGe: OpLt}

// order lowers <, <=, >, >=: defined between two numbers or two strings;
// anything else is a Jinja error.
func (l *lowerer) order(op Op, x, y operand, neg, strict bool) frag {
	if neg {
		op = negatedOrder[op]
	}
	sym := " " + orderOps[op] + " "
	if x.lit != nil || y.lit != nil {
		lit, other := x.lit, y
		if lit == nil {
			lit, other = y.lit, x
		}
		typ := "'number'"
		if _, ok := lit.Value.(string); ok {
			typ = "'string'"
		}
		code, simple := l.value(other, false)
		litCode := jsonataLiteral(lit.Value)
		f := bind("$v", code, simple, 2, func(v string) string {
			a, b := v, litCode
			if x.lit != nil {
				a, b = litCode, v
			}
			return "$type(" + v + ") = " + typ + " ? " + a + sym + b + errTail(strict)
		})
		f.tri = !strict
		return f
	}
	a, _ := l.value(x, false)
	b, _ := l.value(y, false)
	return frag{"($a := " + a + "; $b := " + b + "; $type($a) = $type($b) and $type($a) in ['number', 'string'] ? $a" + sym + "$b" + errTail(strict) + ")", jAtom, !strict}
}

// in lowers x in y (negated when neg) with Python's meaning: membership
// in a list, a substring of a string, a key of an object; x in nothing is
// false; any other container, or an unhashable or non-string needle where
// one is required, is a Jinja error.
func (l *lowerer) in(x, y operand, neg, strict bool) frag {
	if y.lit != nil {
		if s, ok := y.lit.Value.(string); ok {
			a, simple := l.value(x, false)
			f := bind("$v", a, simple, 2, func(v string) string {
				return "$type(" + v + ") = 'string' ? " + not(neg, "$contains("+asl.Quote(s)+", "+v+")") + errTail(strict)
			})
			f.tri = !strict
			return f
		}
		return l.inList(x, y.lit.Value.([]any), neg)
	}
	c, _ := l.value(y, false)
	var b strings.Builder
	if x.lit == nil {
		a, _ := l.value(x, true)
		b.WriteString("($a := " + a + "; ")
	} else {
		b.WriteString("(")
	}
	b.WriteString("$c := " + c + "; $t := $type($c); $exists($c) ? (")
	elem := func(cond string) string { // "is some element of $c ..."
		return not(neg, "true in $map($c, function($e) { "+cond+" })")
	}
	if x.lit == nil {
		b.WriteString("$t = 'array' ? " + elem("$e = $a"))
		b.WriteString(" : $t = 'string' ? ($type($a) = 'string' ? " + not(neg, "$contains($c, $a)") + errTail(strict) + ")")
		b.WriteString(" : $t = 'object' ? ($not($type($a) in ['array', 'object']) ? " + not(neg, "$a in $keys($c)") + errTail(strict) + ")")
	} else {
		lit := x.lit.Value
		lc := jsonataLiteral(lit)
		switch lit.(type) {
		case string:
			b.WriteString("$t = 'array' ? " + not(neg, lc+" in $c"))
			b.WriteString(" : $t = 'string' ? " + not(neg, "$contains($c, "+lc+")"))
			b.WriteString(" : $t = 'object' ? " + not(neg, lc+" in $keys($c)"))
		case float64, bool:
			b.WriteString("$t = 'array' ? " + not(neg, lc+" in $c"))
			b.WriteString(" : $t = 'object' ? " + boolText(neg))
		case nil:
			b.WriteString("$t = 'array' ? " + elem("$type($e) = 'null'"))
			b.WriteString(" : $t = 'object' ? " + boolText(neg))
		case []any:
			b.WriteString("$t = 'array' ? " + elem("$e = "+lc))
		}
	}
	b.WriteString(errTail(strict) + ") : " + boolText(neg) + ")")
	return frag{b.String(), jAtom, !strict}
}

// inList lowers x in [literal, ...]: true when x equals an item. It
// never errors in Jinja.
func (l *lowerer) inList(x operand, items []any, neg bool) frag {
	if len(items) == 0 {
		return constFrag(neg)
	}
	var scalars []string
	hasNull, hasEmpty := false, false
	var lists []string
	for _, it := range items {
		switch v := it.(type) {
		case nil:
			hasNull = true
		case []any:
			if len(v) == 0 {
				hasEmpty = true
			} else {
				lists = append(lists, jsonataLiteral(v))
			}
		default:
			scalars = append(scalars, jsonataLiteral(v))
		}
	}
	code, simple := l.value(x, hasEmpty)
	uses := len(lists)
	if len(scalars) > 0 {
		uses++
	}
	if hasNull {
		uses++
	}
	if hasEmpty {
		uses++
	}
	f := bind("$v", code, simple, uses, func(v string) string {
		var parts []string
		if len(scalars) > 0 {
			parts = append(parts, v+" in ["+strings.Join(scalars, ", ")+"]")
		}
		if hasNull {
			parts = append(parts, "$type("+v+") = 'null'")
		}
		for _, lc := range lists {
			parts = append(parts, v+" = "+lc)
		}
		if hasEmpty {
			parts = append(parts, v+" = []")
		}
		return strings.Join(parts, " or ")
	})
	if neg {
		return frag{"$not(" + f.code + ")", jAtom, false}
	}
	if f.prec == jCond {
		f.prec = jOr
		if uses == 1 {
			f.prec = jCmp
		}
	}
	return f
}

// foldComparison evaluates a comparison of two literals. checkComparison
// has already refused the pairs Jinja cannot compare.
func foldComparison(op Op, a, b any) bool {
	switch op {
	case OpEq:
		return Equal(a, b)
	case OpNe:
		return !Equal(a, b)
	case OpIn, OpNotIn:
		found := false
		switch c := b.(type) {
		case string:
			found = strings.Contains(c, a.(string))
		case []any:
			for _, it := range c {
				if Equal(a, it) {
					found = true
					break
				}
			}
		}
		return found == (op == OpIn)
	}
	var c int
	if x, ok := a.(float64); ok {
		y := b.(float64)
		switch {
		case x < y:
			c = -1
		case x > y:
			c = 1
		}
	} else {
		c = compareUTF16(a.(string), b.(string))
	}
	switch op {
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	default:
		return c >= 0
	}
}

// compareUTF16 orders strings by UTF-16 code units, as the reference
// JSONata (JavaScript) does.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Key(ra), utf16Key(rb)
			if ua < ub {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// utf16Key maps a rune to a key that sorts as its first UTF-16 code unit
// would (astral runes sort as their high surrogate, below U+E000).
func utf16Key(r rune) rune {
	if r >= 0x10000 {
		return 0xd800 + (r-0x10000)>>10
	}
	return r
}

// jsonataLiteral renders a literal value as JSONata.
func jsonataLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return boolText(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return asl.Quote(x)
	case []any:
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonataLiteral(e))
		}
		b.WriteByte(']')
		return b.String()
	}
	return "null"
}
