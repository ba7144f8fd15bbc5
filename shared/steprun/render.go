package steprun

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/osteele/liquid"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
)

// maxCachedTemplates bounds the parsed-template cache. A step Lambda sees a
// few distinct templates; the bound only guards against unbounded growth.
const maxCachedTemplates = 4096

// renderer parses and renders Liquid templates, caching parsed templates
// by source. Safe for concurrent use.
type renderer struct {
	engine *liquid.Engine
	mu     sync.RWMutex
	cache  map[string]*liquid.Template
	// open stands in for "${" while a template that feeds secret
	// expansion renders: what the template wrote resolves, what the
	// values brought is escaped.
	open string
}

func newRenderer(nonce string) *renderer {
	return &renderer{engine: liquid.NewEngine(), cache: make(map[string]*liquid.Template), open: "\x00" + nonce + "\x00"}
}

func isTemplate(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%")
}

func (r *renderer) parse(src string) (*liquid.Template, error) {
	r.mu.RLock()
	t, ok := r.cache[src]
	r.mu.RUnlock()
	if ok {
		return t, nil
	}
	t, err := r.engine.ParseTemplateLocation([]byte(src), "", 1)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.cache) >= maxCachedTemplates {
		clear(r.cache)
	}
	r.cache[src] = t
	r.mu.Unlock()
	return t, nil
}

// render renders src; errors are *fault.TemplateError naming the step, the
// field and the line.
func (r *renderer) render(step, field, src string, b map[string]any) (string, error) {
	if !isTemplate(src) {
		return src, nil
	}
	t, err := r.parse(src)
	if err != nil {
		return "", templateError(step, field, err)
	}
	out, serr := t.RenderString(b)
	if serr != nil {
		return "", templateError(step, field, serr)
	}
	return out, nil
}

// renderSecretSafe renders src whose result is later passed to secret
// expansion: ${NAME} the template itself wrote stays live, while any "${"
// a rendered value brought in is escaped.
func (r *renderer) renderSecretSafe(step, field, src string, b map[string]any) (string, error) {
	if !isTemplate(src) {
		return src, nil
	}
	masked := strings.ReplaceAll(src, "${", r.open)
	out, err := r.render(step, field, masked, b)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(secret.Escape(out), r.open, "${"), nil
}

// renderValue renders every string inside v (maps and lists at any depth)
// with renderSecretSafe, returning a copy; v is not changed.
func (r *renderer) renderValue(step, field string, v any, b map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		return r.renderSecretSafe(step, field, v, b)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			rv, err := r.renderValue(step, field+"."+k, e, b)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, e := range v {
			rv, err := r.renderSecretSafe(step, field+"."+k, e, b)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			rv, err := r.renderValue(step, fmt.Sprintf("%s[%d]", field, i), e, b)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

// templateError turns a Liquid error into a TemplateError naming the step,
// the field and the line.
func templateError(step, field string, err error) error {
	var se liquid.SourceError
	msg := err.Error()
	line := 0
	if errors.As(err, &se) {
		line = se.LineNumber()
		if c := se.Cause(); c != nil {
			msg = c.Error()
		}
	}
	msg = strings.TrimPrefix(msg, "Liquid error: ")
	if line > 0 {
		return fault.Errorf[fault.TemplateError]("step %q: %s: line %d: %s", step, field, line, msg)
	}
	return fault.Errorf[fault.TemplateError]("step %q: %s: %s", step, field, msg)
}
