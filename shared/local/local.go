// Package local runs pipelines on one machine, the embedded default: it
// compiles a pipeline to the state machine CDK would deploy, runs it in the
// local engine with the step handlers in-process, and keeps runs, step
// records, approvals and engine checkpoints in one SQLite file.
//
// The state lives in a directory (by default .stepline/ in the working
// directory): stepline.db, and definitions/, the compiled state machines
// of the pipelines run there, so that another process can resume a run or
// decide its approval.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// DefaultDir is where runs are kept when no directory is given.
const DefaultDir = ".stepline"

// StepHandler answers the state machine's Tasks: the step function.
type StepHandler interface {
	Handle(ctx context.Context, req task.Request) (task.Response, error)
}

// Runner runs pipelines locally.
type Runner struct {
	dir     string
	Store   *sqlite.Store
	engine  *engine.Engine
	handler StepHandler
	now     func() time.Time
}

// Config wires a Runner.
type Config struct {
	Dir     string                                   // state directory; DefaultDir when empty
	DBPath  string                                   // SQLite file; <Dir>/stepline.db when empty
	Handler func(s *sqlite.Store) StepHandler        // builds the step function over the store
	OnEvent func(runID string, e store.HistoryEvent) // progress, from the engine
	Clock   engine.Clock                             // nil: the system clock
	// MaxDefinitionBytes is the largest state machine the engine runs
	// (engine.Config.MaxDefinitionBytes); 0 means Step Functions' limit.
	MaxDefinitionBytes int
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
	r := &Runner{dir: dir, Store: st, now: time.Now}
	r.handler = cfg.Handler(st)
	r.engine = engine.New(engine.Config{
		Journal: st,
		Resources: engine.Functions{
			task.StepFunctionPlaceholder:     r.invoke,
			task.ApprovalFunctionPlaceholder: r.invoke,
		},
		Definitions:        definitions{dir: filepath.Join(dir, "definitions")},
		Children:           children{r},
		OnEvent:            cfg.OnEvent,
		Clock:              cfg.Clock,
		MaxDefinitionBytes: cfg.MaxDefinitionBytes,
	})
	return r, nil
}

// Close closes the store.
func (r *Runner) Close() error { return r.Store.Close() }

// invoke adapts the step function to the engine's Lambda handlers.
func (r *Runner) invoke(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var req task.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode task payload: %w", err)
	}
	resp, err := r.handler.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// definitions loads the state machines saved by Run. They are decoded
// only: the engine validates them, within its own size limit.
type definitions struct{ dir string }

func (d definitions) Definition(_ context.Context, name string) (*asl.StateMachine, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, name+".asl.json"))
	if err != nil {
		return nil, fmt.Errorf("load definition of %q: %w", name, err)
	}
	var sm asl.StateMachine
	if err := json.Unmarshal(b, &sm); err != nil {
		return nil, fmt.Errorf("load definition of %q: %w", name, err)
	}
	return &sm, nil
}

// Outcome is where a run stands after Run, Resume or a decision.
type Outcome struct {
	RunID    string
	Pipeline string
	Status   store.RunStatus
	Reason   string
	Output   json.RawMessage
	Waiting  []store.Approval // the approvals a waiting run needs
}

// NewRunID returns a random run ID.
func NewRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// Compile compiles a pipeline file and saves its definition for later
// resumes. Diagnostics with errors are returned as an error.
func (r *Runner) Compile(path string) (*asl.StateMachine, string, compiler.Diagnostics, error) {
	return r.compile(path, map[string]bool{})
}

// compile compiles a pipeline and, from the same directory, the
// sub-pipelines it runs (seen stops cycles).
func (r *Runner) compile(path string, seen map[string]bool) (*asl.StateMachine, string, compiler.Diagnostics, error) {
	f, sm, ds, err := gate.CompileFile(path, executor.Defaults{})
	if err != nil {
		return nil, "", nil, err
	}
	if sm == nil {
		return nil, "", ds, ds.Err()
	}
	def, err := compiler.Marshal(sm)
	if err != nil {
		return nil, "", ds, err
	}
	name := f.Pipeline.Name
	seen[name] = true
	if err := r.compileChildren(filepath.Dir(path), f.Pipeline, seen); err != nil {
		return nil, "", ds, err
	}
	if err := os.WriteFile(filepath.Join(r.dir, "definitions", name+".asl.json"), def, 0o644); err != nil {
		return nil, "", ds, fmt.Errorf("save definition: %w", err)
	}
	if err := r.saveMeta(meta{Name: name, Durable: f.Pipeline.Durable}); err != nil {
		return nil, "", ds, fmt.Errorf("save definition: %w", err)
	}
	// Run the parsed copy: exactly what another process will load.
	parsed, err := asl.Parse(def)
	if err != nil {
		return nil, "", ds, fmt.Errorf("reload definition: %w", err)
	}
	return parsed, name, ds, nil
}

// Run starts a run of the pipeline in path with trigger as its event and
// drives it until it ends or waits for an approval.
func (r *Runner) Run(ctx context.Context, path string, trigger json.RawMessage, runID string) (Outcome, error) {
	sm, name, _, err := r.Compile(path)
	if err != nil {
		return Outcome{}, err
	}
	return r.Start(ctx, sm, name, trigger, runID)
}

