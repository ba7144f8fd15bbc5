// Package local runs pipelines on one machine, the embedded default: it
// compiles a pipeline to the state machine CDK would deploy, runs it in the
// local engine with the step handlers in-process, and keeps runs, step
// records, approvals and engine checkpoints in one SQLite file.
//
// The state lives in a directory (by default .stepline/ in the working
// directory): stepline.db, and definitions/, the compiled state machines
// of the pipelines run there (each written whole, by rename), so that
// another process can resume a run or decide its approval; a run that
// waits keeps the one it started with in definitions/by-hash/, so that a
// decision taken after the pipeline changed goes on with it. With
// Config.BuildID, definitions/cache/ keeps each compile by a hash of the
// files it read and of the build (package defcache), and a pipeline whose
// files did not change is not compiled again.
//
// # One driver per run
//
// Any number of processes share the state, and a run is driven by one of
// them at a time: Start, Resume, Decide, Complete, the sweep and the
// expiry of approvals first claim the run in the store (store.RunClaim).
// A run another live process drives is refused with a *DrivenError
// ("run R is being driven by process N on H"), so the step in flight is
// not run a second time. A claim is a lease of Config.Lease (DefaultLease,
// 30 s) that the driver renews every third of it; a driver that finds its
// claim taken stops at its last checkpoint. The claim of a process that
// died is taken over at once when it ran on this host and no process has
// its PID any more, else when its lease lapses, so a killed process never
// blocks a resume for long. A child run is driven by its parent's driver.
//
// # Scripted runs
//
// A run started WithResponses is scripted: the responses file is recorded
// with the run (sqlite.Replies), with the count of replies it used, and
// every Task of the run and of its child runs goes to the step function
// Config.Scripted builds over those replies, whichever process drives it
// on. A scripted run never reaches the live step function: when its file
// cannot be read, driving it is refused with a *RepliesError and the run
// stays as it was, until WithResponses gives the file again.
//
// # Human steps' timeouts
//
// A waiting run is driven by no process, so the deadline of its human
// step would pass unnoticed: ExpireApprovals and Expire drive on the runs
// whose approval expired, and the engine times the step out
// (States.Timeout), after which the step's on_failure policy and the
// pipeline's notifications apply as for any failed step. Server calls
// ExpireApprovals every ServerConfig.ApprovalPoll and at each expiry.
//
// # Notifications of ends outside a step
//
// A step that ends a run early fires the pipeline's notifications itself
// (package steprun). A run that ends where no step recorded why — past its
// state machine's time limit, by an error the state machine could not
// catch, escalated by Sweep under durable: on_interrupted: escalate — is
// closed by the runner, which then fires the notifications its outcome
// calls for (runend.Notify, as the recorder function does on AWS: escalate
// with escalation_reason timed_out, failed or escalated), once, through
// the dispatcher of the run's step function (Config.Notifications). A run
// a step had closed already is not notified again, and a completed one
// fires nothing.
//
// # Reruns and schedules
//
// PrepareRerun and StartRerun (RerunIn for the CLI) start a new run that
// reuses an earlier run's outputs for the steps before a given step
// (package rerun): the same compiled state machine, started with a rerun
// block in its input, loads them and goes on at that step. Server also
// fires the pipelines' schedules (package schedule), claiming each tick
// in the store so that it fires once however many servers share it.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/internal/atomicfile"
	"github.com/stepline/stepline/shared/local/defcache"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/runend"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry/prom"
)

// DefaultDir is where runs are kept when no directory is given.
const DefaultDir = ".stepline"

// StepHandler answers the state machine's Tasks: the step function.
type StepHandler interface {
	Handle(ctx context.Context, req task.Request) (task.Response, error)
}

// Runner runs pipelines locally.
type Runner struct {
	dir      string
	Store    *sqlite.Store
	engine   *engine.Engine
	handler  StepHandler
	scripted func(*sqlite.Store, *executor.Responses) StepHandler
	now      func() time.Time
	log      *slog.Logger

	driver  driver
	lease   time.Duration
	claimMu sync.Mutex // guards claims; never held across a store write (see claim)
	claims  map[string]*claim

	project *project.Project // nil: each file's own
	build   string           // Config.BuildID
	// compiles counts the pipeline files compiled (cache hits compile
	// none): what the tests observe.
	compiles atomic.Int64
	defMu    sync.Mutex
	defs     map[defcache.Key]*compiled // this process's compiles, by key

	sessMu   sync.Mutex
	sessions map[string]*session // nil: a run known not to be scripted

	expireMu sync.Mutex
	stuck    map[string]bool // waiting runs whose expiry could not be applied

	metrics *prom.Metrics // served by Server at GET /metrics

	notifications func(StepHandler) notify.Notifier // Config.Notifications
}

