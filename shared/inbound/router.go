package inbound

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stepline/stepline/shared/pipeline"
)

// Router picks the pipeline an event starts. Safe for concurrent use; it
// never changes after NewRouter (build a new one to reload).
type Router struct {
	routes []route
	byName map[string]*pipeline.Pipeline
	order  []string // every pipeline name, in the order given
}

type route struct {
	p        *pipeline.Pipeline
	matchers []matcher
}

// NewRouter returns a router over ps, which are tried in the order given
// (package intake's LoadPipelines gives file-name order). A pipeline without a trigger
// block is reachable by name only. Errors: a nil or unnamed pipeline, two
// pipelines with one name, an invalid trigger.match.
func NewRouter(ps []*pipeline.Pipeline) (*Router, error) {
	r := &Router{byName: make(map[string]*pipeline.Pipeline, len(ps))}
	var errs []error
	for i, p := range ps {
		if p == nil || p.Name == "" {
			errs = append(errs, fmt.Errorf("pipeline %d has no name", i))
			continue
		}
		if _, dup := r.byName[p.Name]; dup {
			errs = append(errs, fmt.Errorf("pipeline %q is defined twice%s", p.Name, at(p.Pos)))
			continue
		}
		r.byName[p.Name] = p
		r.order = append(r.order, p.Name)
		if p.Trigger == nil {
			continue
		}
		rt := route{p: p}
		for _, m := range p.Trigger.Match {
			cm, err := compileMatch(m)
			if err != nil {
				errs = append(errs, fmt.Errorf("pipeline %q: %w", p.Name, err))
				continue
			}
			rt.matchers = append(rt.matchers, cm)
		}
		r.routes = append(r.routes, rt)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	return r, nil
}

func at(p pipeline.Pos) string {
	if p.File == "" {
		return ""
	}
	return " (again in " + p.File + ")"
}

// Route returns the pipeline for c: the one c.Pipeline names, else the
// first whose trigger.match holds. Errors: ErrUnknownPipeline, ErrNoMatch
// (both 422).
func (r *Router) Route(c Context) (*pipeline.Pipeline, error) {
	if c.Pipeline != "" {
		if p, ok := r.byName[c.Pipeline]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("route event: %w %q", ErrUnknownPipeline, c.Pipeline)
	}
	for _, rt := range r.routes {
		if rt.holds(c) {
			return rt.p, nil
		}
	}
	return nil, fmt.Errorf("route event: %w (source %q, severity %q)", ErrNoMatch, c.Source, c.Severity)
}

func (rt route) holds(c Context) bool {
	for _, m := range rt.matchers {
		if !m.holds(c) {
			return false
		}
	}
	return true
}

// Pipeline returns the pipeline named name.
func (r *Router) Pipeline(name string) (*pipeline.Pipeline, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Pipelines returns the pipeline names in routing order, the ones without
// a trigger included at their place.
func (r *Router) Pipelines() []string {
	return slices.Clone(r.order)
}
