package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// InlineMapConcurrencyLimit caps the iterations of a Map state that run at
// once, as Step Functions caps an inline Map (MaxConcurrency 0 or above the
// cap means the cap).
const InlineMapConcurrencyLimit = 40

// MaxPayloadBytes is Step Functions' limit on a task result.
const MaxPayloadBytes = asl.MaxPayloadBytes

// MaxEventDetailBytes bounds a history event's detail; larger values in it
// are recorded as {"truncated": true, "bytes": n}.
const MaxEventDetailBytes = 64 * 1024

type completionKind int

const (
	kindInvoked     completionKind = iota // a task invocation returned
	kindTimer                             // a Wait or a retry backoff elapsed
	kindToken                             // SendTaskSuccess or SendTaskFailure
	kindHeartbeat                         // SendTaskHeartbeat
	kindDeadline                          // a token task's timeout or heartbeat may have passed
	kindRunDeadline                       // the machine's TimeoutSeconds may have passed
)

// completion is news for the driver: from a worker, a timer, or another
// goroutine completing a task token.
type completion struct {
	kind    completionKind
	pathID  string
	ticket  int64
	hard    bool // counted in run.hard
	token   string
	value   any
	fail    *failure
	waiting bool       // a token task's handler returned: wait for the token
	reply   chan error // kindToken/kindHeartbeat from another goroutine
}

type effectKind int

const (
	effInvoke effectKind = iota
	effTimer
	effDeadline
	effRunDeadline
)

type effect struct {
	p     *path
	kind  effectKind
	until time.Time
}

// run is the driver of one run: it owns the snapshot, advances paths one
// state at a time until none can advance without waiting, checkpoints, and
// only then dispatches the blocking work (task invocations, timers) the
// steps scheduled to worker goroutines, whose results come back as
// completions. Only the driver goroutine touches the snapshot.
type run struct {
	e    *Engine
	id   string
	prog *program
	snap *snapshot

	paths    map[string]*path
	seq      int64
	events   []store.HistoryEvent
	runnable []*path
	effects  []effect
	hard     int // in-flight invocations and timers the run must wait for
	tickets  int64
	execCtx  map[string]any
	smCtx    map[string]any

	// What the next checkpoint must write as values: variables assigned
	// or gone since the last one, and the run's input; stored holds the
	// values the journal has, so that a variable assigned the value it
	// had is not written again and only stored ones are deleted.
	dirty      map[varID]struct{}
	inputDirty bool
	stored     map[string][]byte

	buf      []byte // scratch for encoding (driver goroutine only)
	snapSize int    // the last snapshot's size, to size the next one

	qmu    sync.Mutex
	queue  []completion
	signal chan struct{}
	closed bool

	wctx    context.Context
	wcancel context.CancelFunc
	wg      sync.WaitGroup

	inline  *inlineCall                // the invocation the driver runs itself, if any
	preempt atomic.Pointer[preemption] // set while the driver runs it
	out     chan driven                // the drivers' outcome, for drive
}

// varID names a variable: the ID of the path holding it and its name.
type varID struct{ path, name string }

// maxPendingEvents bounds the events a run keeps between checkpoints: a
// run that loops through pure states (Pass, Choice) for long is
// checkpointed every so many events even though it dispatches nothing.
const maxPendingEvents = 1000

func newRun(e *Engine, id string) *run {
	return &run{e: e, id: id, signal: make(chan struct{}, 1)}
}

