package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// stateFlags are the flags every command over the local state shares.
type stateFlags struct {
	dir string
	db  string
	// project is the project the runner compiles pipelines in (run and
	// serve --config); nil: each file's own.
	project *project.Project
}

func (s *stateFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.dir, "dir", local.DefaultDir, "state directory (runs database and compiled definitions)")
	fs.StringVar(&s.db, "db", "", "SQLite database file (default <dir>/stepline.db)")
}

// agentProgress says what an agent step's tool loop did: "agent
// sre-investigator: 5 model calls, 6 tool calls" (and the Tasks of a step
// that outlives one invocation).
func agentProgress(a *task.AgentSummary) string {
	if a == nil {
		return ""
	}
	s := fmt.Sprintf("agent %s: %s, %s", a.Agent, plural(a.Iterations, "model call"), plural(a.ToolCalls, "tool call"))
	if a.Tasks > 0 {
		s += fmt.Sprintf(" in %s", plural(a.Tasks, "Task"))
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// oneLine is s on one line of at most n runes, its control characters
// (a terminal's escape sequences among them: model replies and errors are
// untrusted) dropped.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(printable(s)), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// openRunner opens the local state with the step functions wired: the
// live one, and the one of scripted runs.
func openRunner(ctx context.Context, e env, sf stateFlags, prog *progress) (*runner, error) {
	dir := sf.dir
	if dir == "" {
		dir = local.DefaultDir
	}
	regs := &registries{}
	cfg := local.Config{Dir: dir, DBPath: sf.db, Handler: stepHandler(e, dir, nil, regs), Scripted: scriptedHandler(e, dir, nil),
		Notifications: stepNotifications, Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Project: sf.project,
		BuildID: compilerBuild()}
	if prog != nil {
		cfg.OnEvent = prog.event
	}
	r, err := local.Open(ctx, cfg)
	if err != nil {
		regs.Close()
		return nil, err
	}
	return &runner{Runner: r, regs: regs, dir: dir}, nil
}

// cmdRun compiles and runs a pipeline locally.
func cmdRun(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	eventPath := fs.String("event", "", "JSON file with the event that starts the run")
	responsesPath := fs.String("responses", "", "YAML file of scripted replies that stand in for the executors")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	by := fs.String("by", "", "name recorded for interactive approvals (default $USER)")
	exitCode := exitCodeFlag(fs)
	config := configFlag(fs)
	return func(ctx context.Context, e env, args []string) int {
		return runPipeline(ctx, e, args[0], sf, runFlags{event: *eventPath, responses: *responsesPath, by: *by, config: *config,
			json: *asJSON, exitCode: *exitCode})
	}
}

// runFlags are run's flags but the state's.
type runFlags struct {
	event, responses, by, config string
	json, exitCode               bool
}

// exitCodeFlag registers --exit-code on a command that drives a run.
func exitCodeFlag(fs *pflag.FlagSet) *bool {
	return fs.Bool("exit-code", false, fmt.Sprintf("exit %d when the run ends failed, escalated or aborted (for CI; without it such a run exits 0)", exitRunNotOK))
}

func runPipeline(ctx context.Context, e env, path string, sf stateFlags, f runFlags) int {
	if e.startHeap != nil {
		e.startHeap()
	}
	if f.config != "" {
		p, err := project.Load(f.config)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		sf.project = p
	}
	var trigger json.RawMessage
	if f.event != "" {
		b, err := readEvent(f.event)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: read event: %v\n", err)
			return exitFailed
		}
		if trigger, err = eventTrigger(b); err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", f.event, err)
			return exitFailed
		}
	}
	var opts []local.RunOption
	if f.responses != "" {
		replies, err := executor.LoadResponses(f.responses)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		opts = append(opts, local.WithReadResponses(f.responses, replies))
	}
	var prog *progress
	if !f.json {
		prog = newProgress(e)
		defer prog.stop()
	}
	r, err := openRunner(ctx, e, sf, prog)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	sweep(ctx, e, r.Runner)
	if !f.json {
		fmt.Fprintf(e.stdout, "running %s\n", path)
	}
	// r.Run, with the scheduler set between the compile and the run.
	sm, name, _, err := r.Compile(path)
	var o local.Outcome
	if err == nil {
		if e.oneProcessor != nil && oneStateAtATime(sm) {
			e.oneProcessor()
		}
		o, err = r.Start(ctx, sm, name, trigger, "", opts...)
	}
	prog.stop() // the live line, before approvals are asked for
	if ds, ok := compiler.AsError(err); ok {
		fmt.Fprint(e.stderr, ds.String()) // every error, as validate prints them
		return exitFailed
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%v\n", err)
		return exitFailed
	}
	o, err = answerApprovals(ctx, e, r.Runner, o, f.by, !f.json)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	return report(ctx, e, r, o, f.json, f.exitCode)
}