// Config wires a Runner.
type Config struct {
	Dir     string                                   // state directory; DefaultDir when empty
	DBPath  string                                   // SQLite file; <Dir>/stepline.db when empty
	Handler func(s *sqlite.Store) StepHandler        // builds the step function over the store
	OnEvent func(runID string, e store.HistoryEvent) // progress, from the engine
	Clock   engine.Clock                             // nil: the system clock
	// Scripted builds the step function of a scripted run (WithResponses)
	// over the store and the run's replies: every executor answered from
	// them, nothing sent over the network. Nil: scripted runs are refused.
	Scripted func(s *sqlite.Store, replies *executor.Responses) StepHandler
	// MaxDefinitionBytes is the largest state machine the engine runs
	// (engine.Config.MaxDefinitionBytes); 0 means Step Functions' limit.
	MaxDefinitionBytes int
	// Lease is how long this Runner's claim on a run it drives lasts
	// unless renewed (every third of it); 0 means DefaultLease.
	Lease time.Duration
	// Logger receives warnings (a claim that could not be renewed). Nil:
	// discarded.
	Logger *slog.Logger
	// Project is the project the pipelines compile in (stepline --config);
	// nil: each file's, the stepline.yaml found walking up from it.
	Project *project.Project
	// BuildID identifies the program that compiles (its version and
	// build). When it is set, Compile keeps what it compiled in
	// definitions/cache/, by a hash of every file the compile reads and
	// of BuildID (package defcache), and reuses it while none of them
	// changes. "": every Compile compiles.
	BuildID string
	// Notifications returns the notifications dispatcher of a step
	// function (one Handler or Scripted built): through it the runner
	// fires the notifications of a run it closes outside a step
	// (runend.Notify) — a run past its state machine's time limit, one
	// ended by an error the state machine could not catch, a durable run
	// that Sweep escalates — as the recorder function does on AWS. A run
	// is given its own step function's (a scripted run's answers from its
	// replies), so they go where its steps' notifications go. Nil, or a
	// nil result: none are sent.
	Notifications func(h StepHandler) notify.Notifier
}

// Open opens (creating if needed) the state directory and the store.
func Open(ctx context.Context, cfg Config) (*Runner, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = DefaultDir
	}
	if err := os.MkdirAll(filepath.Join(dir, "definitions"), 0o755); err != nil {
		return nil, fmt.Errorf("open state directory: %w", err)
	}
	dbPath := cfg.DBPath
	if dbPath == "" {
		dbPath = filepath.Join(dir, "stepline.db")
	}
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	r := &Runner{dir: dir, Store: st, now: time.Now, log: cfg.Logger, scripted: cfg.Scripted, project: cfg.Project, build: cfg.BuildID,
		driver: newDriver(), lease: cfg.Lease, claims: map[string]*claim{}, sessions: map[string]*session{},
		stuck: map[string]bool{}, notifications: cfg.Notifications}
	if r.log == nil {
		r.log = discard
	}
	if r.lease <= 0 {
		r.lease = DefaultLease
	}
	r.metrics = prom.New(r.driving, st)
	r.handler = cfg.Handler(st)
	r.engine = engine.New(engine.Config{
		Journal: st,
		Resources: engine.Functions{
			task.StepFunctionPlaceholder:     r.invoke,
			task.ApprovalFunctionPlaceholder: r.invoke,
		},
		Definitions:        definitions{dir: filepath.Join(dir, "definitions")},
		Children:           children{r},
		OnParentContinued:  r.settleParent,
		OnEvent:            cfg.OnEvent,
		Clock:              cfg.Clock,
		MaxDefinitionBytes: cfg.MaxDefinitionBytes,
	})
	return r, nil
}

// Close closes the store.
func (r *Runner) Close() error { return r.Store.Close() }