// init takes a snapshot to drive. stored lists the values its checkpoint
// holds (nil for a new run).
func (r *run) init(prog *program, snap *snapshot, seq int64, stored map[string]json.RawMessage) {
	r.prog, r.snap, r.seq = prog, snap, seq
	r.paths = map[string]*path{}
	link(snap.Root, nil, r.paths)
	r.dirty = map[varID]struct{}{}
	r.stored = make(map[string][]byte, len(stored))
	for k, v := range stored {
		r.stored[k] = v
	}
	machine := snap.Machine
	if machine == "" {
		machine = "stepline"
	}
	r.execCtx = map[string]any{
		"Id":           "arn:aws:states:local:000000000000:execution:" + machine + ":" + snap.RunID,
		"Name":         snap.RunID,
		"Input":        snap.Input,
		"StartTime":    isoTime(snap.StartTime),
		"RoleArn":      "arn:aws:iam::000000000000:role/stepline-local",
		"RedriveCount": float64(0),
	}
	r.smCtx = map[string]any{
		"Id":   "arn:aws:states:local:000000000000:stateMachine:" + machine,
		"Name": machine,
	}
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (r *run) now() time.Time { return r.e.cfg.Clock.Now().UTC() }

// post queues a completion; false when the driver has stopped taking them.
func (r *run) post(c completion) bool {
	r.qmu.Lock()
	if r.closed {
		r.qmu.Unlock()
		return false
	}
	r.queue = append(r.queue, c)
	r.qmu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
	return true
}

func (r *run) take() []completion {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

// tryClose stops taking completions unless some are queued. It holds the
// engine's lock so that no completion is handed to a run that has stopped.
func (r *run) tryClose() bool {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(r.queue) > 0 {
		return false
	}
	r.closed = true
	if r.e.active[r.id] == r {
		delete(r.e.active, r.id)
	}
	return true
}

// closeInbox stops taking completions and answers those still queued.
func (r *run) closeInbox() {
	r.qmu.Lock()
	r.closed = true
	q := r.queue
	r.queue = nil
	r.qmu.Unlock()
	for _, c := range q {
		if c.reply != nil {
			c.reply <- errors.New("engine: run stopped before the completion was applied")
		}
	}
}

// record appends a history event. p may be nil for run-level events.
func (r *run) record(p *path, typ string, detail map[string]any) {
	r.seq++
	ev := store.HistoryEvent{Seq: r.seq, Time: r.now(), Type: typ}
	if p != nil {
		ev.State = p.State
		if p.ID != "" {
			if detail == nil {
				detail = map[string]any{}
			}
			detail["path"] = p.ID
		}
	}
	if len(detail) > 0 {
		b, err := r.encode(detail)
		if err != nil {
			b, _ = encodeJSON(map[string]any{"unencodable": err.Error()})
		}
		if len(b) > MaxEventDetailBytes {
			// Keep the event readable: large values (inputs, outputs,
			// payloads) are replaced by their size; the checkpoint has them.
			for k, v := range detail {
				if vb, _ := encodeJSON(v); len(vb) > MaxEventDetailBytes/16 {
					detail[k] = map[string]any{"truncated": true, "bytes": float64(len(vb))}
				}
			}
			b, _ = encodeJSON(detail)
		}
		ev.Detail = b
	}
	r.events = append(r.events, ev)
}

// encode is encodeJSON through the run's scratch buffer: the result is
// allocated once, at its size.
func (r *run) encode(v any) ([]byte, error) {
	b, err := appendJSON(r.buf[:0], v)
	if err != nil {
		return nil, err
	}
	r.buf = b
	return bytes.Clone(b), nil
}

// setVar assigns a variable of p.
func (r *run) setVar(p *path, name string, v any) {
	p.Vars[name] = v
	r.dirty[varID{p.ID, name}] = struct{}{}
}

// dropVars notes that p's variables are gone with p.
func (r *run) dropVars(p *path) {
	for name := range p.Vars {
		r.dirty[varID{p.ID, name}] = struct{}{}
	}
}

// changedValues encodes what the next checkpoint writes as values: the
// variables assigned since the last checkpoint (unless the journal has
// that value), nil for those gone (only when stored), and the input of a
// new run.
func (r *run) changedValues() (map[string]json.RawMessage, error) {
	if len(r.dirty) == 0 && !r.inputDirty {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(r.dirty)+1)
	if r.inputDirty {
		b, err := encodeJSON(r.snap.Input)
		if err != nil {
			return nil, fmt.Errorf("encode input: %w", err)
		}
		out[inputKey] = b
	}
	for ref := range r.dirty {
		k := varKey(ref.path, ref.name)
		if p := r.paths[ref.path]; p != nil {
			if v, ok := p.Vars[ref.name]; ok {
				b, err := r.encode(v)
				if err != nil {
					return nil, fmt.Errorf("encode variable %q: %w", ref.name, err)
				}
				if old, ok := r.stored[k]; !ok || !bytes.Equal(old, b) {
					out[k] = b
				}
				continue
			}
		}
		if _, ok := r.stored[k]; ok {
			out[k] = nil
		}
	}
	return out, nil
}

// checkpoint saves the snapshot, the changed values and the events since
// the last checkpoint, then reports the events to OnEvent.
func (r *run) checkpoint(ctx context.Context) error {
	snap, err := r.snap.encode(r.snapSize + r.snapSize/4)
	if err != nil {
		return fmt.Errorf("checkpoint run %q: encode snapshot: %w", r.id, err)
	}
	values, err := r.changedValues()
	if err != nil {
		return fmt.Errorf("checkpoint run %q: %w", r.id, err)
	}
	r.snapSize = len(snap)
	// Everything in cp and the events was encoded here (encodeJSON): the
	// journal need not validate it again.
	cp := store.Checkpoint{RunID: r.id, Seq: r.seq, Snapshot: snap, UpdatedAt: r.now(), Values: values, Encoded: true}
	if err := r.e.cfg.Journal.SaveCheckpoint(ctx, cp, r.events); err != nil {
		return fmt.Errorf("checkpoint run %q: %w", r.id, err)
	}
	for k, v := range values {
		if v == nil {
			delete(r.stored, k)
		} else {
			r.stored[k] = v
		}
	}
	clear(r.dirty)
	r.inputDirty = false
	if f := r.e.cfg.OnEvent; f != nil {
		for _, ev := range r.events {
			f(r.id, ev)
		}
	}
	r.events = r.events[:0]
	return nil
}

// flush checkpoints when there are events since the last checkpoint, then
// starts the work scheduled meanwhile, which the checkpoint made durable.
func (r *run) flush(ctx context.Context) error {
	if len(r.events) > 0 {
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
	}
	effs := r.effects
	r.effects = nil
	for _, ef := range effs {
		r.dispatch(ef)
	}
	if r.inline != nil && (len(r.runnable) > 0 || r.hard > 1 || r.waitsForToken()) {
		r.toWorker(r.inline)
		r.inline = nil
	}
	return nil
}

// drive runs the loop until the run ends, pauses, fails to checkpoint, or
// ctx is done. A continued run calls reconstruct first.
//
// Each turn advances every runnable path until none can advance without
// waiting, then checkpoints once and dispatches the work the steps
// scheduled, and waits for completions. The steps in between are pure
// (they read and write the snapshot only), so a process killed before the
// checkpoint loses nothing anyone saw: the run resumes from the previous
// checkpoint and takes the same steps again.
//
// The loop runs on a goroutine of its own (the driver), and the caller
// waits for its outcome: a task invocation that is the run's only work in
// flight runs on the driver itself (see inline), and should it outlive
// its deadline a new driver takes the loop over, so the caller is never
// held by a call the run has abandoned.
func (r *run) drive(ctx context.Context) (Result, error) {
	r.wctx, r.wcancel = context.WithCancel(ctx)
	if !r.snap.Deadline.IsZero() && !r.snap.Status.Terminal() {
		r.effects = append(r.effects, effect{kind: effRunDeadline, until: r.snap.Deadline})
		if !r.now().Before(r.snap.Deadline) {
			r.timeOut()
		}
	}
	r.out = make(chan driven, 1)
	go r.driver(ctx)
	d := <-r.out
	if d.panicked != nil {
		panic(d.panicked) // in the caller, as when the loop ran there
	}
	return d.res, d.err
}

// driven is a driver's outcome.
type driven struct {
	res      Result
	err      error
	panicked any // the loop's panic, raised again in drive's caller
}

// errTakenOver ends a driver whose inline call outlived its deadline:
// another driver goes on with the loop.
var errTakenOver = errors.New("the loop was taken over")

// driver runs the loop and reports its outcome, unless another driver
// took the loop over.
func (r *run) driver(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			r.wcancel()
			r.out <- driven{panicked: v}
		}
	}()
	res, err := r.loop(ctx)
	if err == errTakenOver {
		return
	}
	r.wcancel()
	r.wg.Wait()
	r.out <- driven{res: res, err: err}
}

