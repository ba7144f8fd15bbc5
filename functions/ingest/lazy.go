package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
)

// pipelineSet is the handler of one set of pipeline files, built (their
// models decoded, the router made) once, when the first event that needs
// it arrives. The container's first set is built so (see fromBundles): an
// event of no kind the function serves needs none of it.
type pipelineSet struct {
	once  sync.Once
	build func() (*handler, error)
	log   *slog.Logger
	h     *handler
	err   error
}

// lazySet returns the set that build builds on first need. A failure is
// logged once, when it happens, and kept: the same files would fail
// again, until a reload brings others.
func lazySet(build func() (*handler, error), log *slog.Logger) *pipelineSet {
	return &pipelineSet{build: build, log: log}
}

// builtSet returns the set of h, built already.
func builtSet(h *handler, log *slog.Logger) *pipelineSet {
	s := &pipelineSet{h: h, log: log}
	s.once.Do(func() {})
	return s
}

// handler returns the set's handler, building it on the first call.
func (s *pipelineSet) handler() (*handler, error) {
	s.once.Do(func() {
		s.h, s.err = s.build()
		if s.err != nil {
			s.log.Error("pipeline models do not load: every event that needs them fails until a deployment changes them", "error", s.err.Error())
		}
	})
	return s.h, s.err
}

// handle answers an event with the handler of the set current returns
// (see serve). Only an event that needs the pipelines calls current, which
// on a cold start waits for the start's read of the bundles: an event of
// no kind the function serves is answered without it. An error of current
// is answered as a set that does not load is.
func handle(ctx context.Context, raw json.RawMessage, current func(context.Context) (*pipelineSet, error), log *slog.Logger) (any, error) {
	return serve(ctx, raw, func() (*handler, error) {
		set, err := current(ctx)
		if err != nil {
			return nil, err
		}
		return set.handler()
	}, log)
}
