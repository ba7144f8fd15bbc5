package importer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stepline/stepline/internal/lazyregexp"
)

// Marker is the Liquid tag the importer writes in front of what it could
// not convert. No engine defines it, so a template holding it fails
// stepline validate at that point until a person rewrites it; the
// original text follows it with its delimiters spaced apart ("{ {"), so
// it is visible but never evaluated.
const Marker = "vectorstep_unconverted"

// Level says what a note asks of a person.
type Level int

const (
	// Converted: rewritten with the same meaning.
	Converted Level = iota
	// Check: rewritten, with a difference the note states.
	Check
	// Person: not converted; the output keeps the original behind Marker
	// (templates) or as written (when:, so validate refuses it).
	Person
	// Dropped: a field the importer left out, saying why.
	Dropped
)

func (l Level) String() string {
	switch l {
	case Converted:
		return "converted"
	case Check:
		return "check"
	case Person:
		return "needs a person"
	case Dropped:
		return "dropped"
	}
	return "?"
}

// tnote is a note about a template, at a byte offset of the template.
type tnote struct {
	off   int
	level Level
	kind  string
	msg   string
	orig  string
}

// scope is what a template or condition may name where it is written.
type scope struct {
	// stepKnown reports whether steps.<name> names a step that runs
	// before; nil: any name.
	stepKnown func(name string) bool
	// vars are the pipeline's vars (they shadow context names).
	vars map[string]bool
	// include records a context_template.include path the conversion
	// relies on (context.X rewritten to X).
	include func(path string)
	// mayBeAbsent reports whether steps.<name> may be missing when the
	// condition runs (the step has a when: of its own); nil: never.
	mayBeAbsent func(name string) bool
}

// contextLeaves are the fields of the reference's trigger context that
// context_template.include exposes under their own name.
var contextLeaves = map[string]bool{"severity": true, "summary": true, "source": true, "pipeline": true, "received_at": true, "fingerprint": true, "metadata": true}

// forloopNames maps Jinja's loop.* inside {% for %} to Liquid's forloop.*.
var forloopNames = map[string]string{"index": "index", "index0": "index0", "revindex": "rindex", "revindex0": "rindex0", "first": "first", "last": "last", "length": "length"}

// liquidFilters maps the Jinja filters whose Liquid counterpart means the
// same (for the arguments convertFilter accepts).
var liquidFilters = map[string]string{
	"upper": "upcase", "lower": "downcase", "length": "size", "count": "size", "first": "first", "last": "last",
	"trim": "strip", "abs": "abs", "sort": "sort", "unique": "uniq", "reverse": "reverse", "e": "escape", "escape": "escape",
}

type conv struct {
	sc    *scope
	inFor int
	notes []tnote
	base  int // offset of the expression being converted in the template
}

func (c *conv) note(off int, level Level, kind, msg, orig string) {
	c.notes = append(c.notes, tnote{off: off, level: level, kind: kind, msg: msg, orig: orig})
}

// ConvertTemplate converts a Jinja2 template of the reference to Liquid.
// It returns the Liquid text and a note for every construct it rewrote,
// rewrote with a difference, or could not convert (kept behind Marker).
func ConvertTemplate(src string) (string, []Note) {
	out, ns := convertTemplate(src, &scope{})
	return out, templateNotes(src, ns)
}

// Note is what the importer says about one place of the source.
type Note struct {
	File      string
	Line, Col int
	Level     Level
	Kind      string // the kind of construct: "filter round", "when", …
	Msg       string
	Original  string // the source text, when it is one construct
}

func (n Note) String() string {
	s := fmt.Sprintf("%s:%d:%d: %s: %s", n.File, n.Line, n.Col, n.Level, n.Msg)
	if n.Original != "" {
		s += ": " + oneLine(n.Original)
	}
	return s
}

