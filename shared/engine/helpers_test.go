package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// memJournal is an in-memory Journal that checks the contract the SQLite
// store enforces (contiguous history, checkpoints moving forward, values
// merged) and can be made to fail after a number of saves, as a process
// killed mid-run.
type memJournal struct {
	mu        sync.Mutex
	cps       map[string]store.Checkpoint
	values    map[string]map[string]json.RawMessage
	hist      map[string][]store.HistoryEvent
	saves     int
	failAfter int // > 0: saves beyond this many fail
}

var errKilled = errors.New("journal: process killed")

func newJournal() *memJournal {
	return &memJournal{cps: map[string]store.Checkpoint{}, values: map[string]map[string]json.RawMessage{},
		hist: map[string][]store.HistoryEvent{}}
}

func (j *memJournal) SaveCheckpoint(_ context.Context, cp store.Checkpoint, events []store.HistoryEvent) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failAfter > 0 && j.saves >= j.failAfter {
		return errKilled
	}
	if err := store.CheckCheckpoint(cp, events); err != nil {
		return err
	}
	prev := j.cps[cp.RunID]
	if cp.Seq < prev.Seq || (cp.Seq == prev.Seq && prev.Seq > 0 && !store.SameJSON(cp.Snapshot, prev.Snapshot)) {
		return fmt.Errorf("%w: checkpoint seq %d after %d", store.ErrConflict, cp.Seq, prev.Seq)
	}
	h := j.hist[cp.RunID]
	for _, ev := range events {
		if ev.Seq != int64(len(h))+1 {
			return fmt.Errorf("%w: event seq %d after %d", store.ErrInvalid, ev.Seq, len(h))
		}
		h = append(h, ev)
	}
	if int64(len(h)) != cp.Seq {
		return fmt.Errorf("%w: history ends at %d, checkpoint at %d", store.ErrInvalid, len(h), cp.Seq)
	}
	if cp.Seq == prev.Seq && prev.Seq > 0 {
		return nil // a repeat
	}
	vals := j.values[cp.RunID]
	if vals == nil {
		vals = map[string]json.RawMessage{}
		j.values[cp.RunID] = vals
	}
	for k, v := range cp.Values {
		if len(v) == 0 {
			delete(vals, k)
		} else {
			vals[k] = append(json.RawMessage(nil), v...)
		}
	}
	j.hist[cp.RunID] = h
	cp.Values = nil
	j.cps[cp.RunID] = cp
	j.saves++
	return nil
}

func (j *memJournal) LoadCheckpoint(_ context.Context, runID string) (store.Checkpoint, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cp, ok := j.cps[runID]
	if !ok {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint %q: %w", runID, store.ErrNotFound)
	}
	for k, v := range j.values[runID] {
		if cp.Values == nil {
			cp.Values = map[string]json.RawMessage{}
		}
		cp.Values[k] = v
	}
	return cp, nil
}

func (j *memJournal) History(_ context.Context, runID string) ([]store.HistoryEvent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]store.HistoryEvent(nil), j.hist[runID]...), nil
}

func (j *memJournal) setFailAfter(n int) {
	j.mu.Lock()
	j.failAfter = n
	j.mu.Unlock()
}

// fakeClock is a test clock. In auto mode Sleep records the duration,
// moves the time forward and returns at once; otherwise Sleep blocks until
// Advance moves the time past its wake-up or its context ends.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	auto    bool
	sleeps  []time.Duration
	waiters []*sleeper
}

type sleeper struct {
	until time.Time
	done  chan struct{}
}

func newClock(auto bool) *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 14, 1, 59, 0, 0, time.UTC), auto: auto}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	if c.auto || d <= 0 {
		if d > 0 {
			c.now = c.now.Add(d)
		}
		c.mu.Unlock()
		return nil
	}
	s := &sleeper{until: c.now.Add(d), done: make(chan struct{})}
	c.waiters = append(c.waiters, s)
	c.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		for i, w := range c.waiters {
			if w == s {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// sleepsUntil reports whether sleepers wait for each of the given instants.
func (c *fakeClock) sleepsUntil(ts ...time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range ts {
		found := false
		for _, w := range c.waiters {
			if w.until.Equal(t) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Advance moves the time forward and wakes the sleepers it passes.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, s := range c.waiters {
		if !s.until.After(c.now) {
			close(s.done)
		} else {
			kept = append(kept, s)
		}
	}
	c.waiters = kept
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// fixedRand is a jitter source returning one value.
type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

// loadDef reads a testdata definition.
func loadDef(t testing.TB, name string) *asl.StateMachine {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	def, err := asl.Parse(b)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return def
}

// calls records handler invocations.
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	c.list = append(c.list, s)
	c.mu.Unlock()
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.list...)
}

func echo(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }

// jsonEqual fails the test unless got and want are the same JSON value.
func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func eventTypes(evs []store.HistoryEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
		if e.State != "" {
			out[i] += ":" + e.State
		}
	}
	return out
}

func countType(evs []store.HistoryEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func mustResult(t *testing.T, res Result, err error, want Status) Result {
	t.Helper()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Status != want {
		t.Fatalf("status = %s (error %q cause %q), want %s", res.Status, res.Error, res.Cause, want)
	}
	return res
}
