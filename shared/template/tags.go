package template

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// addTags defines Stepline's tags on c (see the package doc).
func addTags(c render.Config) {
	c.AddTag("assign", assignTag)
	c.AddTag("break", loopControlTag(errBreak))
	c.AddTag("continue", loopControlTag(errContinue))
	c.AddTag("cycle", cycleTag)
	for _, name := range []string{"include", "render"} {
		c.AddTag(name, refusedTag(name, "templates cannot read files"))
	}
	c.AddBlock("tablerow").Compiler(func(render.BlockNode) (func(io.Writer, render.Context) error, error) {
		return nil, errors.New("{% tablerow %} is not available: it writes HTML tables")
	})
	c.AddBlock("capture").Compiler(captureCompiler)
	c.AddBlock("case").Clause("when").Clause("else").Compiler(caseCompiler)
	c.AddBlock("comment") // the parser skips its content
	c.AddBlock("for").Clause("else").Compiler(forCompiler)
	c.AddBlock("if").Clause("else").Clause("elsif").Compiler(ifCompiler(true))
	c.AddBlock("raw") // the parser keeps its content as text
	c.AddBlock("unless").Clause("else").Compiler(ifCompiler(false))
}

func refusedTag(name, why string) render.TagCompiler {
	return func(string) (func(io.Writer, render.Context) error, error) {
		return nil, fmt.Errorf("{%% %s %%} is not allowed: %s", name, why)
	}
}

func assignTag(args string) (func(io.Writer, render.Context) error, error) {
	stmt, err := expressions.ParseStatement(expressions.AssignStatementSelector, args)
	if err != nil {
		return nil, err
	}
	a := stmt.Assignment
	return func(_ io.Writer, ctx render.Context) error {
		v, err := ctx.Evaluate(a.ValueFn)
		if err != nil {
			return err
		}
		b := budgetOf(ctx)
		if err := b.value(v); err != nil {
			return err
		}
		ctx.Set(a.Variable, v)
		return nil
	}, nil
}

func captureCompiler(node render.BlockNode) (func(io.Writer, render.Context) error, error) {
	name := strings.TrimSpace(node.Args)
	if name == "" {
		return nil, errors.New("capture needs a variable name")
	}
	return func(_ io.Writer, ctx render.Context) error {
		b := budgetOf(ctx)
		w := &capped{bud: b, max: b.lim.Value, what: "value"}
		if err := ctx.RenderChildren(w); err != nil {
			return err
		}
		ctx.Set(name, w.b.String())
		return nil
	}, nil
}

func caseCompiler(node render.BlockNode) (func(io.Writer, render.Context) error, error) {
	sel, err := expressions.Parse(node.Args)
	if err != nil {
		return nil, err
	}
	type clause struct {
		exprs []expressions.Expression // nil: else
		body  *render.BlockNode
	}
	var clauses []clause
	for _, c := range node.Clauses {
		if c.Name != "when" {
			clauses = append(clauses, clause{body: c})
			continue
		}
		stmt, err := expressions.ParseStatement(expressions.WhenStatementSelector, c.Args)
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, clause{exprs: stmt.When.Exprs, body: c})
	}
	return func(w io.Writer, ctx render.Context) error {
		v, err := ctx.Evaluate(sel)
		if err != nil {
			return err
		}
		for _, c := range clauses {
			if c.exprs == nil {
				return ctx.RenderBlock(w, c.body)
			}
			for _, e := range c.exprs {
				wv, err := ctx.Evaluate(e)
				if err != nil {
					return err
				}
				if values.Equal(v, wv) {
					return ctx.RenderBlock(w, c.body)
				}
			}
		}
		return nil
	}, nil
}

func ifCompiler(polarity bool) render.BlockCompiler {
	return func(node render.BlockNode) (func(io.Writer, render.Context) error, error) {
		type branch struct {
			test expressions.Expression
			body *render.BlockNode
		}
		test, err := expressions.Parse(node.Args)
		if err != nil {
			return nil, err
		}
		if !polarity {
			test = expressions.Not(test)
		}
		branches := []branch{{test, &node}}
		for _, c := range node.Clauses {
			t := expressions.Constant(true)
			if c.Name == "elsif" {
				if t, err = expressions.Parse(c.Args); err != nil {
					return nil, err
				}
			}
			branches = append(branches, branch{t, c})
		}
		return func(w io.Writer, ctx render.Context) error {
			for _, b := range branches {
				v, err := ctx.Evaluate(b.test)
				if err != nil {
					return err
				}
				if v != nil && v != false {
					return ctx.RenderBlock(w, b.body)
				}
			}
			return nil
		}, nil
	}
}

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

func loopControlTag(sentinel error) render.TagCompiler {
	return func(string) (func(io.Writer, render.Context) error, error) {
		return func(_ io.Writer, ctx render.Context) error { return ctx.WrapError(sentinel) }, nil
	}
}

// forloopKey is the variable a loop's body sees its position in;
// cyclesKey, inside it, holds the loop's {% cycle %} counters.
const (
	forloopKey = "forloop"
	cyclesKey  = ".cycles"
)

