package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/local"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// runInfo is one run as `stepline runs --json` prints it.
type runInfo struct {
	RunID       string          `json:"run_id"`
	Pipeline    string          `json:"pipeline"`
	Status      store.RunStatus `json:"status"`
	Reason      string          `json:"reason,omitempty"`
	Stage       string          `json:"stage,omitempty"`
	Source      string          `json:"source,omitempty"`
	Team        string          `json:"team,omitempty"`
	ParentRunID string          `json:"parent_run_id,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	Usage       store.Usage     `json:"usage"`
}

// cmdRuns lists runs, newest first.
func cmdRuns(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	pipelineName := fs.String("pipeline", "", "only runs of this pipeline")
	status := fs.String("status", "", "only runs with this status ("+statusList()+")")
	limit := fs.IntP("limit", "n", 50, "at most this many runs")
	asJSON := fs.Bool("json", false, "print the runs as a JSON array")
	return func(ctx context.Context, e env, _ []string) int {
		if *status != "" && !store.RunStatus(*status).Valid() {
			return e.usageError("--status %q: want one of %s", *status, statusList())
		}
		if *limit < 1 {
			return e.usageError("--limit %d: want at least 1", *limit)
		}
		r, err := openRunner(ctx, e, sf, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		defer r.Close()
		runs, err := r.Store.ListRuns(ctx, store.RunFilter{Pipeline: *pipelineName, Status: store.RunStatus(*status), Limit: *limit})
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		if *asJSON {
			infos := make([]runInfo, len(runs))
			for i, run := range runs {
				infos[i] = runInfo{RunID: run.ID, Pipeline: run.Pipeline, Status: run.Status, Reason: run.Reason, Stage: run.Stage,
					Source: run.Source, Team: run.Team, ParentRunID: run.ParentRunID, StartedAt: run.StartedAt, CompletedAt: run.CompletedAt, Usage: run.Usage}
			}
			b, _ := json.MarshalIndent(infos, "", "  ")
			fmt.Fprintf(e.stdout, "%s\n", b)
			return exitOK
		}
		colour := e.palette()
		for _, run := range runs {
			fmt.Fprintf(e.stdout, "%s  %-24s %s %s  %s\n", run.ID, run.Pipeline, colour.status(string(run.Status), 11), run.StartedAt.Local().Format("2006-01-02 15:04:05"), oneLine(run.Reason, 60))
		}
		return exitOK
	}
}

// statusList is the run statuses as "running, waiting, …".
func statusList() string {
	var b strings.Builder
	for i, s := range store.RunStatuses() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// cmdShow prints a run: its status, steps and execution history.
func cmdShow(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print the run, its steps, history and feedback as one JSON object")
	return func(ctx context.Context, e env, args []string) int {
		return show(ctx, e, sf, args[0], *asJSON)
	}
}

func show(ctx context.Context, e env, sf stateFlags, runID string, asJSON bool) int {
	r, err := openRunner(ctx, e, sf, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	defer r.Close()
	run, steps, err := r.Store.GetRunWithSteps(ctx, runID)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: run %s: %v\n", runID, err)
		return exitFailed
	}
	history, err := r.History(ctx, run.ID)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	runFeedback, stepFeedback, err := runFeedbacks(ctx, r, run.ID, steps)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return exitFailed
	}
	if asJSON {
		for i := range steps {
			steps[i].Trace = traceOf(ctx, r, steps[i])
		}
		b, _ := json.MarshalIndent(map[string]any{"run": run, "steps": steps, "history": history,
			"feedback": runFeedback, "step_feedback": stepFeedback}, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return exitOK
	}
	colour := e.palette()
	fmt.Fprintf(e.stdout, "run %s  pipeline %s  status %s\n", run.ID, run.Pipeline, colour.status(string(run.Status), 0))
	if run.Reason != "" {
		fmt.Fprintf(e.stdout, "reason: %s\n", printable(run.Reason))
	}
	fmt.Fprintf(e.stdout, "tokens: %d in, %d out\n", run.Usage.InputTokens, run.Usage.OutputTokens)
	if run.Status == store.RunWaiting {
		// Its approvals and its sub-pipeline runs' (each decided in its
		// own run).
		waiting, err := r.Waiting(ctx, run.ID)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		printWaiting(e.stdout, waiting)
	}
	if runFeedback != nil {
		fmt.Fprintf(e.stdout, "feedback: %s\n", feedbackText(runFeedback))
	}
	fmt.Fprint(e.stdout, "\nsteps:\n")
	for _, s := range steps {
		conf := "   -"
		if s.EffectiveConfidence != nil {
			conf = fmt.Sprintf("%.2f", *s.EffectiveConfidence)
		}
		fmt.Fprintf(e.stdout, "  %-28s #%d %s %s  %5dms  %s\n", s.Name, s.Attempt, colour.status(string(s.Status), 10), conf, s.DurationMS, oneLine(stepText(s), 60))
		showTrust(e.stdout, s.Trust)
		for _, fl := range s.Flags {
			if rest, ok := strings.CutPrefix(fl, steprun.FlagNotificationMuted+":"); ok {
				action, channel, _ := strings.Cut(rest, ":")
				fmt.Fprintf(e.stdout, "  %-28s    notification %s (%s) muted: stage testing\n", "", action, channel)
			}
		}
		if f := stepFeedback[s.Name]; f != nil && isLast(steps, s) {
			fmt.Fprintf(e.stdout, "  %-28s    feedback %s\n", "", feedbackText(f))
		}
		if s.Agent != "" {
			printTrace(e.stdout, s, traceOf(ctx, r, s))
		}
	}
	fmt.Fprintln(e.stdout, "\nhistory:")
	for _, h := range history {
		fmt.Fprintf(e.stdout, "  %4d %s %-20s %s\n", h.Seq, h.Time.Local().Format("15:04:05.000"), h.Type, h.State)
	}
	return exitOK
}

// stepText is what show prints of a step record on its line: its error,
// else its output's summary, as run prints it when the step ends.
func stepText(s store.StepRecord) string {
	if s.Error != "" {
		return s.Error
	}
	var out struct {
		Summary string `json:"summary"`
	}
	_ = json.Unmarshal(s.Output, &out)
	return out.Summary
}

// responsesFlag is the --responses flag of the commands that drive a
// run on.
func responsesFlag(fs *pflag.FlagSet) *string {
	return fs.String("responses", "", "YAML file of scripted replies the run answers from from now on "+
		"(default: the file the run was started with, for a run started with --responses)")
}

// runOptions turns --responses into the options of the drive, checking
// the file first.
func runOptions(e env, path string) ([]local.RunOption, bool) {
	if path == "" {
		return nil, true
	}
	replies, err := executor.LoadResponses(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepline: %v\n", err)
		return nil, false
	}
	return []local.RunOption{local.WithReadResponses(path, replies)}, true
}

// driveError prints why a run could not be driven on, with the way out
// when there is one.
func driveError(e env, err error) {
	fmt.Fprintf(e.stderr, "stepline: %v\n", err)
	var replies *local.RepliesError
	if errors.As(err, &replies) {
		fmt.Fprintln(e.stderr, "stepline: the run stays as it was; give its replies with --responses FILE to go on offline")
	}
}

// cmdResume continues a run from its last checkpoint.
func cmdResume(c *cobra.Command) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	responses := responsesFlag(fs)
	exitCode := exitCodeFlag(fs)
	return func(ctx context.Context, e env, args []string) int {
		if e.startHeap != nil {
			e.startHeap()
		}
		opts, ok := runOptions(e, *responses)
		if !ok {
			return exitFailed
		}
		prog := newProgress(e)
		defer prog.stop()
		r, err := openRunner(ctx, e, sf, prog)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		defer r.Close()
		o, err := r.Resume(ctx, args[0], opts...)
		prog.stop()
		if err != nil {
			driveError(e, err)
			return exitFailed
		}
		return report(ctx, e, r, o, false, *exitCode)
	}
}

func cmdApprove(c *cobra.Command) action { return decide(c, task.Approve) }
func cmdReject(c *cobra.Command) action  { return decide(c, task.Reject) }

// decide approves or rejects a waiting human step and drives the run on.
func decide(c *cobra.Command, decision string) action {
	fs := c.Flags()
	var sf stateFlags
	sf.register(fs)
	by := fs.String("by", "", "who decides (default $USER)")
	responses := responsesFlag(fs)
	exitCode := exitCodeFlag(fs)
	return func(ctx context.Context, e env, args []string) int {
		if e.startHeap != nil {
			e.startHeap()
		}
		opts, ok := runOptions(e, *responses)
		if !ok {
			return exitFailed
		}
		who := *by
		if who == "" {
			who = e.getenv("USER")
		}
		if who == "" {
			who = "local operator"
		}
		prog := newProgress(e)
		defer prog.stop()
		r, err := openRunner(ctx, e, sf, prog)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			return exitFailed
		}
		defer r.Close()
		o, err := r.Decide(ctx, args[0], args[1], decision, who, opts...)
		prog.stop()
		if errors.Is(err, local.ErrDecided) {
			// Decided the other way before: the run went on with that.
			fmt.Fprintf(e.stderr, "stepline: %v\n", err)
			report(ctx, e, r, o, false, *exitCode)
			return exitFailed
		}
		if err != nil {
			driveError(e, err)
			return exitFailed
		}
		return report(ctx, e, r, o, false, *exitCode)
	}
}

// printTrace prints an agent step's agent and its trace, one event a
// line: the iteration, the type, the tool and what it carries, cut to one
// line.
func printTrace(w io.Writer, s store.StepRecord, trace json.RawMessage) {
	fmt.Fprintf(w, "      agent %s (version %s), %d iterations, %d in / %d out tokens\n", s.Agent, s.AgentVersion, s.Iterations, s.InputTokens, s.OutputTokens)
	var events []agent.Event
	if err := json.Unmarshal(trace, &events); err != nil {
		if s.TraceRef != "" {
			fmt.Fprintf(w, "      trace: %s (not readable here)\n", s.TraceRef)
		}
		return
	}
	for _, ev := range events {
		var what string
		switch ev.Type {
		case agent.EventToolCall:
			what = ev.Name + " " + string(ev.Arguments)
		case agent.EventToolResult:
			what = ev.Name + " → " + ev.Content
			if ev.IsError {
				what = ev.Name + " → error: " + ev.Content
			}
			if ev.Truncated {
				what += fmt.Sprintf(" (cut, %d chars)", ev.Chars)
			}
		case agent.EventToolDenied:
			what = ev.Name + " — " + ev.Reason
		default:
			what = ev.Content
		}
		fmt.Fprintf(w, "      [%d] %-11s %s\n", ev.Iteration, ev.Type, oneLine(what, 100))
	}
}

// runFeedbacks reads a run's feedback and its steps' (by step name).
func runFeedbacks(ctx context.Context, r *runner, runID string, steps []store.StepRecord) (*store.Feedback, map[string]*store.Feedback, error) {
	rf, err := r.Store.GetRunFeedback(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	sf := map[string]*store.Feedback{}
	for _, s := range steps {
		if _, seen := sf[s.Name]; seen {
			continue
		}
		f, err := r.Store.GetStepFeedback(ctx, runID, s.Name)
		if err != nil {
			return nil, nil, err
		}
		sf[s.Name] = f
	}
	for k, f := range sf {
		if f == nil {
			delete(sf, k)
		}
	}
	return rf, sf, nil
}

// isLast reports whether s is the last record of its step (its latest
// attempt), under which show prints the step's feedback.
func isLast(steps []store.StepRecord, s store.StepRecord) bool {
	for _, o := range steps {
		if o.Name == s.Name && o.Attempt > s.Attempt {
			return false
		}
	}
	return true
}