// oneStateAtATime reports whether a run of sm executes one state at a
// time: it has no Parallel or Map state and starts no other execution (a
// sub-pipeline's machine may have either).
func oneStateAtATime(sm *asl.StateMachine) bool {
	// A machine without Parallel or Map states has no nested ones: its
	// top-level states are all it runs.
	for _, st := range sm.States.All() {
		switch st := st.(type) {
		case *asl.Parallel, *asl.Map:
			return false
		case *asl.Task:
			if strings.Contains(st.Resource, ":states:startExecution") {
				return false
			}
		}
	}
	return true
}

// eventTrigger turns an event file into the run's trigger: a file with a
// top-level "trigger" is used as it is, any other JSON object is the
// trigger itself.
func eventTrigger(b []byte) (json.RawMessage, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("an event must be a JSON object: %v", err)
	}
	if err := inbound.CheckNumbers(b); err != nil {
		return nil, err
	}
	if t, ok := v["trigger"]; ok {
		return t, nil
	}
	return b, nil
}

// readEvent reads an event file within inbound.MaxBodyBytes, the bound of
// a webhook's body: an event a webhook could not bring is refused before
// it is read whole.
func readEvent(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, inbound.MaxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > inbound.MaxBodyBytes {
		return nil, fmt.Errorf("%s is more than %d bytes, the limit of an event (a webhook body's)", path, inbound.MaxBodyBytes)
	}
	return b, nil
}

// answerApprovals decides the approvals a run waits for: from the run's
// scripted replies when they hold a decision, else by asking on the
// terminal. While it asks, the run stays attached: when the approval
// expires first, the step times out as its timeout_seconds says
// (Runner.Expire) and the run goes on.
func answerApprovals(ctx context.Context, e env, r *local.Runner, o local.Outcome, by string, interactive bool) (local.Outcome, error) {
	var lines *lineReader
	for o.Status == store.RunWaiting && len(o.Waiting) > 0 {
		a := o.Waiting[0] // the run's own, or a sub-pipeline run's (a.RunID)
		responses, err := r.Responses(ctx, o.RunID)
		if err != nil {
			return o, err
		}
		decision, who, ok := "", by, false
		if responses != nil {
			if d, err := responses.Decision(a.Step); err == nil {
				decision, ok = task.Reject, true
				if d.Approved {
					decision = task.Approve
				}
				if d.By != "" {
					who = d.By
				}
			}
		}
		if !ok && interactive && e.interactive() {
			if lines == nil {
				lines = newLineReader(e.stdin)
			}
			var expired bool
			decision, ok, expired = ask(ctx, e, lines, a, firstExpiry(o.Waiting))
			if expired {
				next, fired, err := r.Expire(ctx, o.RunID)
				if err != nil || !fired {
					return o, err
				}
				fmt.Fprintf(e.stdout, "\n  %-28s timed out waiting for approval\n", a.Step)
				o = next
				continue
			}
		}
		if !ok {
			return o, nil
		}
		if who == "" {
			who = e.getenv("USER")
		}
		if who == "" {
			who = "local operator"
		}
		if interactive {
			fmt.Fprintf(e.stdout, "  %-28s %s by %s\n", a.Step, decision+"d", who)
		}
		d, err := r.Decide(ctx, a.RunID, a.Step, decision, who)
		if err != nil {
			return d, err
		}
		o = following(o, a.RunID, d)
	}
	return o, nil
}