// Start runs a compiled state machine, saved under name by Compile.
func (r *Runner) Start(ctx context.Context, sm *asl.StateMachine, name string, trigger json.RawMessage, runID string) (Outcome, error) {
	if runID == "" {
		runID = NewRunID()
	}
	if len(trigger) == 0 {
		trigger = json.RawMessage(`{}`)
	}
	input, _ := json.Marshal(map[string]json.RawMessage{"trigger": trigger})
	r.track(runID)
	defer r.untrack(runID)
	res, err := r.engine.Start(ctx, runID, sm, input, engine.WithStateMachine(name))
	if err != nil {
		return Outcome{}, fmt.Errorf("run %s: %w", name, err)
	}
	return r.settle(ctx, name, res)
}

// Resume continues a run from its last checkpoint.
func (r *Runner) Resume(ctx context.Context, runID string) (Outcome, error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("resume %s: %w", runID, err)
	}
	sm, err := definitions{filepath.Join(r.dir, "definitions")}.Definition(ctx, run.Pipeline)
	if err != nil {
		return Outcome{}, err
	}
	r.track(runID)
	defer r.untrack(runID)
	res, err := r.engine.Resume(ctx, runID, sm)
	if err != nil {
		return Outcome{}, fmt.Errorf("resume %s: %w", runID, err)
	}
	return r.settle(ctx, run.Pipeline, res)
}

// ErrNoApproval: the run has no pending approval for that step.
var ErrNoApproval = errors.New("no pending approval")

// Decide approves or rejects a run's pending human step and drives the
// run on.
func (r *Runner) Decide(ctx context.Context, runID, step, decision, by string) (Outcome, error) {
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("decide: %w", err)
	}
	approvals, err := r.Store.RunApprovals(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	for _, a := range approvals {
		if a.Step != step || a.Decision != store.DecisionPending {
			continue
		}
		d := store.DecisionApproved
		if decision == task.Reject {
			d = store.DecisionRejected
		}
		if _, err := r.Store.DecideApproval(ctx, a.ID, d, by, r.now()); err != nil {
			return Outcome{}, fmt.Errorf("decide step %q of run %s: %w", step, runID, err)
		}
		out, _ := json.Marshal(task.Decision{Decision: decision, By: by})
		r.track(runID)
		defer r.untrack(runID)
		res, err := r.engine.SendTaskSuccess(ctx, a.TaskToken, out)
		if err != nil {
			return Outcome{}, fmt.Errorf("continue run %s: %w", runID, err)
		}
		return r.settle(ctx, run.Pipeline, res)
	}
	return Outcome{}, fmt.Errorf("run %s step %q: %w", runID, step, ErrNoApproval)
}

// settle records what the engine reports as the run's status.
func (r *Runner) settle(ctx context.Context, pipelineName string, res engine.Result) (Outcome, error) {
	o := Outcome{RunID: res.RunID, Pipeline: pipelineName}
	switch res.Status {
	case engine.StatusSucceeded:
		var out struct {
			Status string          `json:"status"`
			Reason string          `json:"reason"`
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(res.Output, &out)
		o.Status = store.RunStatus(out.Status)
		if o.Status != store.RunStopped {
			o.Status = store.RunCompleted
		}
		o.Reason, o.Output = out.Reason, out.Output
	case engine.StatusFailed, engine.StatusTimedOut:
		switch res.Error {
		case task.ErrorEscalated:
			o.Status = store.RunEscalated
		case task.ErrorAborted:
			o.Status = store.RunAborted
		default:
			o.Status = store.RunFailed
		}
		o.Reason = res.Cause
		if !strings.HasPrefix(res.Error, "Stepline.") {
			o.Reason = res.Error + ": " + res.Cause
		}
	case engine.StatusWaiting:
		o.Status = store.RunWaiting
		approvals, err := r.Store.RunApprovals(ctx, res.RunID)
		if err != nil {
			return o, err
		}
		for _, a := range approvals {
			if a.Decision == store.DecisionPending {
				o.Waiting = append(o.Waiting, a)
			}
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
	if err := r.Store.UpdateRun(ctx, res.RunID, u); err != nil && !errors.Is(err, store.ErrNotFound) {
		return o, fmt.Errorf("record run status: %w", err)
	}
	return o, nil
}

// History returns a run's execution history.
func (r *Runner) History(ctx context.Context, runID string) ([]store.HistoryEvent, error) {
	return r.engine.History(ctx, runID)
}

// Complete completes a waiting task with a human decision (its approval is
// already decided in the store) and drives the run on.
func (r *Runner) Complete(ctx context.Context, taskToken string, d task.Decision) (Outcome, error) {
	out, _ := json.Marshal(d)
	res, err := r.engine.SendTaskSuccess(ctx, taskToken, out)
	if err != nil {
		return Outcome{}, fmt.Errorf("complete task: %w", err)
	}
	run, err := r.Store.GetRun(ctx, res.RunID)
	if err != nil {
		return Outcome{}, err
	}
	return r.settle(ctx, run.Pipeline, res)
}