// oneLine shortens text for a message line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		cut := 160
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// templateNotes places template notes by line and column of the text
// (1-based), for callers without a file.
func templateNotes(src string, ns []tnote) []Note {
	out := make([]Note, 0, len(ns))
	for _, n := range ns {
		line := 1 + strings.Count(src[:n.off], "\n")
		col := n.off - strings.LastIndexByte(src[:n.off], '\n')
		out = append(out, Note{Line: line, Col: col, Level: n.level, Kind: n.kind, Msg: n.msg, Original: n.orig})
	}
	return out
}

// IsTemplate reports whether s holds Jinja delimiters.
func IsTemplate(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%") || strings.Contains(s, "{#")
}

// neutralize spaces out every template delimiter in s, so that the text
// is shown as it was written and never evaluated.
func neutralize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if i+1 < len(s) {
			n := s[i+1]
			if s[i] == '{' && (n == '{' || n == '%' || n == '#') || (s[i] == '}' || s[i] == '%' || s[i] == '#') && n == '}' {
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}

// unconverted is the output for an original construct that is not converted.
func unconverted(orig string) string { return "{% " + Marker + " %}" + neutralize(orig) }

var endRawRE = lazyregexp.New(`\{%-?\s*endraw\s*-?%\}`)

func convertTemplate(src string, sc *scope) (string, []tnote) {
	c := &conv{sc: sc}
	var b strings.Builder
	var stack []string // open blocks: if, for, set, other
	i := 0
	for i < len(src) {
		j := indexDelim(src, i)
		if j < 0 {
			b.WriteString(src[i:])
			break
		}
		b.WriteString(src[i:j])
		kind := src[j : j+2]
		closer := map[string]string{"{{": "}}", "{%": "%}", "{#": "#}"}[kind]
		end := findClose(src, j+2, closer, kind != "{#")
		if end < 0 {
			c.note(j, Person, "syntax", "the tag is not closed (the reference fails to render this template)", src[j:])
			b.WriteString(unconverted(src[j:]))
			break
		}
		tag := src[j : end+2]
		inner := src[j+2 : end]
		lt, rt := "", ""
		if strings.HasPrefix(inner, "-") || strings.HasPrefix(inner, "+") {
			if inner[0] == '-' {
				lt = "-"
			}
			inner = inner[1:]
		}
		if strings.HasSuffix(inner, "-") || strings.HasSuffix(inner, "+") {
			if inner[len(inner)-1] == '-' {
				rt = "-"
			}
			inner = inner[:len(inner)-1]
		}
		innerOff := j + 2 + len(lt)
		if strings.HasPrefix(src[j+2:], "+") {
			innerOff = j + 3
		}
		i = end + 2
		switch kind {
		case "{#":
			b.WriteString("{%" + lt + " comment %}" + neutralize(inner) + "{% endcomment " + rt + "%}")
			c.note(j, Converted, "comment", "{# #} comment → {% comment %}", "")
		case "{{":
			c.base = innerOff
			out, err := c.output(inner, "{{"+lt+" ", " "+rt+"}}")
			if err != nil {
				c.fail(err, j, tag, &b)
				continue
			}
			b.WriteString(out)
		case "{%":
			name, rest := tagName(inner)
			restOff := innerOff + strings.Index(inner, rest)
			if rest == "" {
				restOff = innerOff + len(inner)
			}
			c.base = restOff
			open := "{%" + lt + " "
			close := " " + rt + "%}"
			switch name {
			case "raw":
				m := endRawRE.FindAllStringSubmatchIndex(src[i:], 1)
				if m == nil {
					c.note(j, Person, "raw", "{% raw %} is not closed", src[j:])
					b.WriteString(unconverted(src[j:]))
					i = len(src)
					continue
				}
				b.WriteString(rawText(src[i : i+m[0][0]]))
				i += m[0][1]
				c.note(j, Converted, "raw", "{% raw %} kept", "")
			case "if", "elif":
				cond, err := c.condition(rest)
				if err != nil {
					c.fail(err, j, tag, &b)
					if name == "if" {
						stack = append(stack, "if")
					}
					continue
				}
				liq := "if"
				if name == "elif" {
					liq = "elsif"
					if len(stack) == 0 || stack[len(stack)-1] != "if" {
						c.fail(&jerr{0, "elif outside an if block"}, j, tag, &b)
						continue
					}
				} else {
					stack = append(stack, "if")
				}
				b.WriteString(open + liq + " " + cond + close)
			case "else":
				if rest != "" || len(stack) == 0 || (stack[len(stack)-1] != "if" && stack[len(stack)-1] != "for") {
					c.fail(&jerr{0, "else outside an if or for block"}, j, tag, &b)
					continue
				}
				b.WriteString(open + "else" + close)
			case "endif", "endfor", "endset":
				want := strings.TrimPrefix(name, "end")
				if rest != "" || len(stack) == 0 || stack[len(stack)-1] != want {
					c.fail(&jerr{0, name + " does not close an open " + want}, j, tag, &b)
					continue
				}
				stack = stack[:len(stack)-1]
				switch name {
				case "endfor":
					c.inFor--
				case "endset":
					name = "endcapture"
				}
				b.WriteString(open + name + close)
			case "for":
				out, err := c.forTag(rest)
				stack = append(stack, "for")
				c.inFor++
				if err != nil {
					c.fail(err, j, tag, &b)
					continue
				}
				b.WriteString(open + out + close)
			case "set":
				out, block, err := c.setTag(rest)
				if block {
					stack = append(stack, "set")
				}
				if err != nil {
					c.fail(err, j, tag, &b)
					continue
				}
				b.WriteString(open + out + close)
			default:
				what := fmt.Sprintf("the tag %q has no Liquid equivalent (Stepline templates read no files and define no macros)", name)
				if name == "" {
					what = "an empty tag"
				}
				c.note(j, Person, "tag "+name, what, tag)
				b.WriteString(unconverted(tag))
			}
		}
	}
	return b.String(), c.notes
}

// fail records an unconvertible construct and writes the marker.
func (c *conv) fail(err error, at int, tag string, b *strings.Builder) {
	c.note(at, Person, "expression", err.Error(), tag)
	b.WriteString(unconverted(tag))
}

// rawText is the text of a {% raw %} block as Liquid: a raw block, with
// every "{%" written as an output of the string, so that no tag name can
// follow the delimiter in the output.
func rawText(s string) string {
	if s == "" {
		return ""
	}
	parts := strings.Split(s, "{%")
	var b strings.Builder
	for k, p := range parts {
		if k > 0 {
			b.WriteString(`{{ "{%" }}`)
		}
		if p != "" {
			b.WriteString("{% raw %}" + p + "{% endraw %}")
		}
	}
	return b.String()
}

func indexDelim(s string, from int) int {
	for k := from; k+1 < len(s); k++ {
		if s[k] == '{' && (s[k+1] == '{' || s[k+1] == '%' || s[k+1] == '#') {
			return k
		}
	}
	return -1
}

// findClose finds closer from i, skipping quoted strings when quotes.
func findClose(s string, i int, closer string, quotes bool) int {
	for k := i; k+1 < len(s); k++ {
		if quotes && (s[k] == '\'' || s[k] == '"') {
			q := s[k]
			k++
			for k < len(s) && s[k] != q {
				if s[k] == '\\' {
					k++
				}
				k++
			}
			continue
		}
		if s[k:k+2] == closer {
			return k
		}
	}
	return -1
}

func tagName(inner string) (string, string) {
	s := strings.TrimSpace(inner)
	k := 0
	for k < len(s) && isNameChar(s[k]) {
		k++
	}
	return s[:k], strings.TrimSpace(s[k:])
}

// output converts the expression of {{ }}.
func (c *conv) output(src, open, close string) (string, error) {
	e, err := parseJinja(src)
	if err != nil {
		return "", err
	}
	return c.emitOutput(e, open, close)
}

func (c *conv) emitOutput(e jexpr, open, close string) (string, error) {
	switch e := e.(type) {
	case *jcond:
		cond, err := c.cond(e.cond)
		if err != nil {
			return "", err
		}
		lt := strings.TrimSuffix(strings.TrimPrefix(open, "{{"), " ")
		rt := strings.TrimPrefix(strings.TrimSuffix(close, "}}"), " ")
		then, err := c.emitOutput(e.then, "{{ ", " }}")
		if err != nil {
			return "", err
		}
		out := "{%" + lt + " if " + cond + " %}" + then
		if e.els != nil {
			els, err := c.emitOutput(e.els, "{{ ", " }}")
			if err != nil {
				return "", err
			}
			out += "{% else %}" + els
		}
		c.note(c.base+e.off, Converted, "a if c else b", "conditional expression → {% if %}", "")
		return out + "{% endif " + rt + "%}", nil
	case *jbin:
		if e.op == "~" {
			lt := strings.TrimSuffix(strings.TrimPrefix(open, "{{"), " ")
			rt := strings.TrimPrefix(strings.TrimSuffix(close, "}}"), " ")
			l, err := c.emitOutput(e.l, "{{"+lt+" ", " }}")
			if err != nil {
				return "", err
			}
			r, err := c.emitOutput(e.r, "{{ ", " "+rt+"}}")
			if err != nil {
				return "", err
			}
			c.note(c.base+e.off, Converted, "~ concatenation", "a ~ b → {{ a }}{{ b }}", "")
			return l + r, nil
		}
	}
	v, err := c.value(e)
	if err != nil {
		return "", err
	}
	return open + v + close, nil
}

// value converts e to a Liquid filtered expression: a path or literal
// followed by filters.
func (c *conv) value(e jexpr) (string, error) {
	switch e := e.(type) {
	case *jlit, *jpath:
		return c.arg(e)
	case *jfilter:
		return c.filter(e)
	case *jbin:
		return c.arith(e)
	case *jcond:
		return "", &jerr{e.off, "a conditional expression is converted only as the whole of {{ }}"}
	case *jlist:
		return "", &jerr{e.off, "list literals are converted only after \"in\""}
	case *jcall:
		return "", &jerr{e.off, e.what + " is not converted"}
	case *jneg:
		return "", &jerr{e.off, "negation of a value is not converted"}
	case *jnot, *jtest:
		return "", &jerr{e.at(), "a test or not outside a condition is not converted"}
	}
	return "", &jerr{e.at(), "expression not converted"}
}

// arg converts a literal or a path.
func (c *conv) arg(e jexpr) (string, error) {
	switch e := e.(type) {
	case *jlit:
		switch e.kind {
		case "str":
			if strings.Contains(e.val, "{{") || strings.Contains(e.val, "{%") || strings.Contains(e.val, "}}") || strings.Contains(e.val, "%}") {
				return "", &jerr{e.off, "a string holding template delimiters is not converted"}
			}
			switch {
			case !strings.Contains(e.val, `"`):
				return `"` + e.val + `"`, nil
			case !strings.Contains(e.val, `'`):
				return `'` + e.val + `'`, nil
			}
			return "", &jerr{e.off, "a string holding both quote characters is not converted"}
		case "none":
			return "nil", nil
		}
		return e.val, nil
	case *jpath:
		return c.path(e)
	}
	return "", &jerr{e.at(), "only a name or a literal is converted here (Liquid takes no expression as a filter argument or operand)"}
}

var liquidName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *conv) path(p *jpath) (string, error) {
	root, segs := p.root, p.segs
	switch {
	case root == "loop" && c.inFor > 0:
		if len(segs) != 1 || forloopNames[segs[0].name] == "" {
			return "", &jerr{p.off, "only loop.index, index0, revindex, revindex0, first, last and length are converted"}
		}
		c.note(c.base+p.off, Converted, "loop.index", "loop."+segs[0].name+" → forloop."+forloopNames[segs[0].name], "")
		root, segs = "forloop", []jseg{{name: forloopNames[segs[0].name]}}
	case root == "_testing":
		return "", &jerr{p.off, "_testing (true in stage testing) has no Stepline equivalent"}
	case root == "context":
		r, err := c.contextRoot(p)
		if err != nil {
			return "", err
		}
		root, segs = r, segs[1:]
	case root == "steps" && len(segs) > 0 && c.sc.stepKnown != nil:
		s := segs[0]
		name := s.name
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i] // a fan_out item: steps['check/0']
		}
		if name == "" || !c.sc.stepKnown(name) {
			return "", &jerr{p.off, fmt.Sprintf("steps.%s names no step that runs before this one (the reference fails rendering it)", s.name+s.index)}
		}
	}
	var b strings.Builder
	b.WriteString(root)
	for _, s := range segs {
		switch {
		case s.index != "":
			if strings.HasPrefix(s.index, "-") {
				return "", &jerr{p.off, "negative indexes are not converted"}
			}
			b.WriteString("[" + s.index + "]")
		case liquidName.MatchString(s.name):
			b.WriteString("." + s.name)
		case !strings.Contains(s.name, `"`):
			b.WriteString(`["` + s.name + `"]`)
		case !strings.Contains(s.name, `'`):
			b.WriteString(`['` + s.name + `']`)
		default:
			return "", &jerr{p.off, "a key holding both quote characters is not converted"}
		}
	}
	return b.String(), nil
}

