// Package schedule fires the pipelines that have a schedule: (cron, in
// UTC or a time zone) from a long-running process, stepline serve. On AWS,
// EventBridge Scheduler fires them instead; this package is the local
// counterpart, with the same trigger shape.
//
// # Which ticks fire
//
// A Scheduler checks its entries when started and then at each tick. A
// check covers the ticks since the previous check, but never further back
// than Grace: of the ticks in that span, only the latest fires. So after
// downtime (the process was stopped, or the machine slept) a pipeline
// fires at most once to catch up — for its latest missed tick, and only
// when that tick is at most Grace old; older ticks are skipped, not
// queued.
//
// # At most once per tick
//
// Before firing, the Scheduler claims the tick in the store
// (store.TickClaimer.ClaimTick, a conditional write): of any number of
// processes sharing a store, and across restarts, one claim per
// (pipeline, tick) wins, and only its holder fires. A process that dies
// between the claim and the start of the run loses that fire (at most
// once, never twice).
package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/stepline/stepline/shared/cron"
	"github.com/stepline/stepline/shared/store"
)

// DefaultGrace is how old a missed tick may be and still fire once when a
// Scheduler starts (or wakes).
const DefaultGrace = 10 * time.Minute

// maxSleep bounds one wait between checks, so that a clock change or a
// suspended machine is noticed within a minute.
const maxSleep = time.Minute

// Entry is one scheduled pipeline.
type Entry struct {
	Pipeline string
	Cron     string
	TimeZone string // IANA name; "" is UTC

	spec cron.Spec
	loc  *time.Location
}

// NewEntry checks and returns a schedule entry.
func NewEntry(pipeline, expr, timeZone string) (Entry, error) {
	e := Entry{Pipeline: pipeline, Cron: expr, TimeZone: timeZone, loc: time.UTC}
	var err error
	if e.spec, err = cron.Parse(expr); err != nil {
		return Entry{}, fmt.Errorf("schedule of %q: cron %q: %w", pipeline, expr, err)
	}
	if timeZone != "" {
		if e.loc, err = time.LoadLocation(timeZone); err != nil {
			return Entry{}, fmt.Errorf("schedule of %q: time zone %q: %w", pipeline, timeZone, err)
		}
	}
	return e, nil
}

// Next returns the entry's first tick after t (zero when it never fires).
func (e Entry) Next(t time.Time) time.Time { return e.spec.Next(t, e.loc).UTC() }

// Latest returns the entry's latest tick in (since, now], or the zero time
// when there is none.
func (e Entry) Latest(since, now time.Time) time.Time {
	var last time.Time
	for t := e.Next(since); !t.IsZero() && !t.After(now); t = e.Next(t) {
		last = t
	}
	return last
}

// Clock is the time a Scheduler reads and waits on.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends (returning its error).
	Sleep(ctx context.Context, d time.Duration) error
}

// Fire starts the run of a tick: pipeline's run runID, for tick.
type Fire func(ctx context.Context, e Entry, tick time.Time, runID string) error

// Config wires a Scheduler.
type Config struct {
	Store store.TickClaimer // required
	Fire  Fire              // required
	Clock Clock             // required
	Grace time.Duration     // 0: DefaultGrace
	// Holder names this process in tick claims; empty: a random one.
	Holder string
	RunID  func() string // the ID of a fired run; required
	Logger *slog.Logger
}

// Scheduler fires its entries' ticks. Safe for concurrent use.
type Scheduler struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	entries []Entry
	checked time.Time // the end of the last check; zero before the first
	wake    chan struct{}
}

// New returns a Scheduler over entries.
func New(cfg Config, entries []Entry) (*Scheduler, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("new scheduler: no store")
	case cfg.Fire == nil:
		return nil, errors.New("new scheduler: no fire function")
	case cfg.Clock == nil:
		return nil, errors.New("new scheduler: no clock")
	case cfg.RunID == nil:
		return nil, errors.New("new scheduler: no run IDs")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Holder == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Holder = "sched-" + hex.EncodeToString(b[:])
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Scheduler{cfg: cfg, log: log, entries: slices.Clone(entries), wake: make(chan struct{}, 1)}, nil
}

