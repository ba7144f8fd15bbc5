package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/store"
)

// Journal is where the engine keeps each run's execution state: checkpoints
// (see the package documentation for when) and the history events between
// them. The SQLite store implements it (store.Checkpointer).
type Journal interface {
	// SaveCheckpoint stores cp (its snapshot replaces the previous one;
	// its Values are set, or deleted when nil, one by one) and appends
	// events (the history after the previous checkpoint, ending at
	// cp.Seq) atomically.
	SaveCheckpoint(ctx context.Context, cp store.Checkpoint, events []store.HistoryEvent) error
	// LoadCheckpoint returns the run's latest checkpoint with every value
	// stored, or an error wrapping store.ErrNotFound when there is none.
	LoadCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error)
	// History returns the run's events in Seq order.
	History(ctx context.Context, runID string) ([]store.HistoryEvent, error)
}

// The SQLite store's Checkpointer is a Journal.
var _ Journal = store.Checkpointer(nil)

// Definitions finds the definition of a run that is continued without the
// caller passing it (SendTaskSuccess, SendTaskFailure, and the parent of a
// child run that ends). name is the state machine name the run was started
// with (see WithStateMachine), hash the engine's hash of the definition it
// started with (Hash). An implementation that keeps past definitions by
// their hash returns the run's own, so that a waiting run goes on with the
// definition it started with, as a Step Functions execution does; a
// definition of another hash is refused with ErrDefinitionChanged.
type Definitions interface {
	Definition(ctx context.Context, name, hash string) (*asl.StateMachine, error)
}

// Config wires an Engine. Journal is required; the rest have defaults.
type Config struct {
	Journal     Journal
	Resources   Resources    // nil: every Task fails as having no handler
	Children    ChildStarter // nil: startExecution tasks fail
	Definitions Definitions  // nil: runs can only be continued with Resume(ctx, id, def)
	Clock       Clock        // nil: SystemClock
	Rand        Rand         // nil: math/rand/v2
	Logger      *slog.Logger // nil: discard
	// MaxDefinitionBytes is the largest definition (compact JSON) the
	// engine runs; 0 means asl.MaxDefinitionBytes, Step Functions' limit.
	// Raise it to run locally a machine that cannot be deployed.
	MaxDefinitionBytes int
	// OnEvent, if set, is called with each history event once it is
	// durable, in order, from the goroutine driving the run. It must not
	// block for long.
	OnEvent func(runID string, e store.HistoryEvent)
	// OnParentContinued, if set, is called with where a parent run stands
	// after the engine completed its task because its child run ended
	// (the child was continued after having paused: Resume, a task token's
	// completion), from the goroutine that drove the child: the caller
	// records it as it records the Results its own calls return. It is
	// not called when the parent is being driven by this engine already
	// (the completion is handed to its driver).
	OnParentContinued func(ctx context.Context, parent Result)
}

// Status is a run's state as the engine reports it.
type Status string

// Run statuses. RUNNING is reported for a run this process is still
// driving (a task completion posted to a live run) or one stopped by its
// context; WAITING for a run whose every active path waits for a task token.
const (
	StatusRunning   Status = "RUNNING"
	StatusWaiting   Status = "WAITING"
	StatusSucceeded Status = "SUCCEEDED"
	StatusFailed    Status = "FAILED"
	StatusTimedOut  Status = "TIMED_OUT"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusTimedOut
}

// Result is where a run stands when Start, Resume or a task completion
// returns.
type Result struct {
	RunID  string
	Status Status
	Output json.RawMessage // SUCCEEDED: the run's output
	Error  string          // FAILED, TIMED_OUT: the error name
	Cause  string
	// WAITING: the task tokens the run waits for, and the earliest instant
	// at which a pending task times out (zero when none can): Resume then.
	Tokens []string
	WakeAt time.Time
	// WAITING: the child runs (startExecution tasks) the run waits for,
	// sorted; their ends complete those tasks, not a caller.
	Children []string
}

// Errors.
var (
	// ErrRunExists: Start was called for a run ID that has a checkpoint.
	ErrRunExists = errors.New("engine: run already exists")
	// ErrRunActive: Resume was called for a run this engine is driving.
	ErrRunActive = errors.New("engine: run is already active in this process")
	// ErrInvalidToken: a task token that the engine did not issue.
	ErrInvalidToken = errors.New("engine: invalid task token")
	// ErrTaskDoesNotExist: the token's task is not waiting any more (it
	// completed, failed, timed out, or its run ended).
	ErrTaskDoesNotExist = errors.New("engine: task does not exist or is not waiting")
	// ErrDefinitionChanged: Resume got a definition other than the one
	// the run started with.
	ErrDefinitionChanged = errors.New("engine: definition differs from the one the run started with")
)