// takeOver starts a new driver while the current one is held by an inline
// call that timed out. The lock orders the new driver after everything
// the held one did before the call (inline takes it too).
func (r *run) takeOver(ctx context.Context) {
	go func() {
		r.qmu.Lock()
		//lint:ignore SA2001 the critical section is a happens-before edge, empty on purpose
		r.qmu.Unlock()
		r.driver(ctx)
	}()
}

func (r *run) loop(ctx context.Context) (Result, error) {
	for {
		for len(r.runnable) > 0 && !r.snap.Status.Terminal() {
			p := r.runnable[0]
			r.runnable = r.runnable[1:]
			r.step(p)
			if len(r.events) >= maxPendingEvents {
				if err := r.flush(ctx); err != nil {
					return Result{}, err
				}
			}
		}
		if err := r.flush(ctx); err != nil {
			return Result{}, err
		}
		if r.snap.Status.Terminal() {
			r.tryClose()
			return r.result(), nil
		}
		if call := r.inline; call != nil {
			r.inline = nil
			if r.runInline(ctx, call) {
				return Result{}, errTakenOver
			}
		}
		if r.hard == 0 {
			res := r.result()
			if res.Status != StatusWaiting {
				return Result{}, fmt.Errorf("run %q: no work in flight and nothing to wait for", r.id)
			}
			if r.tryClose() {
				return res, nil
			}
		}
		select {
		case <-r.signal:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			r.tryClose()
			return Result{RunID: r.id, Status: StatusRunning}, ctx.Err()
		}
		for _, c := range r.take() {
			err := r.apply(c)
			if c.reply != nil {
				c.reply <- err
			}
		}
	}
}