// SetEntries replaces the entries (a reload). Ticks already checked are
// not checked again: a pipeline whose schedule changed fires from its
// next tick on.
func (s *Scheduler) SetEntries(entries []Entry) {
	s.mu.Lock()
	s.entries = slices.Clone(entries)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Upcoming is an entry with its next tick, for GET /schedules.
type Upcoming struct {
	Pipeline string    `json:"pipeline"`
	Cron     string    `json:"cron"`
	TimeZone string    `json:"timezone"`
	NextRun  time.Time `json:"next_run"`
}

// Upcoming lists the entries with their next tick after now, in pipeline
// name order; an entry that never fires has a zero NextRun.
func (s *Scheduler) Upcoming(now time.Time) []Upcoming {
	s.mu.Lock()
	entries := slices.Clone(s.entries)
	s.mu.Unlock()
	return NextRuns(entries, now)
}

// NextRuns lists entries with their next tick after now, in pipeline name
// order (GET /schedules where another scheduler fires them, as
// EventBridge Scheduler does on AWS).
func NextRuns(entries []Entry, now time.Time) []Upcoming {
	out := make([]Upcoming, 0, len(entries))
	for _, e := range entries {
		tz := e.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		out = append(out, Upcoming{Pipeline: e.Pipeline, Cron: e.Cron, TimeZone: tz, NextRun: e.Next(now)})
	}
	slices.SortFunc(out, func(a, b Upcoming) int { return cmpString(a.Pipeline, b.Pipeline) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Fired is a tick a check fired.
type Fired struct {
	Pipeline string
	Tick     time.Time
	RunID    string
}

// Check fires, for each entry, the latest tick since the previous check
// (at most Grace before now; see the package documentation) that this
// process claims. Errors of single entries are logged and joined; the
// other entries still fire.
func (s *Scheduler) Check(ctx context.Context, now time.Time) ([]Fired, error) {
	s.mu.Lock()
	since := now.Add(-s.cfg.Grace)
	if s.checked.After(since) {
		since = s.checked
	}
	if now.After(s.checked) {
		s.checked = now
	}
	entries := slices.Clone(s.entries)
	s.mu.Unlock()

	var fired []Fired
	var errs []error
	for _, e := range entries {
		tick := e.Latest(since, now)
		if tick.IsZero() {
			continue
		}
		runID := s.cfg.RunID()
		stored, claimed, err := s.cfg.Store.ClaimTick(ctx, store.TickClaim{
			Schedule: e.Pipeline, Tick: tick, Holder: s.cfg.Holder, RunID: runID, ClaimedAt: now,
		})
		if err != nil {
			errs = append(errs, err)
			s.log.Error("claim schedule tick", "pipeline", e.Pipeline, "tick", tick, "err", err)
			continue
		}
		if !claimed {
			s.log.Info("schedule tick fired elsewhere", "pipeline", e.Pipeline, "tick", tick, "run", stored.RunID)
			continue
		}
		if stored.RunID != runID { // this process claimed it before: it fired then
			continue
		}
		if err := s.cfg.Fire(ctx, e, tick, runID); err != nil {
			errs = append(errs, fmt.Errorf("fire %q at %s: %w", e.Pipeline, tick.Format(time.RFC3339), err))
			s.log.Error("fire schedule", "pipeline", e.Pipeline, "tick", tick, "run", runID, "err", err)
			continue
		}
		s.log.Info("schedule fired", "pipeline", e.Pipeline, "tick", tick, "run", runID)
		fired = append(fired, Fired{Pipeline: e.Pipeline, Tick: tick, RunID: runID})
	}
	return fired, errors.Join(errs...)
}

// next returns when the next check is due after now: the earliest next
// tick of any entry, at most maxSleep away.
func (s *Scheduler) next(now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := now.Add(maxSleep)
	for _, e := range s.entries {
		if t := e.Next(now); !t.IsZero() && t.Before(due) {
			due = t
		}
	}
	return due
}

// Run checks now and then at every tick until ctx ends; it returns
// ctx's error.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		now := s.cfg.Clock.Now()
		_, _ = s.Check(ctx, now) // logged
		wait := s.next(now).Sub(now)
		sleep, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-s.wake:
				cancel()
			case <-sleep.Done():
			}
		}()
		// Sleep's error is ctx ending, checked next, or a wake-up by
		// SetEntries, which only means checking again now.
		_ = s.cfg.Clock.Sleep(sleep, wait)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
