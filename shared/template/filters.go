package template

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// guardedFilters registers the library's filters on an engine, each
// behind guard.
type guardedFilters struct{ e *Engine }

func (g guardedFilters) AddFilter(name string, fn any) {
	g.e.filters[name] = true
	g.e.cfg.AddFilter(name, guard(name, fn, g.e.lim))
}

// guard wraps a library filter so that it is never given, and never
// returns, a value over the value cap, and so that filters whose result
// can grow faster than their input (replace, join, split) are refused
// before they build it. It takes its arguments unconverted, so that a
// range is measured before anything makes it into a list.
func guard(name string, fn any, lim Limits) func(any, ...any) (any, error) {
	f := reflect.ValueOf(fn)
	grow := growth[name]
	return func(in any, args ...any) (any, error) {
		all := append([]any{in}, args...)
		for _, a := range all {
			if measure(a, lim.Value) > lim.Value {
				return nil, &LimitError{What: "value", Limit: lim.Value}
			}
		}
		if grow != nil && grow(all) > lim.Value {
			return nil, &LimitError{What: "value", Limit: lim.Value}
		}
		out, err := values.Call(f, all)
		if err != nil {
			return nil, err
		}
		if measure(out, lim.Value) > lim.Value {
			return nil, &LimitError{What: "value", Limit: lim.Value}
		}
		return out, nil
	}
}

// growth estimates, from their arguments, the size of the results of the
// filters whose result can be much larger than their arguments.
var growth = map[string]func(args []any) int{
	"replace": func(a []any) int {
		s, old, repl := arg(a, 0), arg(a, 1), arg(a, 2)
		if old == "" {
			return len(s) + (utf8.RuneCountInString(s)+1)*len(repl)
		}
		return len(s) + strings.Count(s, old)*max(0, len(repl)-len(old))
	},
	"join": func(a []any) int {
		sep := " "
		if len(a) > 1 {
			sep = arg(a, 1)
		}
		n := 1
		if rv := reflect.ValueOf(a[0]); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
			n = rv.Len()
		}
		return measure(a[0], 1<<62) + n*len(sep)
	},
	"split": func(a []any) int {
		s, sep := arg(a, 0), arg(a, 1)
		n := strings.Count(s, sep) + 1
		if sep == "" {
			n = utf8.RuneCountInString(s)
		}
		return len(s) + n*itemSize
	},
	"uniq": func(a []any) int {
		// uniq compares lists and maps pairwise: n² comparisons.
		rv := reflect.ValueOf(a[0])
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return 0
		}
		n := rv.Len()
		for i := 0; i < n; i++ {
			switch reflect.ValueOf(rv.Index(i).Interface()).Kind() {
			case reflect.Slice, reflect.Map, reflect.Array, reflect.Struct:
				return n * n / 8
			}
		}
		return 0
	},
}

// arg is argument i as a filter taking a string would see it.
func arg(a []any, i int) string {
	if i >= len(a) || a[i] == nil {
		return ""
	}
	if s, ok := a[i].(string); ok {
		return s
	}
	return fmt.Sprint(a[i])
}

// itemSize is what a list item or a map entry counts for besides its
// content.
const itemSize = 16

// measure is the size a value counts for against the value cap: a
// string's bytes, a number 8, a list or map its items' sizes plus
// itemSize each. It stops counting once past limit.
func measure(v any, limit int) int {
	n := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case nil, bool, int, int64, float64:
			n += 8
			return
		case string:
			n += len(x)
			return
		case []byte:
			n += len(x)
			return
		case values.Range:
			n += max(0, x.Len()) * 8
			return
		case []any:
			for _, e := range x {
				n += itemSize
				if depth < 64 {
					walk(e, depth+1)
				}
				if n > limit {
					return
				}
			}
			return
		case map[string]any:
			for k, e := range x {
				n += itemSize + len(k)
				if depth < 64 {
					walk(e, depth+1)
				}
				if n > limit {
					return
				}
			}
			return
		}
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.String:
			n += rv.Len()
		case reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len() && n <= limit; i++ {
				n += itemSize
				if depth < 64 {
					walk(rv.Index(i).Interface(), depth+1)
				}
			}
		case reflect.Map:
			it := rv.MapRange()
			for it.Next() && n <= limit {
				n += itemSize
				if depth < 64 {
					walk(it.Key().Interface(), depth+1)
					walk(it.Value().Interface(), depth+1)
				}
			}
		default:
			n += 8
		}
	}
	walk(v, 0)
	return n
}

// value checks a value a tag is about to keep against the value cap.
func (b *budget) value(v any) error {
	if measure(v, b.lim.Value) > b.lim.Value {
		return b.fail(&LimitError{What: "value", Limit: b.lim.Value})
	}
	return b.alive()
}

// checkFilters reports the first filter root uses that the engine does
// not have, located in src.
func (e *Engine) checkFilters(src string, root render.Node) error {
	var found *Error
	var walk func(n render.Node)
	check := func(tokSrc, args string, line int) {
		if found != nil {
			return
		}
		for _, f := range filterNames(args) {
			if e.filters[f.name] {
				continue
			}
			off := -1
			if start := lineStart(src, line); start <= len(src) {
				if i := strings.Index(src[start:], tokSrc); i >= 0 {
					if j := strings.Index(tokSrc, args); j >= 0 {
						off = start + i + j + f.offset
					}
				}
			}
			found = &Error{Line: line, Offset: off, Msg: fmt.Sprintf("undefined filter %q", f.name)}
			return
		}
	}
	walk = func(n render.Node) {
		switch n := n.(type) {
		case *render.SeqNode:
			for _, c := range n.Children {
				walk(c)
			}
		case *render.ObjectNode:
			check(n.Source, n.Args, n.SourceLoc.LineNo)
		case *render.TagNode:
			check(n.Source, n.Args, n.SourceLoc.LineNo)
		case *render.BlockNode:
			check(n.Source, n.Args, n.SourceLoc.LineNo)
			for _, c := range n.Body {
				walk(c)
			}
			for _, c := range n.Clauses {
				walk(c)
			}
		}
	}
	walk(root)
	if found != nil {
		return found
	}
	return nil
}

type filterUse struct {
	name   string
	offset int // in the expression
}

// filterNames lists the filters an expression applies: the names after a
// "|" outside string literals.
func filterNames(expr string) []filterUse {
	var out []filterUse
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '\'', '"':
			j := strings.IndexByte(expr[i+1:], c)
			if j < 0 {
				return out
			}
			i += j + 1
		case '|':
			k := i + 1
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n' || expr[k] == '\r') {
				k++
			}
			start := k
			for k < len(expr) && identByte(expr[k], k == start) {
				k++
			}
			if k > start {
				out = append(out, filterUse{name: expr[start:k], offset: start})
			}
			i = k - 1
		}
	}
	return out
}

func identByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= '0' && c <= '9', c == '-':
		return !first
	}
	return false
}