// contextRoot maps context.X, which the reference's documentation writes
// but its runtime never defines, to the name Stepline gives X.
func (c *conv) contextRoot(p *jpath) (string, error) {
	if len(p.segs) == 0 || p.segs[0].name == "" {
		return "", &jerr{p.off, "context is not a variable of the reference or of Stepline"}
	}
	name := p.segs[0].name
	switch {
	case name == "labels" || name == "team":
	case contextLeaves[name]:
		if c.sc.vars[name] {
			return "", &jerr{p.off, fmt.Sprintf("context.%s cannot become %s: the pipeline's var %q has that name", name, name, name)}
		}
		if c.sc.include != nil {
			c.sc.include(name)
		}
	default:
		return "", &jerr{p.off, fmt.Sprintf("context.%s has no Stepline equivalent", name)}
	}
	c.note(c.base+p.off, Check, "context.X", fmt.Sprintf("context.%s read as %s (the reference defines no context variable, so it failed or skipped here)", name, name), "")
	return name, nil
}

func (c *conv) filter(f *jfilter) (string, error) {
	x, err := c.value(f.x)
	if err != nil {
		return "", err
	}
	if f.kw {
		return "", &jerr{f.off, fmt.Sprintf("filter %q with keyword arguments is not converted", f.name)}
	}
	args := make([]string, len(f.args))
	for k, a := range f.args {
		if args[k], err = c.arg(a); err != nil {
			return "", err
		}
	}
	bad := func() (string, error) {
		return "", &jerr{f.off, fmt.Sprintf("filter %q with these arguments is not converted", f.name)}
	}
	switch f.name {
	case "round":
		if len(f.args) > 1 || len(f.args) == 1 && !isInt(f.args[0]) {
			return bad()
		}
		c.note(c.base+f.off, Check, "filter round", "round → round (Liquid rounds halves away from zero; Python's round halves to even, and prints 2.0 where Liquid prints 2)", "")
		if len(args) == 0 {
			return x + " | round", nil
		}
		return x + " | round: " + args[0], nil
	case "default", "d":
		if len(f.args) == 0 || len(f.args) > 2 || len(f.args) == 2 && !isLit(f.args[1], "bool", "true") && !isLit(f.args[1], "bool", "false") {
			return bad()
		}
		if len(f.args) == 2 && isLit(f.args[1], "bool", "true") {
			c.note(c.base+f.off, Converted, "filter default", "default(v, true) → default: v", "")
		} else {
			c.note(c.base+f.off, Check, "filter default", "default(v) → default: v (Liquid also replaces nil, false and \"\"; Jinja only a missing value)", "")
		}
		return x + " | default: " + args[0], nil
	case "join":
		switch len(args) {
		case 0:
			args = append(args, `""`)
		case 1:
		default:
			return bad()
		}
		c.note(c.base+f.off, Converted, "filter join", "join(s) → join: s", "")
		return x + " | join: " + args[0], nil
	case "replace":
		if len(args) != 2 {
			return bad()
		}
		c.note(c.base+f.off, Converted, "filter replace", "replace(a, b) → replace: a, b", "")
		return x + " | replace: " + args[0] + ", " + args[1], nil
	case "tojson":
		if len(args) != 0 {
			return bad()
		}
		c.note(c.base+f.off, Check, "filter tojson", "tojson → json (Jinja also escapes <, >, & and ' as \\u003c…)", "")
		return x + " | json", nil
	case "safe":
		if len(args) != 0 {
			return bad()
		}
		c.note(c.base+f.off, Converted, "filter safe", "safe dropped (the reference does not autoescape)", "")
		return x, nil
	}
	to, ok := liquidFilters[f.name]
	if !ok {
		return "", &jerr{f.off, fmt.Sprintf("filter %q has no Liquid equivalent of the same meaning", f.name)}
	}
	if len(args) != 0 {
		return bad()
	}
	c.note(c.base+f.off, Converted, "filter "+f.name, f.name+" → "+to, "")
	return x + " | " + to, nil
}

