package template

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/filters"
	"github.com/osteele/liquid/parser"
	"github.com/osteele/liquid/render"
)

// The default caps of one render (see Limits).
const (
	DefaultMaxIterations = 100_000 // loop iterations, all loops of a render together
	DefaultMaxOutput     = 2 << 20 // bytes of rendered text
	DefaultMaxValue      = 2 << 20 // bytes of one value a filter, assign or capture makes
	DefaultMaxTime       = 10 * time.Second
)

// Limits are the caps of one render. Zero fields take the defaults.
type Limits struct {
	// Iterations caps the loop iterations of a render, all {% for %}
	// loops together, nested ones included.
	Iterations int
	// Output caps the bytes a render writes.
	Output int
	// Value caps the size of any one value a filter, {% assign %} or
	// {% capture %} produces or a filter is given: a string's bytes, a
	// list's or map's items and their contents (8 bytes for a number).
	Value int
	// Time caps how long one render may take, besides the deadline of
	// the context it renders under.
	Time time.Duration
}

// DefaultLimits are the caps Stepline renders with.
func DefaultLimits() Limits {
	return Limits{Iterations: DefaultMaxIterations, Output: DefaultMaxOutput, Value: DefaultMaxValue, Time: DefaultMaxTime}
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.Iterations <= 0 {
		l.Iterations = d.Iterations
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Value <= 0 {
		l.Value = d.Value
	}
	if l.Time <= 0 {
		l.Time = d.Time
	}
	return l
}

// Engine parses Liquid templates with Stepline's tags and guarded filters.
// It is immutable once built and safe for concurrent use.
type Engine struct {
	cfg     render.Config
	lim     Limits
	filters map[string]bool
}

// New returns an engine with the given caps (zero fields: the defaults).
func New(lim Limits) *Engine {
	e := &Engine{cfg: render.NewConfig(), lim: lim.orDefaults(), filters: map[string]bool{}}
	filters.AddStandardFilters(guardedFilters{e})
	addTags(e.cfg)
	return e
}

// Limits returns the engine's caps.
func (e *Engine) Limits() Limits { return e.lim }

// HasFilter reports whether name is a filter templates may use.
func (e *Engine) HasFilter(name string) bool { return e.filters[name] }

// Template is a parsed template. Safe for concurrent rendering.
type Template struct {
	root render.Node
	cfg  *render.Config
	lim  Limits
	// tags: the template has a tag ({%), so a render's budget goes among
	// its bindings, where the assign, capture and for tags read it. A
	// template of output markup only reads the budget from its writer.
	tags bool
}

// Parse parses src. Syntax errors, unknown or refused tags and unknown
// filters are an *Error locating the problem in src.
func (e *Engine) Parse(src string) (*Template, error) {
	root, perr := e.cfg.Compile(src, parser.SourceLoc{LineNo: 1})
	if perr != nil {
		return nil, parseError(src, perr)
	}
	if err := e.checkFilters(src, root); err != nil {
		return nil, err
	}
	return e.template(src, root), nil
}

// template is the Template of src, compiled to root.
func (e *Engine) template(src string, root render.Node) *Template {
	return &Template{root: root, cfg: &e.cfg, lim: e.lim, tags: strings.Contains(src, "{%")}
}

// IsTemplate reports whether s holds Liquid markup at all; text without
// it renders as itself.
func IsTemplate(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%")
}

// Render renders t with bindings b, which it does not change. It stops
// with a *LimitError when a cap is reached, and with ctx's error when ctx
// is done; template errors are an *Error with the line.
func (t *Template) Render(ctx context.Context, b map[string]any) (out string, err error) {
	// The time cap is a deadline the budget reads the clock against, not
	// a context.WithTimeout: a timer armed and stopped at every render
	// was a fifth of a short template's render.
	bud := &budget{ctx: ctx, deadline: time.Now().Add(t.lim.Time), lim: t.lim}
	// The library copies the bindings it renders with (its assign tag
	// writes to its copy), so b is handed on as it is unless the budget
	// must go among them.
	vars := b
	if t.tags {
		vars = make(map[string]any, len(b)+1)
		for k, v := range b {
			vars[k] = v
		}
		vars[budgetKey] = bud
	}
	w := &capped{bud: bud, max: t.lim.Output, what: "output"}
	defer func() {
		// The library panics when a writer fails during a flush; a
		// writer fails only when a cap is reached or ctx is done.
		if r := recover(); r != nil {
			if bud.err != nil {
				out, err = "", &Error{Line: -1, Offset: -1, Msg: bud.err.Error(), Err: bud.err}
				return
			}
			out, err = "", &Error{Line: -1, Offset: -1, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	if rerr := render.Render(t.root, w, vars, *t.cfg); rerr != nil {
		return "", renderError(rerr, bud.err)
	}
	if bud.err != nil { // a cap reached inside a construct that swallowed the error
		return "", &Error{Line: -1, Offset: -1, Msg: bud.err.Error(), Err: bud.err}
	}
	return w.b.String(), nil
}

// budgetKey names the render's budget among the bindings. Liquid
// identifiers cannot hold a NUL, so no template can read or set it.
const budgetKey = "\x00stepline.budget"

// budget is what one render may still spend.
type budget struct {
	ctx        context.Context
	deadline   time.Time // when the render's time cap is reached
	lim        Limits
	iterations int
	err        error // the first cap reached, or ctx's error
}

// fail records err as the render's reason to stop and returns it.
func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// iterate spends one loop iteration.
func (b *budget) iterate() error {
	if b.err != nil {
		return b.err
	}
	b.iterations++
	if b.iterations > b.lim.Iterations {
		return b.fail(&LimitError{What: "loop iterations", Limit: b.lim.Iterations})
	}
	return b.alive()
}

// alive reports ctx's error once it is done, and
// context.DeadlineExceeded once the render's time cap is reached (what a
// context with that timeout would report).
func (b *budget) alive() error {
	if b.err != nil {
		return b.err
	}
	if b.ctx != nil {
		if err := b.ctx.Err(); err != nil {
			return b.fail(fmt.Errorf("rendering stopped: %w", err))
		}
	}
	if b.expired(time.Now()) {
		return b.fail(fmt.Errorf("rendering stopped: %w", context.DeadlineExceeded))
	}
	return nil
}

// expired reports whether the time cap is reached at now: at its
// deadline and after. A budget without a deadline never expires.
func (b *budget) expired(now time.Time) bool {
	return !b.deadline.IsZero() && !now.Before(b.deadline)
}

func budgetOf(ctx render.Context) *budget {
	if b, ok := ctx.Get(budgetKey).(*budget); ok {
		return b
	}
	return &budget{lim: DefaultLimits()}
}

// capped is a writer holding at most max bytes; past that it fails.
type capped struct {
	bud  *budget
	b    strings.Builder
	max  int
	what string
}

func (w *capped) Write(p []byte) (int, error) {
	if err := w.bud.alive(); err != nil {
		return 0, err
	}
	if w.b.Len()+len(p) > w.max {
		return 0, w.bud.fail(&LimitError{What: w.what, Limit: w.max})
	}
	return w.b.Write(p)
}

// LimitError reports a render that reached one of its caps.
type LimitError struct {
	What  string // "loop iterations", "output", "value"
	Limit int
}

func (e *LimitError) Error() string {
	switch e.What {
	case "loop iterations":
		return fmt.Sprintf("loops run more than %d iterations (the template limit)", e.Limit)
	case "output":
		return fmt.Sprintf("output is larger than %d bytes (the template limit)", e.Limit)
	}
	return fmt.Sprintf("a value is larger than %d bytes (the template limit)", e.Limit)
}

// Error is a template that cannot be parsed or rendered.
type Error struct {
	Line   int    // 1-based line in the template; -1 when unknown
	Offset int    // byte offset in the template of the construct at fault; -1 when unknown
	Msg    string // lower-case, without position
	Err    error  // the cause, when there is one (a *LimitError, a context error)
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// parseError turns a library error into an *Error, locating the token it
// quotes.
func parseError(src string, err parser.Error) *Error {
	line := err.LineNumber()
	msg, token := splitMessage(err.Error())
	off := -1
	if token != "" {
		if i := strings.Index(src[lineStart(src, line):], token); i >= 0 {
			off = lineStart(src, line) + i
		} else if i := strings.Index(src, token); i >= 0 {
			off = i
		}
	}
	if off < 0 && line > 0 {
		off = lineStart(src, line)
	}
	if line <= 0 {
		line = -1
	}
	return &Error{Line: line, Offset: off, Msg: msg, Err: err.Cause()}
}

// renderError turns a library render error into an *Error; stop, when
// set, is the budget's reason and wins over the library's wording of it.
func renderError(err error, stop error) *Error {
	line := -1
	var le interface{ LineNumber() int }
	if errors.As(err, &le) && le.LineNumber() > 0 {
		line = le.LineNumber()
	}
	if stop != nil {
		return &Error{Line: line, Offset: -1, Msg: stop.Error(), Err: stop}
	}
	msg, _ := splitMessage(err.Error())
	var cause error
	var ce interface{ Cause() error }
	if errors.As(err, &ce) {
		cause = ce.Cause()
	}
	var fe expressions.FilterError
	if errors.As(cause, &fe) { // the library's wording quotes the cause with %q
		msg = fmt.Sprintf("filter %q: %s", fe.FilterName, fe.Err)
		cause = fe.Err
	}
	return &Error{Line: line, Offset: -1, Msg: msg, Err: cause}
}

// splitMessage takes the library's "Liquid error (line N): msg in {% t %}"
// apart into msg (lower-cased first letter) and the quoted token.
func splitMessage(s string) (msg, token string) {
	msg = s
	// A tag's error is wrapped again by its enclosing nodes: take every
	// layer off.
	for strings.HasPrefix(msg, "Liquid error") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	for {
		i := strings.LastIndex(msg, " in {")
		if i < 0 {
			break
		}
		msg, token = msg[:i], msg[i+4:]
	}
	msg = strings.TrimSpace(msg)
	if msg != "" && msg[0] >= 'A' && msg[0] <= 'Z' && (len(msg) < 2 || msg[1] < 'A' || msg[1] > 'Z') {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	return msg, token
}

// lineStart is the byte offset where 1-based line starts in s.
func lineStart(s string, line int) int {
	off := 0
	for i := 1; i < line; i++ {
		j := strings.IndexByte(s[off:], '\n')
		if j < 0 {
			return off
		}
		off += j + 1
	}
	return off
}