// Engine runs ASL state machines. It is safe for concurrent use; runs are
// independent. A run is driven by one Engine at a time: the Journal's
// conflict check rejects a second process writing the same run.
type Engine struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	progs   map[*asl.StateMachine]*program
	active  map[string]*run
	workers workers
}

// New returns an Engine.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = globalRand{}
	}
	if cfg.Resources == nil {
		cfg.Resources = Functions(nil)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Engine{cfg: cfg, log: log, progs: map[*asl.StateMachine]*program{}, active: map[string]*run{}}
}

type globalRand struct{}

func (globalRand) Float64() float64 { return mrand.Float64() }

// maxPrograms bounds the compiled-definition cache.
const maxPrograms = 256

// program returns def compiled, from the cache when def was seen before.
// Definitions must not change after they are first run.
func (e *Engine) program(def *asl.StateMachine) (*program, error) {
	e.mu.Lock()
	p, ok := e.progs[def]
	e.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compile(def, e.cfg.MaxDefinitionBytes)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if len(e.progs) >= maxPrograms {
		clear(e.progs)
	}
	e.progs[def] = p
	e.mu.Unlock()
	return p, nil
}

// Hash returns def's hash (sha256 of asl.Marshal's text, in hex): the
// DefHash its runs' checkpoints record and Definitions is asked for. def
// is compiled as Start compiles it, unless the engine has it already.
func (e *Engine) Hash(def *asl.StateMachine) (string, error) {
	p, err := e.program(def)
	if err != nil {
		return "", err
	}
	return p.hash, nil
}

// StartOption configures Start.
type StartOption func(*startOptions)

type startOptions struct {
	machine string
	parent  *ChildRequest
}

// WithStateMachine names the state machine the run executes: it is
// $states.context.StateMachine.Name and what Config.Definitions is asked
// for when the run is continued without its definition.
func WithStateMachine(name string) StartOption {
	return func(o *startOptions) { o.machine = name }
}

// WithParent marks the run as the child of a startExecution.sync:2 task:
// when the run ends after having paused, the engine completes the parent's
// task with req.Token. Without WithStateMachine, the state machine name is
// taken from req.StateMachine.
func WithParent(req ChildRequest) StartOption {
	return func(o *startOptions) { o.parent = &req }
}

// Start begins run runID of def with input (empty means {}) and drives it
// until it ends, pauses (WAITING: every active path waits for a task
// token) or ctx is done. A run ID can be started once (ErrRunExists). When
// ctx is cancelled, Start stops the run's in-flight work, returns ctx's
// error, and leaves the last checkpoint for Resume.
func (e *Engine) Start(ctx context.Context, runID string, def *asl.StateMachine, input json.RawMessage, opts ...StartOption) (Result, error) {
	if e.cfg.Journal == nil {
		return Result{}, errors.New("start run: engine has no journal")
	}
	if runID == "" {
		return Result{}, errors.New("start run: empty run ID")
	}
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.machine == "" && o.parent != nil {
		o.machine = o.parent.StateMachine
	}
	in, err := decodeJSON(input, map[string]any{})
	if err != nil {
		return Result{}, fmt.Errorf("start run %q: input: %w", runID, err)
	}
	prog, err := e.program(def)
	if err != nil {
		return Result{}, fmt.Errorf("start run %q: %w", runID, err)
	}
	r, fresh := e.acquire(runID)
	if !fresh {
		return Result{}, fmt.Errorf("start run %q: %w", runID, ErrRunActive)
	}
	defer e.release(r)
	if _, err := e.cfg.Journal.LoadCheckpoint(ctx, runID); err == nil {
		return Result{}, fmt.Errorf("start run %q: %w", runID, ErrRunExists)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("start run %q: %w", runID, err)
	}
	now := e.cfg.Clock.Now().UTC()
	snap := &snapshot{
		V: snapshotVersion, RunID: runID, Machine: o.machine, DefHash: prog.hash, Status: StatusRunning,
		Input: in, StartTime: now, Parent: o.parent,
		Root: &path{ID: "", State: prog.def.StartAt, Input: in, Vars: map[string]any{}},
	}
	if prog.def.TimeoutSeconds > 0 {
		snap.Deadline = now.Add(time.Duration(prog.def.TimeoutSeconds) * time.Second)
	}
	r.init(prog, snap, 0, nil)
	r.inputDirty = true
	r.record(nil, "ExecutionStarted", map[string]any{"input": in, "stateMachine": o.machine})
	r.runnable = append(r.runnable, snap.Root)
	return r.drive(ctx)
}