func isInt(e jexpr) bool {
	l, ok := e.(*jlit)
	return ok && l.kind == "num" && !strings.ContainsAny(l.val, ".eE")
}

func isNum(e jexpr) bool {
	l, ok := e.(*jlit)
	return ok && l.kind == "num"
}

func isLit(e jexpr, kind, val string) bool {
	l, ok := e.(*jlit)
	return ok && l.kind == kind && l.val == val
}

// arith converts + - * / with a number literal, and ~ inside a value.
func (c *conv) arith(e *jbin) (string, error) {
	names := map[string]string{"+": "plus", "-": "minus", "*": "times", "/": "divided_by", "~": "append"}
	name, ok := names[e.op]
	if !ok {
		return "", &jerr{e.off, fmt.Sprintf("operator %q is not converted", e.op)}
	}
	l, r := e.l, e.r
	switch e.op {
	case "~":
		lv, err := c.value(l)
		if err != nil {
			return "", err
		}
		rv, err := c.arg(r)
		if err != nil {
			return "", err
		}
		c.note(c.base+e.off, Converted, "~ concatenation", "a ~ b → a | append: b", "")
		return lv + " | append: " + rv, nil
	case "+", "*":
		if !isNum(r) && isNum(l) {
			l, r = r, l
		}
	}
	if !isNum(r) && !(e.op == "-" && isNum(l)) {
		return "", &jerr{e.off, fmt.Sprintf("%q is converted only with a number literal (Jinja adds numbers and joins strings and lists)", e.op)}
	}
	lv, err := c.value(l)
	if err != nil {
		return "", err
	}
	rv, err := c.arg(r)
	if err != nil {
		return "", err
	}
	if e.op == "/" {
		if !isNum(r) {
			return "", &jerr{e.off, "\"/\" is converted only with a number literal divisor"}
		}
		if !strings.ContainsAny(rv, ".eE") {
			rv += ".0" // Jinja's / always divides as floats
		}
		c.note(c.base+e.off, Check, "arithmetic", "a / n → a | divided_by: n (Jinja prints 3.0 where Liquid prints 3)", "")
	} else {
		c.note(c.base+e.off, Converted, "arithmetic", fmt.Sprintf("a %s n → a | %s: n", e.op, name), "")
	}
	return lv + " | " + name + ": " + rv, nil
}