// following is where run o stands after a decision in run decided (o
// itself, or a sub-pipeline's run o waits for) that left it at d: d when
// decided is o; else o as the decision's end of the child continued it
// (d.Parent, …); else, the child still waiting, o waiting for the child's
// approvals in place of those decided.
func following(o local.Outcome, decided string, d local.Outcome) local.Outcome {
	if decided == o.RunID {
		return d
	}
	for p := d.Parent; p != nil; p = p.Parent {
		if p.RunID == o.RunID {
			return *p
		}
	}
	waiting := slices.DeleteFunc(slices.Clone(o.Waiting), func(a store.Approval) bool { return a.RunID == decided })
	if d.Status == store.RunWaiting {
		waiting = append(waiting, d.Waiting...)
	}
	o.Waiting = waiting
	return o
}

// firstExpiry is the earliest expiry of approvals.
func firstExpiry(approvals []store.Approval) time.Time {
	var t time.Time
	for _, a := range approvals {
		if t.IsZero() || a.ExpiresAt.Before(t) {
			t = a.ExpiresAt
		}
	}
	return t
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lineReader reads lines of input on a goroutine of its own, so that a
// question can stop waiting for an answer.
type lineReader struct {
	lines chan string
}

func newLineReader(in io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string)}
	go func() {
		defer close(lr.lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
	}()
	return lr
}

// ask asks on the terminal whether to approve a, until deadline: expired
// reports that it passed first.
func ask(ctx context.Context, e env, lines *lineReader, a store.Approval, deadline time.Time) (decision string, ok, expired bool) {
	fmt.Fprintf(e.stdout, "\napproval needed for step %q (times out at %s):\n%s\napprove? [y/n] ",
		a.Step, deadline.Local().Format("15:04:05"), a.Message)
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", false, false
		case <-timer.C:
			return "", false, true
		case line, open := <-lines.lines:
			if !open {
				return "", false, false
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				return task.Approve, true, false
			case "n", "no":
				return task.Reject, true, false
			}
			fmt.Fprint(e.stdout, "approve? [y/n] ")
		}
	}
}

// runReport is the --json form of a run's outcome.
type runReport struct {
	RunID    string       `json:"run_id"`
	Pipeline string       `json:"pipeline"`
	Status   string       `json:"status"`
	Reason   string       `json:"reason,omitempty"`
	Steps    []stepReport `json:"steps"`
	Waiting  []string     `json:"waiting_for,omitempty"`
}

type stepReport struct {
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	Confidence *float64        `json:"confidence"`
	Attempts   int             `json:"attempts"`
	Output     json.RawMessage `json:"output,omitempty"`
	// An agent step's last record: the agent, its version, the loop's
	// iterations and its trace (read from the artifact store when the
	// record holds only its reference).
	Agent        string          `json:"agent,omitempty"`
	AgentVersion string          `json:"agent_version,omitempty"`
	Iterations   int             `json:"iterations,omitempty"`
	Trace        json.RawMessage `json:"trace,omitempty"`
	TraceRef     string          `json:"trace_ref,omitempty"`
	// TrustReport is how the gate decided the step (its last record's):
	// the signals, the combined trust, the policy and the decision.
	TrustReport *store.TrustReport `json:"trust_report,omitempty"`
}

// buildReport reads the run's step records: one entry per step, its last
// record's outcome and its attempt count, the attempts recorded (the
// record a failure Task adds after the last attempt, flagged
// failure_outcome, is the step's outcome, not another attempt).
func buildReport(ctx context.Context, r *runner, o local.Outcome) (runReport, error) {
	rep := runReport{RunID: o.RunID, Pipeline: o.Pipeline, Status: string(o.Status), Reason: o.Reason, Steps: []stepReport{}}
	for _, a := range o.Waiting {
		rep.Waiting = append(rep.Waiting, a.Step)
	}
	steps, err := r.Store.ListSteps(ctx, o.RunID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rep, err
	}
	index := map[string]int{}
	for _, s := range steps {
		name := reportName(s.Name)
		i, ok := index[name]
		if !ok {
			i = len(rep.Steps)
			index[name] = i
			rep.Steps = append(rep.Steps, stepReport{Name: name})
		}
		sr := &rep.Steps[i]
		if !slices.Contains(s.Flags, steprun.FlagFailureOutcome) {
			sr.Attempts = max(sr.Attempts, s.Attempt)
		}
		sr.Status = string(s.Status)
		sr.Confidence = s.EffectiveConfidence
		sr.Output = s.Output
		sr.Agent, sr.AgentVersion, sr.Iterations, sr.TraceRef = s.Agent, s.AgentVersion, s.Iterations, s.TraceRef
		sr.TrustReport = s.Trust
		sr.Trace = traceOf(ctx, r, s)
	}
	return rep, nil
}