// Resume continues a run from its last checkpoint: tasks that were
// scheduled but whose result was not checkpointed run again (at least
// once, as in Step Functions), waits and retry backoffs continue until
// their recorded instants, task tokens whose deadline passed time out, and
// the run is driven to its next pause or end. def must be the definition
// the run started with; nil asks Config.Definitions. Resuming an ended run
// returns its result.
func (e *Engine) Resume(ctx context.Context, runID string, def *asl.StateMachine) (Result, error) {
	r, fresh := e.acquire(runID)
	if !fresh {
		return Result{}, fmt.Errorf("resume run %q: %w", runID, ErrRunActive)
	}
	defer e.release(r)
	if err := e.load(ctx, r, runID, def); err != nil {
		return Result{}, fmt.Errorf("resume run %q: %w", runID, err)
	}
	if r.snap.Status.Terminal() {
		return r.result(), nil
	}
	r.reconstruct(true, nil)
	r.record(nil, "ExecutionResumed", nil)
	res, err := r.drive(ctx)
	if err == nil {
		e.notifyParent(ctx, r.snap, res)
	}
	return res, err
}

// SendTaskSuccess completes the waiting task that token names with output
// (its result) and continues the run to its next pause or end. When the
// run is being driven by this engine (another path still works), the
// completion is handed to it and the Result reports RUNNING.
func (e *Engine) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) (Result, error) {
	v, err := decodeJSON(output, nil)
	if err != nil {
		return Result{}, fmt.Errorf("send task success: output: %w", err)
	}
	return e.complete(ctx, token, completion{kind: kindToken, value: v})
}

// SendTaskFailure fails the waiting task that token names with errName
// and cause, which its Retry and Catch rules then see, and continues the
// run as SendTaskSuccess does.
func (e *Engine) SendTaskFailure(ctx context.Context, token, errName, cause string) (Result, error) {
	if errName == "" {
		errName = asl.StatesTaskFailed
	}
	return e.complete(ctx, token, completion{kind: kindToken, fail: &failure{Error: errName, Cause: cause}})
}

// SendTaskHeartbeat restarts the HeartbeatSeconds clock of the waiting task
// that token names.
func (e *Engine) SendTaskHeartbeat(ctx context.Context, token string) (Result, error) {
	return e.complete(ctx, token, completion{kind: kindHeartbeat})
}

// History returns a run's recorded events; an error is the journal's,
// which names the run (the stores' do).
func (e *Engine) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	return e.cfg.Journal.History(ctx, runID)
}

// Variable returns the value of the variable name in a run's top-level
// scope (the one the machine's own states share) as the run's latest
// checkpoint holds it, decoded as encoding/json decodes into an any; ok
// is false when the run has no such variable there. A run that has no
// checkpoint is the journal's error (wrapping store.ErrNotFound).
func (e *Engine) Variable(ctx context.Context, runID, name string) (v any, ok bool, err error) {
	s, err := e.stored(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	v, ok = s.Root.Vars[name]
	return v, ok, nil
}

// stored decodes a run's latest checkpoint, for a look at a run this
// call does not drive; a run without one is the journal's error.
func (e *Engine) stored(ctx context.Context, runID string) (*snapshot, error) {
	cp, err := e.cfg.Journal.LoadCheckpoint(ctx, runID)
	if err != nil {
		return nil, err
	}
	s, _, err := decodeSnapshot(cp.Snapshot, cp.Values)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", runID, err)
	}
	return s, nil
}

// Children returns, sorted, the child runs a run waits for (its pending
// startExecution tasks) as its latest checkpoint holds them: what Result
// reports as Children, for a run this call does not drive. An ended run
// waits for none.
func (e *Engine) Children(ctx context.Context, runID string) ([]string, error) {
	paths, err := e.waitingPaths(ctx, runID)
	if err != nil {
		return nil, err
	}
	return waitingChildren(paths), nil
}

// waitingPaths returns the paths of a run's latest checkpoint, by ID, for
// a run this call does not drive; none for an ended run.
func (e *Engine) waitingPaths(ctx context.Context, runID string) (map[string]*path, error) {
	s, err := e.stored(ctx, runID)
	if err != nil || s.Status.Terminal() {
		return nil, err
	}
	paths := map[string]*path{}
	link(s.Root, nil, paths)
	return paths, nil
}