// cond converts a Jinja condition to a Liquid one.
func (c *conv) condition(src string) (string, error) {
	e, err := parseJinja(src)
	if err != nil {
		return "", err
	}
	return c.cond(e)
}

var negated = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "in": "not in", "not in": "in"}

func (c *conv) cond(e jexpr) (string, error) {
	switch e := e.(type) {
	case *jbin:
		switch e.op {
		case "and", "or":
			l, err := c.cond(e.l)
			if err != nil {
				return "", err
			}
			r, err := c.cond(e.r)
			if err != nil {
				return "", err
			}
			// Liquid reads and/or left to right, one level: group every
			// nested and/or so that Jinja's precedence holds.
			if b, ok := e.l.(*jbin); ok && (b.op == "and" || b.op == "or") && b.op != e.op {
				l = "(" + l + ")"
			}
			if b, ok := e.r.(*jbin); ok && (b.op == "and" || b.op == "or") {
				r = "(" + r + ")"
			}
			c.note(c.base+e.off, Converted, "and/or", e.op+" kept", "")
			return l + " " + e.op + " " + r, nil
		case "==", "!=", "<", "<=", ">", ">=":
			l, err := c.operand(e.l)
			if err != nil {
				return "", err
			}
			r, err := c.operand(e.r)
			if err != nil {
				return "", err
			}
			return l + " " + e.op + " " + r, nil
		case "in", "not in":
			return c.in(e)
		}
	case *jnot:
		return c.not(e)
	case *jtest:
		return c.test(e, false)
	}
	o, err := c.operand(e)
	if err != nil {
		return "", err
	}
	if l, ok := e.(*jlit); (!ok || l.kind != "bool") && !c.loopFlag(e) {
		c.note(c.base+e.at(), Check, "truthiness", "a bare value tested for truth (Liquid treats \"\", 0 and [] as true, Jinja as false)", "")
	}
	return o, nil
}