// result reports where the run stands.
func (r *run) result() Result {
	res := Result{RunID: r.id, Status: r.snap.Status}
	switch r.snap.Status {
	case StatusSucceeded:
		res.Output, _ = json.Marshal(r.snap.Output)
		return res
	case StatusFailed, StatusTimedOut:
		res.Error, res.Cause = r.snap.Error, r.snap.Cause
		return res
	}
	var wake time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	res.Children = waitingChildren(r.paths)
	for _, p := range r.paths {
		if waitsForChild(p) {
			continue // completed by the child run, not by callers
		}
		if p.Token != "" && (p.Phase == phaseToken || p.Phase == phaseTask) {
			res.Tokens = append(res.Tokens, p.Token)
			earlier(p.Deadline)
			if p.Heartbeat > 0 {
				earlier(p.BeatAt.Add(time.Duration(p.Heartbeat) * time.Second))
			}
		}
	}
	sort.Strings(res.Tokens)
	if r.hard == 0 && r.waitsForToken() {
		res.Status = StatusWaiting
		earlier(r.snap.Deadline)
		res.WakeAt = wake
	}
	return res
}

// waitsForChild reports whether path p waits on a task that a child run
// completes (a startExecution task), not a caller.
func waitsForChild(p *path) bool {
	return p.Token != "" && (p.Phase == phaseToken || p.Phase == phaseTask) && p.Task != nil && p.Task.Child != nil
}

// waitingChildren returns, sorted, the child runs the paths wait for.
func waitingChildren(paths map[string]*path) []string {
	var out []string
	for _, p := range paths {
		if waitsForChild(p) {
			out = append(out, p.Task.Child.RunID)
		}
	}
	sort.Strings(out)
	return out
}

// reconstruct restarts, after a load, the work the snapshot records, except
// for skip (a task about to be completed by its token). rerunChildren also
// asks the ChildStarter again about child runs the run waits for, in case
// a child ended without its parent hearing of it.
func (r *run) reconstruct(rerunChildren bool, skip *path) {
	now := r.now()
	var walk func(p *path)
	walk = func(p *path) {
		if p == skip {
			return
		}
		switch p.Phase {
		case phaseEnter, phaseRun, phaseResult:
			r.runnable = append(r.runnable, p)
		case phaseTask:
			if p.Task == nil { // cannot happen in a snapshot this engine wrote
				p.Phase = phaseRun
				r.runnable = append(r.runnable, p)
				return
			}
			if r.tokenExpired(p, now) {
				r.tokenTimeout(p)
				return
			}
			r.record(p, "TaskScheduled", map[string]any{"resource": p.Task.Resource, "function": p.Task.Function,
				"retryCount": p.Retries, "resumed": true})
			r.effects = append(r.effects, effect{p: p, kind: effInvoke})
			r.armDeadline(p)
		case phaseToken:
			if r.tokenExpired(p, now) {
				r.tokenTimeout(p)
				return
			}
			if rerunChildren && p.Task != nil && p.Task.Child != nil {
				p.Phase = phaseTask
				r.record(p, "TaskScheduled", map[string]any{"resource": p.Task.Resource, "retryCount": p.Retries, "resumed": true})
				r.effects = append(r.effects, effect{p: p, kind: effInvoke})
			}
			r.armDeadline(p)
		case phaseRetry, phaseWait:
			r.effects = append(r.effects, effect{p: p, kind: effTimer, until: p.Until})
		case phaseChildren:
			for _, c := range p.Children {
				walk(c)
			}
		}
	}
	walk(r.snap.Root)
}

func (r *run) waitsForToken() bool {
	for _, p := range r.paths {
		if p.Token != "" && p.Phase == phaseToken {
			return true
		}
	}
	return false
}