// Tokens returns, sorted, the task tokens a run waits on (its tasks that
// SendTaskSuccess would complete) as its latest checkpoint holds them, for
// a run this call does not drive. An ended run waits on none.
func (e *Engine) Tokens(ctx context.Context, runID string) ([]string, error) {
	paths, err := e.waitingPaths(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if p.Token != "" && (p.Phase == phaseTask || p.Phase == phaseToken) {
			out = append(out, p.Token)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (e *Engine) complete(ctx context.Context, token string, c completion) (Result, error) {
	runID, err := tokenRun(token)
	if err != nil {
		return Result{}, err
	}
	c.token = token
	c.reply = make(chan error, 1)
	for {
		r, fresh := e.acquire(runID)
		if !fresh {
			// A live run: hand the completion to its driver.
			if !r.post(c) {
				continue // it just finished; load it from the journal
			}
			select {
			case err := <-c.reply:
				if err != nil {
					return Result{}, err
				}
				return Result{RunID: runID, Status: StatusRunning}, nil
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
		}
		defer e.release(r)
		if err := e.load(ctx, r, runID, nil); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return Result{}, ErrTaskDoesNotExist
			}
			return Result{}, fmt.Errorf("complete task of run %q: %w", runID, err)
		}
		if r.snap.Status.Terminal() {
			return Result{}, ErrTaskDoesNotExist
		}
		p := r.findToken(token)
		if p == nil {
			return Result{}, ErrTaskDoesNotExist
		}
		if c.kind == kindHeartbeat {
			p = nil // the task stays pending: restart its work as usual
		}
		r.reconstruct(false, p)
		c.reply = nil
		if err := r.apply(c); err != nil {
			return Result{}, err
		}
		res, err := r.drive(ctx)
		if err == nil {
			e.notifyParent(ctx, r.snap, res)
		}
		return res, err
	}
}

// notifyParent completes the parent's task of a child run that ended after
// having paused (a child that ends within Start is reported by its
// ChildStarter instead).
func (e *Engine) notifyParent(ctx context.Context, snap *snapshot, res Result) {
	if snap.Parent == nil || !res.Status.Terminal() {
		return
	}
	req := *snap.Parent
	var parent Result
	var err error
	if res.Status == StatusSucceeded {
		out, _ := json.Marshal(childTaskResult(req, res))
		parent, err = e.SendTaskSuccess(ctx, req.Token, out)
	} else {
		f := childFailure(req, res)
		parent, err = e.SendTaskFailure(ctx, req.Token, f.Error, f.Cause)
	}
	switch {
	case err != nil && !errors.Is(err, ErrTaskDoesNotExist):
		e.log.Warn("complete parent task", "run", snap.RunID, "parent", req.ParentRunID, "err", err)
	case err == nil && parent.Status != StatusRunning && e.cfg.OnParentContinued != nil:
		e.cfg.OnParentContinued(ctx, parent)
	}
}

// acquire returns the live run for runID (fresh false) or registers a new
// one (fresh true), which the caller must release.
func (e *Engine) acquire(runID string) (*run, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.active[runID]; ok {
		return r, false
	}
	r := newRun(e, runID)
	e.active[runID] = r
	return r, true
}

func (e *Engine) release(r *run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active[r.id] == r {
		delete(e.active, r.id)
	}
	r.closeInbox()
}

// load reads a run's checkpoint into r.
func (e *Engine) load(ctx context.Context, r *run, runID string, def *asl.StateMachine) error {
	cp, err := e.cfg.Journal.LoadCheckpoint(ctx, runID)
	if err != nil {
		return err // wraps store.ErrNotFound for a run never started
	}
	snap, v1, err := decodeSnapshot(cp.Snapshot, cp.Values)
	if err != nil {
		return err
	}
	if snap.Status.Terminal() {
		r.snap, r.seq = snap, cp.Seq // nothing will run
		return nil
	}
	if def == nil {
		if e.cfg.Definitions == nil {
			return errors.New("no definition given and no Definitions configured")
		}
		def, err = e.cfg.Definitions.Definition(ctx, snap.Machine, snap.DefHash)
		if err != nil {
			return fmt.Errorf("definition %q: %w", snap.Machine, err)
		}
	}
	prog, err := e.program(def)
	if err != nil {
		return err
	}
	if prog.hash != snap.DefHash {
		return ErrDefinitionChanged
	}
	r.init(prog, snap, cp.Seq, cp.Values)
	if v1 {
		// The next checkpoint writes what version 1 kept in the snapshot.
		r.inputDirty = true
		for _, p := range r.paths {
			for name := range p.Vars {
				r.dirty[varID{p.ID, name}] = struct{}{}
			}
		}
	}
	return nil
}

// Task tokens carry their run ID so that any process can find the run.
const tokenPrefix = "stl1."

func newToken(runID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(runID)) + "." + hex.EncodeToString(b[:])
}

func tokenRun(token string) (string, error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return "", ErrInvalidToken
	}
	enc, _, ok := strings.Cut(rest, ".")
	if !ok {
		return "", ErrInvalidToken
	}
	id, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(id) == 0 {
		return "", ErrInvalidToken
	}
	return string(id), nil
}

// decodeJSON parses raw into plain JSON values; empty raw yields def.
func decodeJSON(raw json.RawMessage, def any) (any, error) {
	if len(raw) == 0 {
		return def, nil
	}
	return jsonstr.Decode(raw)
}
