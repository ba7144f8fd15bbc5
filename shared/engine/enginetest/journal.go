// Package enginetest helps the tests of code that runs state machines in
// the local engine (package shared/engine) without a run store.
package enginetest

import (
	"context"
	"sync"

	"github.com/stepline/stepline/shared/store"
)

// Journal keeps each run's last checkpoint and its history in memory: an
// engine.Journal for tests and examples. Safe for concurrent use.
type Journal struct {
	mu     sync.Mutex
	cps    map[string]store.Checkpoint
	events map[string][]store.HistoryEvent
}

// NewJournal returns an empty Journal.
func NewJournal() *Journal {
	return &Journal{cps: map[string]store.Checkpoint{}, events: map[string][]store.HistoryEvent{}}
}

// SaveCheckpoint keeps cp as the run's checkpoint and appends events to its
// history.
func (j *Journal) SaveCheckpoint(_ context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cps[cp.RunID] = cp
	j.events[cp.RunID] = append(j.events[cp.RunID], events...)
	return nil
}

// LoadCheckpoint returns the run's checkpoint, or store.ErrNotFound.
func (j *Journal) LoadCheckpoint(_ context.Context, runID string) (store.Checkpoint, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cp, ok := j.cps[runID]
	if !ok {
		return cp, store.ErrNotFound
	}
	return cp, nil
}

// History returns the run's history, oldest first.
func (j *Journal) History(_ context.Context, runID string) ([]store.HistoryEvent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]store.HistoryEvent(nil), j.events[runID]...), nil
}