// findToken returns the path whose task waits for token.
func (r *run) findToken(token string) *path {
	for _, p := range r.paths {
		if p.Token == token && (p.Phase == phaseTask || p.Phase == phaseToken) {
			return p
		}
	}
	return nil
}

func (r *run) tokenExpired(p *path, now time.Time) bool {
	if p.Token == "" {
		return false
	}
	if !p.Deadline.IsZero() && !now.Before(p.Deadline) {
		return true
	}
	return p.Heartbeat > 0 && !now.Before(p.BeatAt.Add(time.Duration(p.Heartbeat)*time.Second))
}

// tokenTimeout fails a token task whose deadline passed.
func (r *run) tokenTimeout(p *path) {
	r.stopWork(p)
	// Step Functions gives a timed-out task no cause.
	f := &failure{Error: asl.StatesTimeout}
	if p.Heartbeat > 0 && (p.Deadline.IsZero() || r.now().Before(p.Deadline)) {
		f.Cause = "no heartbeat within HeartbeatSeconds"
	}
	r.record(p, "TaskTimedOut", map[string]any{"error": f.Error, "cause": f.Cause})
	r.stateFail(p, r.prog.states[p.State], f)
}

// armDeadline schedules the timer of a token task's deadline.
func (r *run) armDeadline(p *path) {
	if p.Token == "" {
		return
	}
	until := p.Deadline
	if p.Heartbeat > 0 {
		hb := p.BeatAt.Add(time.Duration(p.Heartbeat) * time.Second)
		if until.IsZero() || hb.Before(until) {
			until = hb
		}
	}
	if !until.IsZero() {
		r.effects = append(r.effects, effect{p: p, kind: effDeadline, until: until})
	}
}

// stopWork cancels a path's in-flight work and forgets its completion.
func (r *run) stopWork(p *path) {
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
	if p.soft != nil {
		p.soft()
		p.soft = nil
	}
	p.ticket = 0
}

// abort stops a path and everything under it and forgets them.
func (r *run) abort(p *path) {
	for _, c := range p.Children {
		r.abort(c)
	}
	r.stopWork(p)
	r.dropVars(p)
	delete(r.paths, p.ID)
}

func (r *run) timeOut() {
	r.abort(r.snap.Root)
	r.paths[""] = r.snap.Root
	r.snap.Status = StatusTimedOut
	r.snap.Error = asl.StatesTimeout
	r.snap.Cause = "the run exceeded the state machine's TimeoutSeconds"
	r.record(nil, "ExecutionTimedOut", map[string]any{"error": r.snap.Error, "cause": r.snap.Cause})
	r.runnable = nil
}

// dispatch starts an effect's worker.
func (r *run) dispatch(ef effect) {
	if r.snap.Status.Terminal() {
		return
	}
	r.tickets++
	ticket := r.tickets
	clock := r.e.cfg.Clock
	switch ef.kind {
	case effInvoke:
		p := ef.p
		if r.paths[p.ID] != p || p.Phase != phaseTask || p.Task == nil {
			return
		}
		ctx, cancel := context.WithCancel(r.wctx)
		p.cancel, p.ticket = cancel, ticket
		call := *p.Task
		var deadline time.Time
		if p.Token != "" {
			deadline = p.Deadline
		} else if p.Timeout > 0 {
			deadline = r.now().Add(time.Duration(p.Timeout) * time.Second)
		}
		r.hard++
		r.wg.Add(1)
		ic := &inlineCall{ctx: ctx, cancel: cancel, call: call, deadline: deadline, pathID: p.ID, ticket: ticket}
		if r.inline == nil && p.Token == "" {
			// flush decides whether the driver runs it. A task that
			// waits for its token does not run inline: its handler may
			// send the token back before it returns, and the driver must
			// be free to take it.
			r.inline = ic
		} else {
			r.toWorker(ic)
		}
	case effTimer:
		p := ef.p
		if r.paths[p.ID] != p || (p.Phase != phaseRetry && p.Phase != phaseWait) {
			return
		}
		ctx, cancel := context.WithCancel(r.wctx)
		p.cancel, p.ticket = cancel, ticket
		id := p.ID
		d := ef.until.Sub(r.now())
		r.hard++
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if clock.Sleep(ctx, d) != nil {
				ticket = 0
			}
			r.post(completion{kind: kindTimer, pathID: id, ticket: ticket, hard: true})
		}()
	case effDeadline:
		p := ef.p
		if r.paths[p.ID] != p || (p.Phase != phaseTask && p.Phase != phaseToken) {
			return
		}
		if p.soft != nil {
			p.soft()
		}
		ctx, cancel := context.WithCancel(r.wctx)
		p.soft = cancel
		id := p.ID
		d := ef.until.Sub(r.now())
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if clock.Sleep(ctx, d) == nil {
				r.post(completion{kind: kindDeadline, pathID: id})
			}
		}()
	case effRunDeadline:
		until := ef.until
		d := until.Sub(r.now())
		ctx := r.wctx
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if clock.Sleep(ctx, d) == nil {
				r.post(completion{kind: kindRunDeadline})
				// A call on the driver would hold the deadline back
				// until it returned: abandon it, as the run's end
				// would cancel it, and let a new driver end the run.
				if p := r.preempt.Load(); p != nil && !clock.Now().Before(until) {
					p.stop()
				}
			}
		}()
	}
}

