package intake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
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
// (LoadPipelines gives file-name order). A pipeline without a trigger
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

// LoadPipelines loads the pipeline files (*.yaml, *.yml) directly in dir,
// in file-name order: the routing order. Each file is compiled through
// package gate, as stepline validate and the CDK app compile it, so a
// file is loaded here exactly when it validates. A file with errors is
// left out and reported in the returned error (its *compiler.Error, one
// per file) while the good ones are still returned, so a caller may serve
// them and show the problems.
func LoadPipelines(dir string) ([]*pipeline.Pipeline, error) {
	return LoadPipelinesIn(dir, nil)
}

// LoadPipelinesIn is LoadPipelines in project p; nil: each file's, the
// stepline.yaml found walking up from it.
func LoadPipelinesIn(dir string, p *project.Project) ([]*pipeline.Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load pipelines: %w", err)
	}
	var ps []*pipeline.Pipeline
	var errs []error
	for _, e := range entries { // os.ReadDir sorts by file name
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		in := p
		if in == nil {
			var err error
			if in, err = gate.Project(path, ""); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		f, _, ds, err := gate.CompileFileIn(path, in, settings.Defaults{})
		switch {
		case err != nil:
			errs = append(errs, err)
		case ds.HasErrors():
			errs = append(errs, ds.Err())
		case f == nil || f.Pipeline == nil:
			errs = append(errs, fmt.Errorf("%s: not a pipeline", e.Name()))
		default:
			ps = append(ps, f.Pipeline)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ps, fmt.Errorf("load pipelines: %w", err)
	}
	return ps, nil
}