func cycleTag(args string) (func(io.Writer, render.Context) error, error) {
	stmt, err := expressions.ParseStatement(expressions.CycleStatementSelector, args)
	if err != nil {
		return nil, err
	}
	c := stmt.Cycle
	return func(w io.Writer, ctx render.Context) error {
		fl, _ := ctx.Get(forloopKey).(map[string]any)
		counts, _ := fl[cyclesKey].(map[string]int)
		if counts == nil {
			return ctx.Errorf("cycle must be within a for loop")
		}
		n := counts[c.Group]
		counts[c.Group] = n + 1
		_, err := io.WriteString(w, c.Values[n%len(c.Values)])
		return err
	}, nil
}

func forCompiler(node render.BlockNode) (func(io.Writer, render.Context) error, error) {
	stmt, err := expressions.ParseStatement(expressions.LoopStatementSelector, node.Args)
	if err != nil {
		return nil, err
	}
	loop := stmt.Loop
	if len(node.Clauses) > 1 {
		return nil, errors.New("a for loop takes at most one else")
	}
	if loop.Cols != nil {
		return nil, errors.New("cols is a tablerow parameter, not one of for")
	}
	return func(w io.Writer, ctx render.Context) error {
		v, err := ctx.Evaluate(loop.Expr)
		if err != nil {
			return err
		}
		seq := sequenceOf(v)
		if seq == nil {
			return nil
		}
		if seq, err = modify(loop, ctx, seq); err != nil {
			return err
		}
		if seq.Len() == 0 && len(node.Clauses) == 1 {
			return ctx.RenderBlock(w, node.Clauses[0])
		}
		return runLoop(loop.Variable, seq, w, ctx)
	}, nil
}

func runLoop(variable string, seq sequence, w io.Writer, ctx render.Context) error {
	b := budgetOf(ctx)
	defer func(fl, v any) { // the loop variables are visible only inside
		ctx.Set(forloopKey, fl)
		ctx.Set(variable, v)
	}(ctx.Get(forloopKey), ctx.Get(variable))
	cycles := map[string]int{}
	n := seq.Len()
	for i := 0; i < n; i++ {
		if err := b.iterate(); err != nil {
			return err
		}
		ctx.Set(variable, seq.Index(i))
		ctx.Set(forloopKey, map[string]any{
			"first": i == 0, "last": i == n-1,
			"index": i + 1, "index0": i,
			"rindex": n - i, "rindex0": n - i - 1,
			"length": n, cyclesKey: cycles,
		})
		err := ctx.RenderChildren(w)
		if err == nil {
			continue
		}
		switch err.Cause() {
		case errBreak:
			return nil
		case errContinue:
			continue
		}
		return err
	}
	return nil
}

// sequence is what a loop iterates: indexed, with a length, lazily (a
// range is never made into a list).
type sequence interface {
	Len() int
	Index(int) any
}

// sequenceOf is the sequence a loop over v iterates: lists and ranges as
// they are, a map as its [key, value] pairs in key order; nil for
// anything else (a loop over it renders nothing).
func sequenceOf(v any) sequence {
	if s, ok := v.(sequence); ok {
		return s
	}
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Slice:
		return reflectSeq{rv}
	case reflect.Map:
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool {
			return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface())
		})
		pairs := make([]any, len(keys))
		for i, k := range keys {
			pairs[i] = []any{k.Interface(), rv.MapIndex(k).Interface()}
		}
		return reflectSeq{reflect.ValueOf(pairs)}
	}
	return nil
}

type reflectSeq struct{ v reflect.Value }

func (s reflectSeq) Len() int        { return s.v.Len() }
func (s reflectSeq) Index(i int) any { return s.v.Index(i).Interface() }

// modify applies a loop's modifiers, in the library's order: reversed,
// then offset, then limit.
func modify(loop expressions.Loop, ctx render.Context, s sequence) (sequence, error) {
	if loop.Reversed {
		s = reversed{s}
	}
	if loop.Offset != nil {
		v, err := ctx.Evaluate(loop.Offset)
		if err != nil {
			return nil, err
		}
		off, ok := v.(int)
		if !ok {
			return nil, ctx.Errorf("loop offset must be an integer")
		}
		if off > 0 {
			s = offsetSeq{s, off}
		}
	}
	if loop.Limit != nil {
		v, err := ctx.Evaluate(loop.Limit)
		if err != nil {
			return nil, err
		}
		lim, ok := v.(int)
		if !ok {
			return nil, ctx.Errorf("loop limit must be an integer")
		}
		if lim >= 0 {
			s = limitSeq{s, lim}
		}
	}
	return s, nil
}

type reversed struct{ s sequence }

func (r reversed) Len() int        { return r.s.Len() }
func (r reversed) Index(i int) any { return r.s.Index(r.s.Len() - 1 - i) }

type offsetSeq struct {
	s sequence
	n int
}

func (o offsetSeq) Len() int        { return max(0, o.s.Len()-o.n) }
func (o offsetSeq) Index(i int) any { return o.s.Index(i + o.n) }

type limitSeq struct {
	s sequence
	n int
}

func (l limitSeq) Len() int        { return min(l.n, l.s.Len()) }
func (l limitSeq) Index(i int) any { return l.s.Index(i) }
