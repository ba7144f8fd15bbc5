package inbound

import (
	"context"
	"sync"
)

// DefaultMaxRuns is the reference cap on concurrent runs.
const DefaultMaxRuns = 10

// Limiter caps the runs under way.
type Limiter interface {
	// Admit takes room for runID, or returns an *OverloadedError when there
	// is none. Any other error fails the request (500).
	Admit(ctx context.Context, runID string) error
	// Release gives back runID's room. Accept calls it when an admitted
	// run is not started after all (deduplicated, or its start failed);
	// the Starter's owner calls it when a started run ends. Releasing a run
	// that holds no room does nothing.
	Release(runID string)
}

// Counter is an in-process Limiter: at most Max runs hold room at once.
// Each run holds room once, however often it is admitted or released, so
// the count cannot drift below zero. Max <= 0 admits everything.
type Counter struct {
	Max int

	mu  sync.Mutex
	ids map[string]struct{}
}

var _ Limiter = (*Counter)(nil)

// NewCounter returns a Counter for max runs.
func NewCounter(max int) *Counter { return &Counter{Max: max} }

// Admit implements Limiter.
func (c *Counter) Admit(_ context.Context, runID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[runID]; ok {
		return nil
	}
	if c.Max > 0 && len(c.ids) >= c.Max {
		return &OverloadedError{Active: len(c.ids), Max: c.Max}
	}
	if c.ids == nil {
		c.ids = make(map[string]struct{})
	}
	c.ids[runID] = struct{}{}
	return nil
}

// Release implements Limiter.
func (c *Counter) Release(runID string) {
	c.mu.Lock()
	delete(c.ids, runID)
	c.mu.Unlock()
}

// Active returns the number of runs holding room (for a health endpoint).
func (c *Counter) Active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}