// loopFlag reports whether e is loop.first or loop.last inside a for:
// always a boolean.
func (c *conv) loopFlag(e jexpr) bool {
	p, ok := e.(*jpath)
	return ok && c.inFor > 0 && p.root == "loop" && len(p.segs) == 1 && (p.segs[0].name == "first" || p.segs[0].name == "last")
}

// operand is a comparison operand: a name or literal, or a filtered
// value in parentheses.
func (c *conv) operand(e jexpr) (string, error) {
	switch e.(type) {
	case *jlit, *jpath:
		return c.arg(e)
	}
	v, err := c.value(e)
	if err != nil {
		return "", err
	}
	return "(" + v + ")", nil
}

func (c *conv) in(e *jbin) (string, error) {
	x, err := c.operand(e.l)
	if err != nil {
		return "", err
	}
	if l, ok := e.r.(*jlist); ok {
		if len(l.items) == 0 {
			return "", &jerr{e.off, "\"in\" an empty list is not converted"}
		}
		op, join := "==", " or "
		if e.op == "not in" {
			op, join = "!=", " and "
		}
		parts := make([]string, len(l.items))
		for k, it := range l.items {
			v, err := c.arg(it)
			if err != nil {
				return "", err
			}
			parts[k] = x + " " + op + " " + v
		}
		c.note(c.base+e.off, Converted, "in", "x in [a, b] → x == a or x == b", "")
		if len(parts) == 1 {
			return parts[0], nil
		}
		return "(" + strings.Join(parts, join) + ")", nil
	}
	y, err := c.operand(e.r)
	if err != nil {
		return "", err
	}
	c.note(c.base+e.off, Converted, "in", "x in y → y contains x", "")
	if e.op == "not in" {
		return "(" + y + " contains " + x + ") == false", nil
	}
	return y + " contains " + x, nil
}