// invoke adapts the step function to the engine's Lambda handlers: a
// scripted run's (or its parent's) step function answers from its replies,
// any other run's from the real executors.
func (r *Runner) invoke(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	// The engine wrote payload (its JSON encoder): valid JSON, not
	// checked again.
	req, err := task.DecodeEncoded(payload)
	if err != nil {
		return nil, fmt.Errorf("decode task payload: %w", err)
	}
	// The step's writes (its record, usage, the replies it used) commit
	// with the checkpoint that records its end: one write transaction
	// per step (sqlite.DeferWrites).
	ctx = sqlite.DeferWrites(ctx)
	h := r.handler
	// The request's run names its parent ("" for none): what the run's
	// record would say.
	s, err := r.sessionKnown(ctx, req.Run.ID, req.Run.ParentRunID)
	if err != nil {
		return nil, fault.Errorf[fault.ConfigError]("%v", err)
	}
	if s != nil {
		h = s.handler
		defer s.save(ctx, r)
	}
	resp, err := h.Handle(steprun.WithObserver(ctx, r.metrics), req)
	if err != nil {
		return nil, err
	}
	return task.MarshalResponse(resp)
}

// definitions finds a run's definition for the engine: the one kept by
// its hash when the run waited (keepWaiting), else the one saved under its
// name by the last compile. They are decoded only: the engine validates
// them, within its own size limit.
type definitions struct{ dir string }

// byHashDir is where the definitions of runs that waited are kept, each
// as <hash>.asl.json, the engine's hash of it.
const byHashDir = "by-hash"

func (d definitions) Definition(_ context.Context, name, hash string) (*asl.StateMachine, error) {
	b, err := []byte(nil), fs.ErrNotExist
	if kept := d.byHash(hash); kept != "" {
		b, err = os.ReadFile(kept)
	}
	if errors.Is(err, fs.ErrNotExist) {
		b, err = os.ReadFile(filepath.Join(d.dir, name+".asl.json"))
	}
	if err != nil {
		return nil, fmt.Errorf("load definition of %q: %w", name, err)
	}
	sm, err := asl.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("load definition of %q: %w", name, err)
	}
	return sm, nil
}

// byHash is the file a definition of hash is kept in; hash is the
// engine's (hex): anything else names no file.
func (d definitions) byHash(hash string) string {
	if len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return ""
	}
	return filepath.Join(d.dir, byHashDir, hash+".asl.json")
}

// keepWaiting keeps sm by its hash when res, a run of it, waits (for a
// decision, or a child run), unless it is kept already: the decision
// continues the run with the definition it started with even when the
// pipeline is compiled again in the meantime, as a Step Functions
// execution goes on with its own. A definition that cannot be kept is
// logged: the run then goes on with the one saved under its name, if it
// is the same.
func (r *Runner) keepWaiting(sm *asl.StateMachine, res engine.Result) {
	if res.Status != engine.StatusWaiting {
		return
	}
	hash, err := r.engine.Hash(sm)
	if err != nil {
		return // the engine ran it: not reached
	}
	defs := definitions{dir: filepath.Join(r.dir, "definitions")}
	path := defs.byHash(hash)
	if _, err := os.Stat(path); err == nil {
		return
	}
	b, err := asl.Marshal(sm)
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = atomicfile.Write(path, b)
		}
	}
	if err != nil {
		r.log.Warn("keep the definition of a waiting run", "run", res.RunID, "error", err)
	}
}

// Outcome is where a run stands after Run, Resume or a decision.
type Outcome struct {
	RunID    string
	Pipeline string
	Status   store.RunStatus
	Reason   string
	Output   json.RawMessage
	// Waiting: the approvals a waiting run needs, its own and those of
	// the sub-pipeline runs it waits for (Approval.RunID names the run
	// each is decided in).
	Waiting []store.Approval
	// Parent, after Decide, Complete or Resume of a sub-pipeline's run
	// whose end continued its parent: where the parent stands then (with
	// its own Parent when its end continued one in turn); nil otherwise.
	Parent *Outcome
}

// continuedKey carries the parents a call continued (settleParent), for
// the call to report them (withParents).
type continuedKey struct{}

type continued struct {
	mu   sync.Mutex
	runs map[string]continuedRun // by run ID
}

type continuedRun struct {
	outcome Outcome
	parent  string // its parent's run ID, if any
}

