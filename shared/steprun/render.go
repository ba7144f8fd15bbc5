package steprun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/template"
)

// maxCachedTemplates bounds the parsed-template cache. A step Lambda sees a
// few distinct templates; the bound only guards against unbounded growth.
const maxCachedTemplates = 4096

// renderer parses and renders templates through the one Liquid engine
// (shared/template), parsed templates taken from the process's cache
// (parsed). Safe for concurrent use.
type renderer struct {
	// open starts the mark that stands for a ${NAME} reference the
	// template itself wrote, while a template that feeds secret expansion
	// renders: what the template wrote resolves, what the values brought
	// is escaped.
	open string
}

func newRenderer(nonce string) *renderer {
	return &renderer{open: "\x00" + nonce + "\x00"}
}

// parsed is the process's cache of parsed templates, by source, shared by
// every Handler: a parse depends on the source alone (every renderer
// parses with the same engine), and a local run starts a Handler of its
// own for its scripted replies, which would otherwise parse its
// pipeline's templates again (PrepareTemplates fills it ahead).
// The engine is built at its first parse, not when the process starts
// (a step function's cold start).
var parsed = struct {
	engine func() *template.Engine
	mu     sync.RWMutex
	cache  map[string]*template.Template
}{
	engine: sync.OnceValue(func() *template.Engine { return template.New(template.Limits{}) }),
	cache:  make(map[string]*template.Template),
}

func (r *renderer) parse(src string) (*template.Template, error) {
	parsed.mu.RLock()
	t, ok := parsed.cache[src]
	parsed.mu.RUnlock()
	if ok {
		return t, nil
	}
	t, err := parsed.engine().Parse(src)
	if err != nil {
		return nil, err
	}
	keep([]string{src}, []*template.Template{t})
	return t, nil
}

// keep adds parsed templates to the cache, emptied first when full.
func keep(srcs []string, ts []*template.Template) {
	parsed.mu.Lock()
	defer parsed.mu.Unlock()
	for i, t := range ts {
		if t == nil {
			continue
		}
		if len(parsed.cache) >= maxCachedTemplates {
			clear(parsed.cache)
		}
		parsed.cache[srcs[i]] = t
	}
}

// PrepareTemplates parses the templates among srcs this process has not
// parsed yet, in one pass of the Liquid library (template.ParseAll: the
// library compiles a regular expression at every parse, most of a short
// template's parse), for the steps to find parsed. Text without Liquid
// markup is left out; a template that does not parse is left for its
// step to report, as it would have been.
func PrepareTemplates(srcs []string) {
	var todo []string
	seen := make(map[string]bool, len(srcs))
	parsed.mu.RLock()
	for _, src := range srcs {
		if _, ok := parsed.cache[src]; !ok && template.IsTemplate(src) && !seen[src] {
			seen[src] = true
			todo = append(todo, src)
		}
	}
	parsed.mu.RUnlock()
	if len(todo) == 0 {
		return
	}
	ts, _ := parsed.engine().ParseAll(todo)
	keep(todo, ts)
}

// render renders src; errors are *fault.TemplateError naming the step, the
// field and the line. Rendering stops when ctx is done.
func (r *renderer) render(ctx context.Context, step, field, src string, b map[string]any) (string, error) {
	if !template.IsTemplate(src) {
		return src, nil
	}
	t, err := r.parse(src)
	if err != nil {
		return "", templateError(step, field, err)
	}
	out, err := t.Render(ctx, b)
	if err != nil {
		return "", templateError(step, field, err)
	}
	return out, nil
}

// renderSecretSafe renders src whose result is later passed to secret
// expansion: a ${NAME} the template itself wrote stays a reference, while
// any "$" a rendered value brought in is escaped (secret.Escape), so that
// no value can make, unmake or move a reference.
func (r *renderer) renderSecretSafe(ctx context.Context, step, field, src string, b map[string]any) (string, error) {
	if !template.IsTemplate(src) {
		return src, nil
	}
	masked := secret.MapRefs(src, func(name string) string { return r.open + name + "\x00" })
	out, err := r.render(ctx, step, field, masked, b)
	if err != nil {
		return "", err
	}
	return r.unmask(secret.Escape(out)), nil
}

// unmask turns the marks renderSecretSafe made back into references.
func (r *renderer) unmask(s string) string {
	if !strings.Contains(s, r.open) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, r.open)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		rest := s[i+len(r.open):]
		j := strings.IndexByte(rest, 0)
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString("${" + rest[:j] + "}")
		s = rest[j+1:]
	}
}

// renderValue renders every string inside v (maps and lists at any depth)
// with renderSecretSafe, returning a copy; v is not changed.
func (r *renderer) renderValue(ctx context.Context, step, field string, v any, b map[string]any) (any, error) {
	return eachString(field, v, func(field, s string) (string, error) {
		return r.renderSecretSafe(ctx, step, field, s, b)
	})
}

// renderData renders every string inside v as renderValue does, but as
// data: the result is not expanded for secrets later.
func (r *renderer) renderData(ctx context.Context, step, field string, v any, b map[string]any) (any, error) {
	return eachString(field, v, func(field, s string) (string, error) {
		return r.render(ctx, step, field, s, b)
	})
}

// eachString returns a copy of v with every string inside it (in
// map[string]any, map[string]string and []any, at any depth) replaced by
// f's answer; field names where each sits ("headers.X", "list[2]"). Maps
// are walked in key order, so the first error is always the same one.
func eachString(field string, v any, f func(field, s string) (string, error)) (any, error) {
	switch v := v.(type) {
	case string:
		return f(field, v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			rv, err := eachString(field+"."+k, v[k], f)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			rv, err := f(field+"."+k, v[k])
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			rv, err := eachString(fmt.Sprintf("%s[%d]", field, i), e, f)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

// templateError turns a template error into a TemplateError naming the
// step, the field and the line.
func templateError(step, field string, err error) error {
	var te *template.Error
	if errors.As(err, &te) && te.Line > 0 {
		return fault.Errorf[fault.TemplateError]("step %q: %s: line %d: %s", step, field, te.Line, te.Msg)
	}
	if te != nil {
		return fault.Errorf[fault.TemplateError]("step %q: %s: %s", step, field, te.Msg)
	}
	return fault.Errorf[fault.TemplateError]("step %q: %s: %s", step, field, err)
}