func (c *conv) not(e *jnot) (string, error) {
	switch x := e.x.(type) {
	case *jnot:
		return c.cond(x.x)
	case *jbin:
		switch x.op {
		case "and", "or":
			op := map[string]string{"and": "or", "or": "and"}[x.op]
			return c.cond(&jbin{x.off, op, &jnot{x.l.at(), x.l}, &jnot{x.r.at(), x.r}})
		}
		if n, ok := negated[x.op]; ok {
			return c.cond(&jbin{x.off, n, x.l, x.r})
		}
	case *jtest:
		return c.test(x, true)
	}
	o, err := c.operand(e.x)
	if err != nil {
		return "", err
	}
	if c.loopFlag(e.x) {
		return o + " == false", nil // a boolean: no truthiness to differ
	}
	c.note(c.base+e.off, Check, "truthiness", "not x → x == nil or x == false (Liquid treats \"\", 0 and [] as true, Jinja as false)", "")
	return "(" + o + " == nil or " + o + " == false)", nil
}

func (c *conv) test(t *jtest, flip bool) (string, error) {
	not := t.not != flip
	if t.args {
		return "", &jerr{t.off, fmt.Sprintf("test %q is not converted", t.name)}
	}
	x, err := c.operand(t.x)
	if err != nil {
		return "", err
	}
	op := "=="
	switch t.name {
	case "none":
		if not {
			op = "!="
		}
		c.note(c.base+t.off, Converted, "is none", "is [not] none → == nil / != nil", "")
	case "defined", "undefined":
		if (t.name == "defined") != not {
			op = "!="
		}
		c.note(c.base+t.off, Check, "is defined", "is [not] defined → != nil / == nil (a key holding null reads as undefined)", "")
	default:
		return "", &jerr{t.off, fmt.Sprintf("test %q is not converted", t.name)}
	}
	return x + " " + op + " nil", nil
}

