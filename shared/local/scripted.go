package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// RunOption configures Run, Start, Resume and Decide.
type RunOption func(*runOptions)

type runOptions struct {
	responses string
	replies   *executor.Responses // responses, read already (WithReadResponses)
	input     json.RawMessage     // Start: the whole state machine input (a rerun's)
}

func options(opts []RunOption) runOptions {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithResponses makes the run scripted: its executors answer from the
// scripted replies of the responses file at path (executor.Responses),
// through the step function Config.Scripted builds, never from the
// network. Start records the file with the run, so that whoever drives the
// run on — Resume, Decide, Complete, the sweep, another process — answers
// from the same file, skipping the replies the run already used. Given to
// Resume or Decide, path replaces the file recorded (the replies used stay
// used): for a run whose file moved, or a live run to go on offline.
func WithResponses(path string) RunOption {
	return func(o *runOptions) { o.responses, o.replies = path, nil }
}

// WithReadResponses is WithResponses for a file its caller has read
// already (to check it before anything else): replies is what
// executor.LoadResponses returned for path, and the run answers from it
// rather than reading the file again. The run takes replies as its own:
// give each run its own.
func WithReadResponses(path string, replies *executor.Responses) RunOption {
	return func(o *runOptions) { o.responses, o.replies = path, replies }
}

// RepliesError is returned for a scripted run whose responses file cannot
// be read: the run is not driven on, since the only other way would be to
// call the real executors.
type RepliesError struct {
	RunID  string
	Source string // the responses file recorded with the run
	Err    error
}

func (e *RepliesError) Error() string {
	return fmt.Sprintf("run %s answers from the scripted replies in %s, which cannot be read: %v", e.RunID, e.Source, e.Err)
}

func (e *RepliesError) Unwrap() error { return e.Err }

// maxRunDepth bounds the walk from a child run up to the run whose
// replies it answers from.
const maxRunDepth = 32

// session is the scripted replies of a run (its root) and of the child
// runs it starts, which answer from the same replies, and the step
// function that answers from them.
type session struct {
	root    string
	replies *executor.Responses
	handler StepHandler

	mu      sync.Mutex
	pending map[string]int // counts changed and not recorded yet
}

// save records the counts of the replies that changed since the last
// save (the store keeps the others): a step's cost does not grow with the
// steps before it. Counts a failed write did not record are tried again
// with the next save.
func (s *session) save(ctx context.Context, r *Runner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.replies.TakeChanged() {
		if s.pending == nil {
			s.pending = map[string]int{}
		}
		s.pending[k] = n
	}
	if len(s.pending) == 0 {
		return
	}
	if err := r.Store.SetConsumed(context.WithoutCancel(ctx), s.root, s.pending); err != nil {
		r.log.Warn("record the scripted replies a run used", "run", s.root, "err", err)
		return
	}
	s.pending = nil
}

// script records path as the responses file of runID, keeping the counts
// of the replies the run used, and makes it the run's session.
func (r *Runner) script(ctx context.Context, runID, path string, replies *executor.Responses) (*session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("run %s: responses: %w", runID, err)
	}
	if replies == nil {
		if replies, err = executor.LoadResponses(abs); err != nil {
			return nil, fmt.Errorf("run %s: %w", runID, err)
		}
	}
	var used map[string]int
	switch prev, err := r.Store.GetReplies(ctx, runID); {
	case err == nil:
		used = prev.Consumed
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	if err := replies.Restore(used); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	s, err := r.newSession(runID, replies)
	if err != nil {
		return nil, err
	}
	if err := r.Store.SetReplies(ctx, runID, sqlite.Replies{Source: abs, Consumed: used}); err != nil {
		return nil, err
	}
	r.sessMu.Lock()
	r.sessions[runID] = s
	r.sessMu.Unlock()
	return s, nil
}

func (r *Runner) newSession(root string, replies *executor.Responses) (*session, error) {
	if r.scripted == nil {
		return nil, fmt.Errorf("run %s is scripted, and this runner has no step function for scripted runs (Config.Scripted)", root)
	}
	return &session{root: root, replies: replies, handler: r.scripted(r.Store, replies)}, nil
}

// sessionOf returns the session runID answers from: the replies recorded
// with it, else those of its parent (parent "" is looked up in the run's
// record), else nil for a run that is not scripted. A recorded responses
// file that cannot be read is a *RepliesError.
func (r *Runner) sessionOf(ctx context.Context, runID, parent string) (*session, error) {
	return r.sessionAt(ctx, runID, parent, false, 0)
}

// sessionKnown is sessionOf for a run whose parent is known: parent ""
// is a run started by none, whose record need not be read.
func (r *Runner) sessionKnown(ctx context.Context, runID, parent string) (*session, error) {
	return r.sessionAt(ctx, runID, parent, true, 0)
}

func (r *Runner) sessionAt(ctx context.Context, runID, parent string, known bool, depth int) (*session, error) {
	r.sessMu.Lock()
	s, ok := r.sessions[runID]
	r.sessMu.Unlock()
	if ok {
		return s, nil
	}
	rec, err := r.Store.GetReplies(ctx, runID)
	switch {
	case err == nil:
		replies, lerr := executor.LoadResponses(rec.Source)
		if lerr == nil {
			lerr = replies.Restore(rec.Consumed)
		}
		if lerr != nil {
			return nil, &RepliesError{RunID: runID, Source: rec.Source, Err: lerr}
		}
		if s, err = r.newSession(runID, replies); err != nil {
			return nil, err
		}
	case errors.Is(err, store.ErrNotFound):
		if parent == "" && !known {
			run, gerr := r.Store.GetRun(ctx, runID)
			if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
				return nil, gerr
			}
			parent = run.ParentRunID
		}
		if parent != "" && depth < maxRunDepth {
			if s, err = r.sessionAt(ctx, parent, "", false, depth+1); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}
	r.sessMu.Lock()
	defer r.sessMu.Unlock()
	if prev, ok := r.sessions[runID]; ok {
		return prev, nil
	}
	r.sessions[runID] = s
	return s, nil
}

// forget drops what this Runner remembers of a run that stopped being
// driven (it ended or waits); the next drive reads it again.
func (r *Runner) forget(runID string) {
	r.sessMu.Lock()
	delete(r.sessions, runID)
	r.sessMu.Unlock()
}

// Responses returns the scripted replies runID answers from (its own, or
// those of the run that started it), positioned after the replies the run
// used; nil for a run that is not scripted. A caller that takes replies
// from it (a human step's decision) takes them for the run.
func (r *Runner) Responses(ctx context.Context, runID string) (*executor.Responses, error) {
	s, err := r.sessionOf(ctx, runID, "")
	if err != nil || s == nil {
		return nil, err
	}
	return s.replies, nil
}

// prepare readies a run to be driven by this Runner: with
// WithResponses, it records the run's responses file; else it checks that
// a scripted run's replies can be read, so that a run never goes on with
// the real executors, nor fails half-way, for want of them. topLevel says
// that the run is known to have no parent (a run Start begins on an input
// of its own making).
func (r *Runner) prepare(ctx context.Context, runID string, o runOptions, topLevel bool) error {
	if o.responses != "" {
		_, err := r.script(ctx, runID, o.responses, o.replies)
		return err
	}
	if topLevel {
		_, err := r.sessionKnown(ctx, runID, "")
		return err
	}
	_, err := r.sessionOf(ctx, runID, "")
	return err
}