// trackParents returns ctx set to collect the parents its calls continue.
func trackParents(ctx context.Context) (context.Context, *continued) {
	c := &continued{runs: map[string]continuedRun{}}
	return context.WithValue(ctx, continuedKey{}, c), c
}

// withParents sets o.Parent, and each parent's, from the runs c collected,
// starting at o's parent parentID.
func (c *continued) withParents(o Outcome, parentID string) Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := &o
	for seen := 0; parentID != "" && seen <= len(c.runs); seen++ {
		p, ok := c.runs[parentID]
		if !ok {
			break
		}
		po := p.outcome
		at.Parent = &po
		at, parentID = at.Parent, p.parent
	}
	return o
}

// NewRunID returns a new run ID (inbound.NewRunID, as runs started through
// serve get).
func NewRunID() string { return inbound.NewRunID() }

// Run starts a run of the pipeline in path with trigger as its event and
// drives it until it ends or waits for an approval.
func (r *Runner) Run(ctx context.Context, path string, trigger json.RawMessage, runID string, opts ...RunOption) (Outcome, error) {
	sm, name, _, err := r.Compile(path)
	if err != nil {
		return Outcome{}, err
	}
	return r.Start(ctx, sm, name, trigger, runID, opts...)
}

// Start runs a compiled state machine, saved under name by Compile. The
// run is claimed for this Runner while it is driven (see Resume).
func (r *Runner) Start(ctx context.Context, sm *asl.StateMachine, name string, trigger json.RawMessage, runID string, opts ...RunOption) (o Outcome, err error) {
	if runID == "" {
		runID = NewRunID()
	}
	ctx, span := startRunSpan(ctx, "run", name, runID)
	defer func() { endRunSpan(span, o, err) }()
	if len(trigger) == 0 {
		trigger = json.RawMessage(`{}`)
	}
	input, _ := json.Marshal(map[string]json.RawMessage{"trigger": trigger})
	if in := options(opts).input; len(in) > 0 {
		input = in
	}
	dctx, release, err := r.hold(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("run %s: %w", name, err)
	}
	defer release()
	// Without an input given, the run's input is {"trigger": …}: a run no
	// other run started.
	if err := r.prepare(dctx, runID, options(opts), len(options(opts).input) == 0); err != nil {
		return Outcome{}, fmt.Errorf("run %s: %w", name, err)
	}
	prepareTemplates(sm)
	started := r.now().UTC()
	res, err := r.engine.Start(dctx, runID, sm, input, engine.WithStateMachine(name))
	if err != nil {
		return Outcome{}, fmt.Errorf("run %s: %w", name, lostClaim(dctx, runID, err))
	}
	r.keepWaiting(sm, res)
	return r.settle(ctx, name, res, &startFacts{sm: sm, input: input, at: started})
}

// startFacts is what a run started with: settle records a run that ended
// before any step recorded it (every step skipped) from it.
type startFacts struct {
	sm    *asl.StateMachine
	input json.RawMessage
	at    time.Time
}

// record is the run record of a run that ended (completed: when) or
// waits, with o, before any step created it: what the step function
// would have written, from the definition's pipeline facts and the run's
// input.
func (s *startFacts) record(o Outcome, completed *time.Time) store.Run {
	run := store.Run{ID: o.RunID, Pipeline: o.Pipeline, Status: o.Status, Reason: o.Reason,
		Stage: store.StageTesting, StartedAt: s.at, CompletedAt: completed}
	if len(o.Output) > 0 && string(o.Output) != "null" {
		run.FinalOutput = o.Output
	}
	if facts, ok := pipelineAssigned(s.sm).(map[string]any); ok {
		if facts["stage"] == store.StageProduction {
			run.Stage = store.StageProduction
		}
		run.ConfigFingerprint, _ = facts["config"].(string)
	}
	var in struct {
		Trigger     json.RawMessage `json:"trigger"`
		ParentRunID string          `json:"parent_run_id"`
	}
	_ = json.Unmarshal(s.input, &in)
	run.ParentRunID = in.ParentRunID
	if len(in.Trigger) > 0 && len(in.Trigger) <= store.MaxTriggerBytes && json.Valid(in.Trigger) {
		run.Trigger = in.Trigger
		var t struct {
			Source      string `json:"source"`
			Team        string `json:"team"`
			Fingerprint string `json:"fingerprint"`
		}
		_ = json.Unmarshal(in.Trigger, &t)
		run.Source, run.Team, run.Fingerprint = t.Source, t.Team, t.Fingerprint
	}
	return run
}

