package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// An agent project: an investigator over two MCP servers that scripted
// runs never reach.
var agentProjectFiles = map[string]string{
	"stepline.yaml": `mcp_servers:
  grafana: {url: "https://grafana.invalid/mcp"}
  runbooks: {url: "https://runbooks.invalid/mcp"}
tool_policy:
  default: allow
  rules:
    - deny: {server: runbooks, tool: "delete_*"}
      reason: read only
`,
	"agents/investigator/agent.yaml": "name: investigator\nmodel: anthropic/claude-sonnet-4-6\ntools: [grafana, runbooks]\n",
	"agents/investigator/soul.md":    "You investigate incidents.\n",
}

// agentPipeline runs the investigator in a step with timeout_seconds
// timeout; retry: attempts 2 retries a Task once.
func agentPipeline(timeout int) string {
	return `name: investigation
steps:
  - name: investigate
    executor: anthropic
    executor_config: {agent: investigator}
    prompt_template: "Why is {{ labels.service }} failing?"
    timeout_seconds: ` + strconv.Itoa(timeout) + `
    retry: {attempts: 2, backoff: fixed, delay_seconds: 1}
  - name: report
    executor: scripted
    prompt_template: "Report: {{ steps.investigate.summary }}"
`
}

// A tool loop of seven model calls: five turns with tool calls (one
// denied by the policy), a reply that is not valid output (re-asked) and
// the answer.
const agentLoopResponses = `
investigate:
  - {text: "error rate first", tool_calls: [{name: grafana.query, arguments: {expr: errors}}], input_tokens: 100, output_tokens: 10}
  - {tool_calls: [{name: grafana.query, arguments: {expr: latency}}, {name: grafana.logs, arguments: {q: error}}], input_tokens: 200, output_tokens: 20}
  - {tool_calls: [{name: runbooks.delete_page, arguments: {id: 1}}], input_tokens: 300, output_tokens: 30}
  - {tool_calls: [{name: runbooks.search, arguments: {q: pool}}], input_tokens: 400, output_tokens: 40}
  - {tool_calls: [{name: runbooks.get, arguments: {id: RB-1}}], input_tokens: 500, output_tokens: 50}
  - {reply: 'the pool is exhausted', input_tokens: 600, output_tokens: 60}
  - {reply: '{"confidence": 0.84, "summary": "the pool is exhausted", "next_step_context": "restore the pool"}', input_tokens: 700, output_tokens: 70}
tool_results:
  grafana.query: ['{"errors": 0.08}', '{"p99": 3.1}']
  grafana.logs: ["pool exhausted: 10/10 connections in use"]
  runbooks.search: ['[{"id": "RB-1"}]']
  runbooks.get: ["RB-1: restore DB_POOL_MAX, restart"]
  runbooks.delete_page: ["deleted"]
report: ['{"confidence": 0.9, "summary": "reported", "next_step_context": ""}']
`

// agentRun is the outcome of one run of an agent pipeline.
type agentRun struct {
	outcome Outcome
	steps   []store.StepRecord
	history []store.HistoryEvent
	usage   store.Usage
}

// agentSetup adjusts the step function of runAgent.
type agentSetup struct {
	budget  time.Duration                 // AgentInvocationBudget
	perCall time.Duration                 // what each model call moves the step function's clock on
	wrap    func(StepHandler) StepHandler // around the step function
}