// traceOf is a step record's trace: its own, or the one its reference
// points to in the run's artifact directory (nil when it cannot be read).
func traceOf(ctx context.Context, r *runner, s store.StepRecord) json.RawMessage {
	if len(s.Trace) > 0 || s.TraceRef == "" {
		return s.Trace
	}
	b, err := steprun.Dir{Root: filepath.Join(r.dir, "artifacts")}.Get(ctx, s.TraceRef)
	if err != nil || !json.Valid([]byte(b)) {
		return nil
	}
	return json.RawMessage(b)
}

// reportName is how a step appears in the report: a parallel branch,
// recorded as "<group>/<branch>", under its own name; a fan-out item as
// "<fan_out>/<i>".
func reportName(record string) string {
	_, branch, ok := strings.Cut(record, "/")
	if !ok || strings.Trim(branch, "0123456789") == "" {
		return record
	}
	return branch
}

// report prints a run's outcome. Its exit code is 0, or with exitCode
// exitRunNotOK when the run ended failed, escalated or aborted.
func report(ctx context.Context, e env, r *runner, o local.Outcome, asJSON, exitCode bool) int {
	rep, err := buildReport(ctx, r, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	code := exitOK
	if exitCode && runNotOK(o.Status) {
		code = exitRunNotOK
	}
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return code
	}
	what := "run"
	for at := &o; at != nil; at = at.Parent {
		// A sub-pipeline's run whose end continued its parent: the
		// parent's status next (and its parent's).
		fmt.Fprintf(e.stdout, "%s %s: %s", what, at.RunID, e.palette().status(string(at.Status), 0))
		if at.Reason != "" {
			fmt.Fprintf(e.stdout, " — %s", oneLine(at.Reason, 120))
		}
		fmt.Fprintln(e.stdout)
		printWaiting(e.stdout, at.Waiting)
		what = "parent run"
	}
	return code
}

// printWaiting prints how to decide each approval a run waits for, in the
// run it belongs to (a sub-pipeline's own).
func printWaiting(w io.Writer, approvals []store.Approval) {
	for _, a := range approvals {
		if a.Decision != store.DecisionPending {
			fmt.Fprintf(w, "waiting for %q, %s by %s but not taken by the run: stepline approve %s %s sends it again\n", a.Step, a.Decision, a.DecidedBy, a.RunID, a.Step)
			continue
		}
		fmt.Fprintf(w, "waiting for approval of %q: stepline approve %s %s (or reject)\n", a.Step, a.RunID, a.Step)
	}
}

// runNotOK reports whether a run that ended in status s makes
// --exit-code exit non-zero.
func runNotOK(s store.RunStatus) bool {
	return s == store.RunFailed || s == store.RunEscalated || s == store.RunAborted
}

// sweep deals with runs a killed process left running (see local.Sweep)
// and with human steps whose approval expired while no process ran (see
// local.ExpireApprovals), and says what it did on stderr.
func sweep(ctx context.Context, e env, r *local.Runner) {
	swept, err := r.Sweep(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
	}
	for _, s := range swept {
		switch s.Action {
		case "resumed":
			fmt.Fprintf(e.stderr, "resumed interrupted run %s (durable): %s\n", s.RunID, s.Outcome.Status)
		default:
			fmt.Fprintf(e.stderr, "run %s %s: %s\n", s.RunID, s.Action, s.Reason)
		}
	}
	expired, _, err := r.ExpireApprovals(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
	}
	for _, o := range expired {
		fmt.Fprintf(e.stderr, "run %s: an approval expired; the run is %s", o.RunID, o.Status)
		if o.Reason != "" {
			fmt.Fprintf(e.stderr, " — %s", oneLine(o.Reason, 120))
		}
		fmt.Fprintln(e.stderr)
	}
}