// apply takes a completion into the snapshot. The error is for the sender
// of a task-token completion.
func (r *run) apply(c completion) error {
	if c.hard {
		r.hard--
	}
	if r.snap.Status.Terminal() {
		if c.kind == kindToken || c.kind == kindHeartbeat {
			return ErrTaskDoesNotExist
		}
		return nil
	}
	switch c.kind {
	case kindToken, kindHeartbeat:
		return r.applyToken(c)
	case kindRunDeadline:
		if !r.now().Before(r.snap.Deadline) {
			r.timeOut()
		} else {
			r.effects = append(r.effects, effect{kind: effRunDeadline, until: r.snap.Deadline})
		}
		return nil
	case kindDeadline:
		p := r.paths[c.pathID]
		if p == nil || p.Token == "" || (p.Phase != phaseToken && p.Phase != phaseTask) {
			return nil
		}
		p.soft = nil
		if r.tokenExpired(p, r.now()) {
			r.tokenTimeout(p)
		} else {
			r.armDeadline(p)
		}
		return nil
	}
	p := r.paths[c.pathID]
	if p == nil || p.ticket != c.ticket || c.ticket == 0 {
		return nil // stale: the path moved on or was aborted
	}
	p.cancel, p.ticket = nil, 0
	switch c.kind {
	case kindTimer:
		switch p.Phase {
		case phaseRetry:
			p.Phase = phaseRun
			r.runnable = append(r.runnable, p)
		case phaseWait:
			r.record(p, "WaitEnded", nil)
			sp := r.prog.states[p.State]
			env := r.env(p, nil)
			if f := r.leave(p, sp, env, sp.output, sp.assign, p.Input, sp.next); f != nil {
				r.stateFail(p, sp, f)
			}
		}
	case kindInvoked:
		if p.Phase != phaseTask {
			return nil
		}
		sp := r.prog.states[p.State]
		switch {
		case c.fail != nil:
			typ := "TaskFailed"
			if c.fail.Error == asl.StatesTimeout {
				typ = "TaskTimedOut"
			}
			r.stopWork(p)
			r.record(p, typ, map[string]any{"error": c.fail.Error, "cause": c.fail.Cause})
			r.stateFail(p, sp, c.fail)
		case c.waiting:
			p.Phase = phaseToken
			r.record(p, "TaskSubmitted", nil)
			if p.soft == nil {
				r.armDeadline(p)
			}
		default:
			r.stopWork(p)
			r.taskSucceeded(p, c.value)
		}
	}
	return nil
}

func (r *run) applyToken(c completion) error {
	p := r.findToken(c.token)
	if p == nil || (p.Task != nil && p.Task.Child != nil && c.kind == kindHeartbeat) {
		return ErrTaskDoesNotExist
	}
	if c.kind == kindHeartbeat {
		p.BeatAt = r.now()
		r.record(p, "TaskHeartbeat", nil)
		r.armDeadline(p)
		return nil
	}
	r.stopWork(p)
	if c.fail != nil {
		r.record(p, "TaskFailed", map[string]any{"error": c.fail.Error, "cause": c.fail.Cause})
		r.stateFail(p, r.prog.states[p.State], c.fail)
		return nil
	}
	r.taskSucceeded(p, c.value)
	return nil
}

func (r *run) taskSucceeded(p *path, v any) {
	r.record(p, "TaskSucceeded", map[string]any{"output": v})
	p.Result = v
	p.Phase = phaseResult
	r.runnable = append(r.runnable, p)
}