func (c *conv) forTag(rest string) (string, error) {
	e, err := parseFor(rest)
	if err != nil {
		return "", err
	}
	v, err := c.value(e.over)
	if err != nil {
		return "", err
	}
	if _, ok := e.over.(*jfilter); ok {
		return "", &jerr{e.over.at(), "a filtered sequence in {% for %} is not converted"}
	}
	c.note(c.base, Converted, "for", "{% for %} kept", "")
	return "for " + e.name + " in " + v, nil
}

type forExpr struct {
	name string
	over jexpr
}

func parseFor(src string) (*forExpr, error) {
	toks, err := lexJinja(src)
	if err != nil {
		return nil, err
	}
	if len(toks) < 3 || toks[0].kind != "name" || toks[1].kind != "name" || toks[1].val != "in" {
		off := 0
		if len(toks) > 1 {
			off = toks[1].off
		}
		return nil, &jerr{off, "only {% for name in sequence %} is converted"}
	}
	p := &jparser{toks: toks, i: 2}
	over, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "eof" {
		return nil, &jerr{t.off, fmt.Sprintf("%q in {%% for %%} is not converted", t.val)}
	}
	return &forExpr{name: toks[0].val, over: over}, nil
}

func (c *conv) setTag(rest string) (string, bool, error) {
	toks, err := lexJinja(rest)
	if err != nil {
		return "", false, err
	}
	if len(toks) == 2 && toks[0].kind == "name" {
		c.note(c.base, Converted, "set", "{% set x %}…{% endset %} → {% capture %}", "")
		return "capture " + toks[0].val, true, nil
	}
	if len(toks) < 3 || toks[0].kind != "name" || toks[1].kind != "op" || toks[1].val != "=" {
		return "", false, &jerr{0, "only {% set name = value %} is converted"}
	}
	e, err := parseJinja(rest[toks[2].off:])
	if err != nil {
		var je *jerr
		if errors.As(err, &je) {
			je.off += toks[2].off
		}
		return "", false, err
	}
	base := c.base
	c.base += toks[2].off
	v, err := c.value(e)
	c.base = base
	if err != nil {
		var je *jerr
		if errors.As(err, &je) {
			je.off += toks[2].off
		}
		return "", false, err
	}
	c.note(c.base, Converted, "set", "{% set %} → {% assign %}", "")
	return "assign " + toks[0].val + " = " + v, false, nil
}