// runAgent writes the agent project and the pipeline to a directory,
// runs it with scripted replies in the engine and returns what it did.
func runAgent(t *testing.T, pipelineYAML string, s agentSetup) agentRun {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"pipelines/p.yaml": pipelineYAML}
	for k, v := range agentProjectFiles {
		files[k] = v
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	responses, err := executor.ParseResponses("responses.yaml", []byte(agentLoopResponses))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	steps := &stepClock{now: clock.now}
	reg := executor.NewRegistry(executor.Deps{Responses: responses})
	ctx := context.Background()
	r, err := Open(ctx, Config{
		Dir:   filepath.Join(dir, "state"),
		Clock: clock,
		Handler: func(st *sqlite.Store) StepHandler {
			h := &steprun.Handler{Store: st, Executors: reg, Agents: slowAgents{reg, steps, s.perCall},
				Artifacts: steprun.Dir{Root: filepath.Join(dir, "state", "artifacts")}, AgentInvocationBudget: s.budget, Now: steps.Now}
			if s.wrap != nil {
				return s.wrap(h)
			}
			return h
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o, err := r.Run(ctx, filepath.Join(dir, "pipelines", "p.yaml"), json.RawMessage(`{"source": "test", "labels": {"service": "checkout-api"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	out := agentRun{outcome: o}
	if out.steps, err = r.Store.ListSteps(ctx, o.RunID); err != nil {
		t.Fatal(err)
	}
	if out.history, err = r.History(ctx, o.RunID); err != nil {
		t.Fatal(err)
	}
	run, err := r.Store.GetRun(ctx, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	out.usage = run.Usage
	return out
}

// stepClock is the step function's clock: model calls move it on.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// slowAgents hands out the registry's scripted agent models, each call
// taking perCall on the step function's clock.
type slowAgents struct {
	reg     *executor.Registry
	clock   *stepClock
	perCall time.Duration
}

func (s slowAgents) Agent(call executor.Call, a *agent.Resolved) (agent.Model, agent.Toolbox, error) {
	m, tb, err := s.reg.Agent(call, a)
	if err != nil {
		return nil, nil, err
	}
	return slowModel{m, s}, tb, nil
}

type slowModel struct {
	inner agent.Model
	s     slowAgents
}

func (m slowModel) Turn(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	r, err := m.inner.Turn(ctx, req)
	m.s.clock.add(m.s.perCall)
	return r, err
}

// record returns the run's last record of step name.
func (a agentRun) record(t *testing.T, name string) store.StepRecord {
	t.Helper()
	var rec *store.StepRecord
	for i := range a.steps {
		if a.steps[i].Name == name {
			rec = &a.steps[i]
		}
	}
	if rec == nil {
		t.Fatalf("no record of %q in %+v", name, a.steps)
	}
	return *rec
}

// tasks counts the Tasks of state that the engine scheduled.
func (a agentRun) tasks(state string) int {
	n := 0
	for _, e := range a.history {
		if e.Type == "TaskScheduled" && e.State == state {
			n++
		}
	}
	return n
}

// entered counts the times the run entered state.
func (a agentRun) entered(state string) int {
	n := 0
	for _, e := range a.history {
		if e.Type == "StateEntered" && e.State == state {
			n++
		}
	}
	return n
}

// trace decodes a record's trace.
func trace(t *testing.T, rec store.StepRecord) []agent.Event {
	t.Helper()
	var out []agent.Event
	if err := json.Unmarshal(rec.Trace, &out); err != nil {
		t.Fatalf("trace %s: %v", rec.Trace, err)
	}
	return out
}

// sameAgentRecord fails when two records of the step say different
// things of it (times and attempt aside).
func sameAgentRecord(t *testing.T, got, want store.StepRecord) {
	t.Helper()
	strip := func(r store.StepRecord) store.StepRecord {
		r.RunID, r.Index, r.StartedAt, r.FinishedAt, r.DurationMS, r.Attempt = "", 0, time.Time{}, time.Time{}, 0, 0
		return r
	}
	if g, w := strip(got), strip(want); !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", " ")
		wb, _ := json.MarshalIndent(w, "", " ")
		t.Errorf("record differs from the single-invocation run's:\n got %s\nwant %s", gb, wb)
	}
}

// TestLongAgentStep runs an agent step whose timeout_seconds is over what
// one invocation allows through the engine: its tool loop is a Task per
// batch of model calls (here the budget lets one call per Task, so seven
// Tasks), and the run, the step's record and its trace are those of the
// same script run in one invocation (timeout_seconds 600).
func TestLongAgentStep(t *testing.T) {
	single := runAgent(t, agentPipeline(600), agentSetup{})
	if single.outcome.Status != store.RunCompleted || single.tasks("investigate") != 1 {
		t.Fatalf("single-invocation run: %s (%s), %d Tasks", single.outcome.Status, single.outcome.Reason, single.tasks("investigate"))
	}
	want := single.record(t, "investigate")
	if want.Iterations != 7 || len(trace(t, want)) == 0 {
		t.Fatalf("single-invocation record: %d model calls, trace %s", want.Iterations, want.Trace)
	}
	cases := []struct {
		name   string
		budget time.Duration
		tasks  int
	}{
		{"one model call per Task", time.Nanosecond, 7},
		{"three model calls per Task", 250 * time.Second, 3}, // calls end at 100, 200, 300 s: the third starts before 250 s
		{"every call in one Task", 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			long := runAgent(t, agentPipeline(3600), agentSetup{budget: c.budget, perCall: 100 * time.Second})
			if long.outcome.Status != store.RunCompleted {
				t.Fatalf("run %s: %s", long.outcome.Status, long.outcome.Reason)
			}
			if n := long.tasks("investigate"); n != c.tasks {
				t.Errorf("%d Tasks of investigate, want %d", n, c.tasks)
			}
			// Two state transitions per Task: the Task and its outcome Choice.
			if n := long.entered("investigate") + long.entered("investigate: outcome"); n != 2*c.tasks {
				t.Errorf("%d transitions through the step, want %d", n, 2*c.tasks)
			}
			rec := long.record(t, "investigate")
			if rec.Attempt != 1 {
				t.Errorf("attempt %d, want 1", rec.Attempt)
			}
			sameAgentRecord(t, rec, want)
			sameAgentRecord(t, long.record(t, "report"), single.record(t, "report"))
			if !reflect.DeepEqual(long.usage, single.usage) || string(long.outcome.Output) != string(single.outcome.Output) {
				t.Errorf("usage %+v output %s, want %+v %s", long.usage, long.outcome.Output, single.usage, single.outcome.Output)
			}
		})
	}
}

// TestLongAgentStepDeadline: the step's deadline (timeout_seconds 1000,
// less 10 s: 990 s after its first Task started) holds across Tasks:
// with each model call taking 400 s, the fourth Task starts past it and
// the step fails with AgentDeadlineExceeded, its record holding the three
// calls made, and the run fails.
func TestLongAgentStepDeadline(t *testing.T) {
	run := runAgent(t, agentPipeline(1000), agentSetup{budget: time.Nanosecond, perCall: 400 * time.Second})
	if run.outcome.Status != store.RunFailed || !strings.Contains(run.outcome.Reason, "deadline") {
		t.Fatalf("run %s: %s", run.outcome.Status, run.outcome.Reason)
	}
	if n := run.tasks("investigate"); n != 4 {
		t.Errorf("%d Tasks of investigate, want 4 (the last one past the deadline)", n)
	}
	var attempt store.StepRecord
	for _, rec := range run.steps {
		if rec.Name == "investigate" && !strings.Contains(strings.Join(rec.Flags, ","), steprun.FlagFailureOutcome) {
			attempt = rec
		}
	}
	if attempt.Status != store.StepFailed || attempt.Iterations != 3 || !strings.Contains(attempt.Error, "deadline") {
		t.Errorf("failed attempt's record: %s, %d model calls, %q", attempt.Status, attempt.Iterations, attempt.Error)
	}
	for _, e := range run.history {
		if e.Type == "TaskFailed" && e.State == "investigate" && !strings.Contains(string(e.Detail), fault.NameAgentDeadlineExceeded) {
			t.Errorf("Task failed with %s, want AgentDeadlineExceeded", e.Detail)
		}
	}
}

// lostAnswers fails the n-th agent_turns Task after it ran, as if its
// answer never reached the state machine: the step's retry: runs it
// again.
type lostAnswers struct {
	inner StepHandler
	n     int

	mu    sync.Mutex
	calls int
}

func (l *lostAnswers) Handle(ctx context.Context, req task.Request) (task.Response, error) {
	resp, err := l.inner.Handle(ctx, req)
	if req.Mode != task.ModeAgentTurns {
		return resp, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls == l.n && err == nil {
		return task.Response{}, fault.Errorf[fault.ExecutorUnavailable]("injected: the answer of Task %d was lost", l.n)
	}
	return resp, err
}

// TestLongAgentStepRetriedTask: a Task in the middle of the loop whose
// answer is lost after it kept its model call is retried (the step's
// retry:), and the retry goes on from what it kept: no model call or
// tool call is made twice, the trace holds each tool call once, and the
// record is the single-invocation run's.
func TestLongAgentStepRetriedTask(t *testing.T) {
	single := runAgent(t, agentPipeline(600), agentSetup{})
	want := single.record(t, "investigate")
	long := runAgent(t, agentPipeline(3600), agentSetup{budget: time.Nanosecond, perCall: 100 * time.Second,
		wrap: func(h StepHandler) StepHandler { return &lostAnswers{inner: h, n: 3} }})
	if long.outcome.Status != store.RunCompleted {
		t.Fatalf("run %s: %s", long.outcome.Status, long.outcome.Reason)
	}
	// Seven Tasks: the retry of the third goes on with the fourth call.
	if n := long.tasks("investigate"); n != 7 {
		t.Errorf("%d Tasks of investigate, want 7", n)
	}
	failed := 0
	for _, e := range long.history {
		if e.Type == "TaskFailed" && e.State == "investigate" && strings.Contains(string(e.Detail), "injected") {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d injected failures in the history, want 1", failed)
	}
	rec := long.record(t, "investigate")
	if rec.Attempt != 2 {
		t.Errorf("attempt %d, want 2 (one Task retried)", rec.Attempt)
	}
	sameAgentRecord(t, rec, want)
	seen := map[string]bool{}
	for _, ev := range trace(t, rec) {
		if ev.Type != agent.EventToolCall {
			continue
		}
		if seen[ev.ID] {
			t.Errorf("tool call %s (%s) is in the trace twice", ev.ID, ev.Name)
		}
		seen[ev.ID] = true
	}
	if len(seen) != 6 {
		t.Errorf("%d tool calls in the trace, want 6", len(seen))
	}
	if !reflect.DeepEqual(long.usage, single.usage) {
		t.Errorf("usage %+v, want %+v", long.usage, single.usage)
	}
}