// Resume continues a run from its last checkpoint: a waiting run with the
// definition it started with, an interrupted one with its pipeline as
// compiled now, refused when that changed. A run is driven by one
// process at a time: Resume claims it first (see store.RunClaim), and a
// run another live process drives is refused with a *DrivenError; the
// claim of a process that died is taken over (at once on this host, else
// when its lease lapses). A scripted run answers from the replies recorded
// with it, or from WithResponses; replies that cannot be read are a
// *RepliesError, and the run is left as it was.
func (r *Runner) Resume(ctx context.Context, runID string, opts ...RunOption) (o Outcome, err error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("resume %s: %w", runID, err)
	}
	ctx, span := startRunSpan(ctx, "resume", run.Pipeline, runID)
	defer func() { endRunSpan(span, o, err) }()
	// A run that waits (for a decision, a timeout, a sub-pipeline) goes
	// on with the definition it started with, as a decision does (nil:
	// the engine asks definitions with the run's hash). An interrupted
	// run is resumed with the pipeline as compiled now: one changed since
	// the run started is refused (engine.ErrDefinitionChanged).
	var sm *asl.StateMachine
	if run.Status != store.RunWaiting {
		if sm, err = (definitions{filepath.Join(r.dir, "definitions")}).Definition(ctx, run.Pipeline, ""); err != nil {
			return Outcome{}, err
		}
	}
	dctx, release, err := r.hold(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("resume: %w", err)
	}
	defer release()
	if err := r.prepare(dctx, runID, options(opts), false); err != nil {
		return Outcome{}, fmt.Errorf("resume: %w", err)
	}
	tctx, parents := trackParents(dctx)
	res, err := r.engine.Resume(tctx, runID, sm)
	if err != nil {
		return Outcome{}, fmt.Errorf("resume %s: %w", runID, lostClaim(dctx, runID, err))
	}
	if sm != nil {
		r.keepWaiting(sm, res)
	}
	o, err = r.settle(ctx, run.Pipeline, res, nil)
	return parents.withParents(o, run.ParentRunID), err
}

// Errors of Decide.
var (
	// ErrNoApproval: the run has no pending approval for that step.
	ErrNoApproval = errors.New("no pending approval")
	// ErrDecided: the step's approval was decided the other way before,
	// but the run had not gone on; Decide continued it with the decision
	// recorded (its Outcome is valid).
	ErrDecided = errors.New("decided before")
)

// Decide approves or rejects a run's pending human step and drives the
// run on. The run is claimed and its replies checked (see Resume) before
// the decision is recorded, so a refused decision leaves the approval
// pending. A decision recorded whose run did not go on (its continuation
// failed after the record) is sent again by the next Decide of that step,
// as recorded: with the other decision asked, the run goes on with the
// recorded one and the error is ErrDecided.
func (r *Runner) Decide(ctx context.Context, runID, step, decision, by string, opts ...RunOption) (o Outcome, err error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("decide: %w", err)
	}
	ctx, span := startRunSpan(ctx, "resume", run.Pipeline, runID)
	defer func() { endRunSpan(span, o, err) }()
	dctx, release, err := r.hold(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("decide step %q: %w", step, err)
	}
	defer release()
	if err := r.prepare(dctx, runID, options(opts), false); err != nil {
		return Outcome{}, fmt.Errorf("decide step %q: %w", step, err)
	}
	approvals, err := r.Store.RunApprovals(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	for _, a := range approvals {
		if a.Step != step || a.Decision != store.DecisionPending {
			continue
		}
		d := store.Decision(decided(decision))
		if _, err := r.Store.DecideApproval(ctx, a.ID, d, by, r.now()); err != nil {
			return Outcome{}, fmt.Errorf("decide step %q of run %s: %w", step, runID, err)
		}
		r.metrics.ApprovalDecided(run.Pipeline, string(d))
		return r.continueRun(ctx, dctx, run, a.TaskToken, task.Decision{Decision: decision, By: by}, "")
	}
	// A decision recorded whose continuation failed (the definition did
	// not load, the process stopped before the run took it) left the run
	// waiting on its token: it is sent again, as recorded.
	tokens, err := r.engine.Tokens(ctx, runID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Outcome{}, err
	}
	for i := len(approvals) - 1; i >= 0; i-- {
		a := approvals[i]
		if a.Step != step || a.Decision == store.DecisionPending || !slices.Contains(tokens, a.TaskToken) {
			continue
		}
		recorded := task.Approve
		if a.Decision == store.DecisionRejected {
			recorded = task.Reject
		}
		o, err := r.continueRun(ctx, dctx, run, a.TaskToken, task.Decision{Decision: recorded, By: a.DecidedBy},
			fmt.Sprintf(" with step %q %s by %s", step, a.Decision, a.DecidedBy))
		if err == nil && recorded != decision {
			err = fmt.Errorf("run %s step %q: %w: %s by %s, and the run went on with that decision", runID, step, ErrDecided, a.Decision, a.DecidedBy)
		}
		return o, err
	}
	// The step may wait in a sub-pipeline's run: name it.
	if waiting, err := r.Waiting(ctx, runID); err == nil {
		for _, a := range waiting {
			if a.Step == step && a.RunID != runID {
				return Outcome{}, fmt.Errorf("run %s step %q: %w; it waits in sub-pipeline run %s (stepline approve %s %s)", runID, step, ErrNoApproval, a.RunID, a.RunID, step)
			}
		}
	}
	return Outcome{}, fmt.Errorf("run %s step %q: %w", runID, step, ErrNoApproval)
}

// continueRun completes the task of token in run (held by dctx) with
// decision d and records where the run stands; what tells the error which
// decision it was.
func (r *Runner) continueRun(ctx, dctx context.Context, run store.Run, token string, d task.Decision, what string) (Outcome, error) {
	out, _ := json.Marshal(d)
	tctx, parents := trackParents(dctx)
	res, err := r.engine.SendTaskSuccess(tctx, token, out)
	if err != nil {
		return Outcome{}, fmt.Errorf("continue run %s%s: %w", run.ID, what, lostClaim(dctx, run.ID, err))
	}
	o, err := r.settle(ctx, run.Pipeline, res, nil)
	return parents.withParents(o, run.ParentRunID), err
}

// settle records what the engine reports as the run's status. A run it
// closes with an outcome that fires notifications (see closeRun) has
// them fired here: no step recorded that end.
func (r *Runner) settle(ctx context.Context, pipelineName string, res engine.Result, start *startFacts) (Outcome, error) {
	o := Outcome{RunID: res.RunID, Pipeline: pipelineName}
	if res.Status != engine.StatusRunning {
		defer r.forget(res.RunID) // no longer driven: read afresh next time
	}
	var end runend.Outcome
	switch res.Status {
	case engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut:
		kind := runend.Failed
		switch res.Status {
		case engine.StatusSucceeded:
			kind = runend.Succeeded
		case engine.StatusTimedOut:
			kind = runend.TimedOut
		}
		end, _ = runend.Of(runend.End{Kind: kind, Error: res.Error, Cause: res.Cause, Output: res.Output})
		o.Status, o.Reason, o.Output = end.Status, end.Reason, end.Final
	case engine.StatusWaiting:
		o.Status = store.RunWaiting
		var err error
		if o.Waiting, err = r.waiting(ctx, res.RunID, res.Children); err != nil {
			return o, err
		}
	default:
		o.Status = store.RunRunning
		return o, nil
	}
	u := store.RunUpdate{Status: o.Status, Reason: o.Reason}
	if o.Status.Terminal() {
		now := r.now().UTC()
		u.CompletedAt = &now
		if len(o.Output) > 0 && string(o.Output) != "null" {
			u.FinalOutput = o.Output
		}
	}
	// Only an end that fires notifications needs to know whether a step
	// closed the run first; any other is written as it is.
	notifying := o.Status.Terminal() && end.Action() != "" && r.notifications != nil
	var (
		closed bool
		rec    store.Run // the run as it was before closeRun closed it
		err    error
	)
	if notifying {
		closed, rec, err = r.closeRun(ctx, res.RunID, u)
	} else {
		err = r.Store.UpdateRun(ctx, res.RunID, u)
	}
	if errors.Is(err, store.ErrNotFound) && start != nil {
		// No step recorded the run (every one was skipped, it ended
		// before its first step did, or it waits for a sub-pipeline it
		// started first): record it here.
		rec = start.record(o, u.CompletedAt)
		if err = r.Store.CreateRun(ctx, rec); err == nil {
			closed = true
		} else if errors.Is(err, store.ErrExists) {
			err = r.Store.UpdateRun(ctx, res.RunID, u)
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return o, fmt.Errorf("record run status: %w", err)
	}
	r.metrics.RunEnded(pipelineName, o.Status)
	if notifying && closed {
		var sm *asl.StateMachine
		if start != nil {
			sm = start.sm
		}
		r.notifyClosed(ctx, pipelineName, sm, rec, end, map[string]any{
			"execution_status": string(res.Status),
			"error":            res.Error,
		})
	}
	return o, nil
}

// maxWaitingRuns bounds the runs whose approvals a waiting run's outcome
// lists: itself and the sub-pipeline runs it waits for, at any depth.
const maxWaitingRuns = 256

// Waiting returns the pending approvals a run waits for, as its Outcome
// lists them: its own, then those of the sub-pipeline runs it waits for,
// at any depth (Approval.RunID names the run each is decided in), and the
// approvals decided whose run did not take the decision (a decision of
// the step sends it again). A run that does not wait has none.
func (r *Runner) Waiting(ctx context.Context, runID string) ([]store.Approval, error) {
	children, err := r.engine.Children(ctx, runID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return r.waiting(ctx, runID, children)
}

// waiting lists the pending approvals of runID and of children, the
// child runs it waits for, and of theirs, and those decided whose run
// still waits on them (the continuation failed: Decide sends them again).
func (r *Runner) waiting(ctx context.Context, runID string, children []string) ([]store.Approval, error) {
	ids := append([]string{runID}, children...)
	for i := 1; i < len(ids) && len(ids) < maxWaitingRuns; i++ {
		more, err := r.engine.Children(ctx, ids[i])
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		ids = append(ids, more...)
	}
	var out []store.Approval
	for _, id := range ids {
		approvals, err := r.Store.RunApprovals(ctx, id)
		if err != nil {
			return nil, err
		}
		var tokens []string // the run's, read at its first decided approval
		read := false
		for _, a := range approvals {
			if a.Decision == store.DecisionPending {
				out = append(out, a)
				continue
			}
			// Decided, but the run did not take it (see Decide).
			if !read {
				if tokens, err = r.engine.Tokens(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
					return nil, err
				}
				read = true
			}
			if slices.Contains(tokens, a.TaskToken) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// settleParent records where a parent run stands after its child's end
// continued it (engine.Config.OnParentContinued): a run whose
// sub-pipeline waited for a decision ends, or waits again, when that
// decision is taken, and is recorded so, with its notifications, as the
// runs this runner drives itself are (settle).
func (r *Runner) settleParent(ctx context.Context, res engine.Result) {
	run, err := r.Store.GetRun(ctx, res.RunID)
	if err == nil {
		// Its definition is kept already: the parent waited for its
		// child (keepWaiting).
		var o Outcome
		if o, err = r.settle(ctx, run.Pipeline, res, nil); err == nil {
			if c, ok := ctx.Value(continuedKey{}).(*continued); ok {
				c.mu.Lock()
				c.runs[run.ID] = continuedRun{outcome: o, parent: run.ParentRunID}
				c.mu.Unlock()
			}
		}
	}
	if err != nil {
		r.log.Warn("record the parent run's status", "run", res.RunID, "error", err)
	}
}

// closeRun writes u, a terminal status, to a run's record and reports
// whether this call closed the run: false when a step had closed it
// already (then the record keeps the status it ended with, and a
// different status is store.ErrConflict, as UpdateRun has it). It returns
// the record as it was before. The runner drives the run (it holds its
// claim), so no step writes it between the read and the write.
func (r *Runner) closeRun(ctx context.Context, runID string, u store.RunUpdate) (bool, store.Run, error) {
	before, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return false, before, err
	}
	err = r.Store.UpdateRun(ctx, runID, u)
	return err == nil && !before.Status.Terminal(), before, err
}

// notifyClosed fires the notifications of a run this runner closed
// outside a step (runend.Notify), through the dispatcher of the run's own
// step function (Config.Notifications), with the facts of the pipeline it
// ran (pipelineFacts). Problems are logged: a run's end is recorded
// whatever its notifications do.
func (r *Runner) notifyClosed(ctx context.Context, pipelineName string, sm *asl.StateMachine, run store.Run, end runend.Outcome, extra map[string]any) {
	if r.notifications == nil || end.Action() == "" {
		return
	}
	h := r.handler
	s, err := r.sessionOf(ctx, run.ID, run.ParentRunID)
	if err != nil {
		// A scripted run whose replies cannot be read: its notifications
		// must not go out through the live step function's dispatcher.
		r.log.WarnContext(ctx, "notifications not sent", "run", run.ID, "error", err.Error())
		return
	}
	if s != nil {
		h = s.handler
	}
	n := r.notifications(h)
	if n == nil {
		return
	}
	p, err := r.pipelineFacts(ctx, run.ID, pipelineName, sm)
	if err != nil {
		r.log.WarnContext(ctx, "notifications not sent", "run", run.ID, "pipeline", pipelineName, "error", err.Error())
		return
	}
	runend.Notify(ctx, n, r.log, runend.Closed{RunID: run.ID, Pipeline: p, Outcome: end, Trigger: run.Trigger, Extra: extra})
}

// pipelineFacts reads the facts of the pipeline run runID ran: those sm,
// the definition it started with, assigns (task.PipelineAssigned); else
// the run's own variable "pipeline" (task.PipelineValue), which its first
// state assigned, so that a run the sweep escalates notifies as the
// pipeline it started as, whatever was compiled under its name since;
// else, for a run that has no checkpoint, those of the definition saved
// under name (task.PipelineOf).
func (r *Runner) pipelineFacts(ctx context.Context, runID, name string, sm *asl.StateMachine) (task.Pipeline, error) {
	if sm != nil {
		return task.PipelineAssigned(pipelineAssigned(sm))
	}
	v, ok, err := r.engine.Variable(ctx, runID, "pipeline")
	switch {
	case err == nil && ok:
		return task.PipelineValue(v)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return task.Pipeline{}, err
	}
	def, err := os.ReadFile(filepath.Join(r.dir, "definitions", name+".asl.json"))
	if err != nil {
		return task.Pipeline{}, fmt.Errorf("read pipeline %q: %w", name, err)
	}
	return task.PipelineOf(def)
}

// pipelineAssigned is the value a compiled definition's first state
// assigns the variable "pipeline" (its facts), nil when it assigns none.
func pipelineAssigned(sm *asl.StateMachine) any {
	st, _ := sm.States.Get(sm.StartAt)
	switch first := st.(type) {
	case *asl.Pass:
		return first.Assign["pipeline"]
	case *asl.Choice: // the first state of a compiled pipeline
		return first.Assign["pipeline"]
	}
	return nil
}

// History returns a run's execution history.
func (r *Runner) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	return r.engine.History(ctx, runID)
}

// Complete completes a waiting task with a human decision (its approval is
// already decided in the store) and drives the run on, claimed as Resume
// claims it.
func (r *Runner) Complete(ctx context.Context, taskToken string, d task.Decision) (o Outcome, err error) {
	out, _ := json.Marshal(d)
	a, err := r.Store.ApprovalByTaskToken(ctx, taskToken)
	if err != nil {
		return Outcome{}, fmt.Errorf("complete task: %w", err)
	}
	ctx, span := startRunSpan(ctx, "resume", a.Pipeline, a.RunID)
	defer func() { endRunSpan(span, o, err) }()
	dctx, release, err := r.hold(ctx, a.RunID)
	if err != nil {
		return Outcome{}, fmt.Errorf("complete task: %w", err)
	}
	defer release()
	if err := r.prepare(dctx, a.RunID, runOptions{}, false); err != nil {
		return Outcome{}, fmt.Errorf("complete task: %w", err)
	}
	tctx, parents := trackParents(dctx)
	res, err := r.engine.SendTaskSuccess(tctx, taskToken, out)
	if err != nil {
		return Outcome{}, fmt.Errorf("complete task: %w", lostClaim(dctx, a.RunID, err))
	}
	r.metrics.ApprovalDecided(a.Pipeline, decided(d.Decision))
	run, err := r.Store.GetRun(ctx, res.RunID)
	if err != nil {
		return Outcome{}, err
	}
	o, err = r.settle(ctx, run.Pipeline, res, nil)
	return parents.withParents(o, run.ParentRunID), err
}
