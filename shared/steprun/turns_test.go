package steprun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// clockedAgents hands out the registry's agent models wrapped so that
// each model call moves the test's clock on by step: what a slow model
// does to the handler's budget and the step's deadline.
type clockedAgents struct {
	inner Agents
	e     *env
	step  time.Duration
}

func (c clockedAgents) Agent(call executor.Call, a *agent.Resolved) (agent.Model, agent.Toolbox, error) {
	m, tb, err := c.inner.Agent(call, a)
	if err != nil {
		return nil, nil, err
	}
	return clockedModel{inner: m, c: c}, tb, nil
}

type clockedModel struct {
	inner agent.Model
	c     clockedAgents
}

func (m clockedModel) Turn(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	r, err := m.inner.Turn(ctx, req)
	m.c.e.clock = m.c.e.clock.Add(m.c.step)
	return r, err
}

// turnsEnv is newEnv for agent steps: scripted replies, the artifact
// store in a temporary directory, and each model call taking perCall.
func turnsEnv(t *testing.T, responses string, perCall time.Duration) *env {
	t.Helper()
	e := newEnv(t, responses)
	e.h.Agents = clockedAgents{inner: e.prov.inner.(*executor.Registry), e: e, step: perCall}
	e.h.Artifacts = Dir{Root: t.TempDir()}
	return e
}

// longStep is agentStep with a timeout past one invocation.
func longStep(name string, timeout int) pipeline.Step {
	st := agentStep(name)
	st.TimeoutSeconds = timeout
	return st
}

// turnsRequest is the agent_turns request of the step's first Task.
func turnsRequest(t *testing.T, st pipeline.Step, a *agent.Resolved) task.Request {
	t.Helper()
	req := agentRequest(t, st, a)
	req.Mode = task.ModeAgentTurns
	return req
}

// drive runs an agent_turns step as its state machine does: Task after
// Task while they answer continue. It returns every Response, and the
// error of the Task that failed.
func drive(t *testing.T, e *env, req task.Request) ([]task.Response, error) {
	t.Helper()
	var out []task.Response
	for range 50 {
		resp, err := e.h.Respond(context.Background(), req)
		if err != nil {
			return out, err
		}
		out = append(out, resp)
		if resp.Status != task.StatusContinue {
			return out, nil
		}
		if resp.AgentLoop == nil || string(resp.Output) != "null" || resp.Usage != req.Usage {
			t.Fatalf("continue answer: loop %+v output %s usage %+v", resp.AgentLoop, resp.Output, resp.Usage)
		}
		req.AgentLoop, req.Attempt = resp.AgentLoop, 1
	}
	t.Fatal("the step did not end within 50 Tasks")
	return nil, nil
}

// handedBack lists the turn each continue answer handed back.
func handedBack(resps []task.Response) []int {
	out := []int{}
	for _, r := range resps {
		if r.Status == task.StatusContinue {
			out = append(out, r.AgentLoop.Turn)
		}
	}
	return out
}

// sameRecord reports how two records of the same step differ in what
// they say of it (times and attempt aside).
func sameRecord(t *testing.T, got, want store.StepRecord) {
	t.Helper()
	strip := func(r store.StepRecord) store.StepRecord {
		r.Index, r.StartedAt, r.FinishedAt, r.DurationMS, r.Attempt = 0, time.Time{}, time.Time{}, 0, 0
		return r
	}
	g, w := strip(got), strip(want)
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", " ")
		wb, _ := json.MarshalIndent(w, "", " ")
		t.Errorf("record differs from the single-invocation run's:\n got %s\nwant %s", gb, wb)
	}
}

// singleRun runs the step as one Task, the single-invocation way, and
// returns its record, its answer and the run's stored usage.
func singleRun(t *testing.T, responses string, st pipeline.Step) (store.StepRecord, task.Response, store.Usage) {
	t.Helper()
	e := newEnv(t, responses)
	e.h.Agents = e.prov.inner.(*executor.Registry)
	st.TimeoutSeconds = 600
	resp, err := e.h.Respond(context.Background(), agentRequest(t, st, sreAgent("")))
	if err != nil {
		t.Fatal(err)
	}
	recs := stepRecords(t, e.st, st.Name)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	return recs[0], resp, runUsage(t, e)
}

func runUsage(t *testing.T, e *env) store.Usage {
	t.Helper()
	u := getRun(t, e.st).Usage
	u.CostUSD = nil
	return u
}

// TestAgentTurnsBudget: with each model call taking 100 s, a Task hands
// back once its budget is spent (a call starts only before it), and the
// step's record, trace, answer and usage are the single-invocation run's
// whatever the number of Tasks.
func TestAgentTurnsBudget(t *testing.T) {
	want, wantResp, wantUsage := singleRun(t, scriptedLoop, agentStep("investigate"))
	cases := []struct {
		name   string
		budget time.Duration
		back   []int // the turns handed back
	}{
		{"one call per Task", time.Nanosecond, []int{1, 2}},
		{"budget ends before the second call ends", 199 * time.Second, []int{2}},
		{"budget ends as the second call ends", 200 * time.Second, []int{2}},
		{"budget ends after the second call ends", 201 * time.Second, []int{}},
		{"default budget", 0, []int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := turnsEnv(t, scriptedLoop, 100*time.Second)
			e.h.AgentInvocationBudget = c.budget
			resps, err := drive(t, e, turnsRequest(t, longStep("investigate", 3600), sreAgent("")))
			if err != nil {
				t.Fatal(err)
			}
			if got := handedBack(resps); !reflect.DeepEqual(got, c.back) {
				t.Errorf("handed back at turns %v, want %v", got, c.back)
			}
			last := resps[len(resps)-1]
			if last.Status != wantResp.Status || string(last.Output) != string(wantResp.Output) || last.Usage != wantResp.Usage {
				t.Errorf("answer %s %s %+v, want %s %s %+v", last.Status, last.Output, last.Usage, wantResp.Status, wantResp.Output, wantResp.Usage)
			}
			if a := last.Agent; a == nil || a.Iterations != 3 || a.ToolCalls != 3 || a.Tasks != len(resps) {
				t.Errorf("agent summary %+v, want 3 model calls, 3 tool calls, %d Tasks", a, len(resps))
			}
			recs := stepRecords(t, e.st, "investigate")
			if len(recs) != 1 || recs[0].Attempt != 1 {
				t.Fatalf("records %+v", recs)
			}
			sameRecord(t, recs[0], want)
			if got := runUsage(t, e); !reflect.DeepEqual(got, wantUsage) {
				t.Errorf("run usage %+v, want %+v", got, wantUsage)
			}
			if !recs[0].StartedAt.Equal(testStart.Add(time.Second)) {
				t.Errorf("record started at %s, want the first Task's start", recs[0].StartedAt)
			}
		})
	}
}

// fiveCalls asks for a tool four times before it answers.
const fiveCalls = `
investigate:
  - {tool_calls: [{name: grafana.query, arguments: {n: 1}}]}
  - {tool_calls: [{name: grafana.query, arguments: {n: 2}}]}
  - {tool_calls: [{name: grafana.query, arguments: {n: 3}}]}
  - '{"confidence": 0.9, "summary": "found it", "next_step_context": ""}'
tool_results:
  grafana.query: ["1", "2", "3"]
`

// TestAgentTurnsDeadlineAcrossTasks: the deadline is fixed at the step's
// first Task (timeout_seconds 1000, less 10 s to record: 990 s) and
// holds across Tasks: the Task that starts at or after it fails with
// AgentDeadlineExceeded, one that starts before it calls the model.
func TestAgentTurnsDeadlineAcrossTasks(t *testing.T) {
	cases := []struct {
		name    string
		perCall time.Duration // the fourth Task starts at 3 × perCall
		err     string
	}{
		{"fourth Task starts before the deadline", 329 * time.Second, ""},
		{"fourth Task starts at the deadline", 330 * time.Second, fault.NameAgentDeadlineExceeded},
		{"fourth Task starts after the deadline", 331 * time.Second, fault.NameAgentDeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := turnsEnv(t, fiveCalls, c.perCall)
			e.h.AgentInvocationBudget = time.Nanosecond
			resps, err := drive(t, e, turnsRequest(t, longStep("investigate", 1000), sreAgent("")))
			if fault.Name(err) != c.err {
				t.Fatalf("error %v, want %q", err, c.err)
			}
			rec := stepRecords(t, e.st, "investigate")[0]
			if c.err == "" {
				if rec.Status != store.StepCompleted || rec.Iterations != 4 {
					t.Errorf("record %s after %d model calls", rec.Status, rec.Iterations)
				}
				return
			}
			if len(resps) != 3 || rec.Status != store.StepFailed || rec.Iterations != 3 || !strings.Contains(rec.Error, "deadline") {
				t.Errorf("%d Tasks handed back; record %s after %d model calls: %s", len(resps), rec.Status, rec.Iterations, rec.Error)
			}
			if n := strings.Count(string(rec.Trace), `"tool_call"`); n != 3 {
				t.Errorf("the failed record's trace holds %d tool calls, want 3", n)
			}
		})
	}
}

// TestAgentTurnsRetryKeepsTheConversation: a retried Task takes up the
// conversation where its failed attempt left it, so no model call or
// tool call is made twice and the trace is the single-invocation run's:
// a Task whose answer was lost after it handed back, and a Task whose
// model call failed after it had kept one call.
func TestAgentTurnsRetryKeepsTheConversation(t *testing.T) {
	want, wantResp, wantUsage := singleRun(t, scriptedLoop, agentStep("investigate"))

	t.Run("answer lost after the hand-back", func(t *testing.T) {
		e := turnsEnv(t, scriptedLoop, time.Second)
		e.h.AgentInvocationBudget = time.Nanosecond
		req := turnsRequest(t, longStep("investigate", 3600), sreAgent(""))
		first, err := e.h.Respond(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.AgentLoop = first.AgentLoop
		if _, err := e.h.Respond(context.Background(), req); err != nil { // handed back turn 2: lost
			t.Fatal(err)
		}
		req.Attempt = 2 // the state machine retries the Task it saw fail
		resps, err := drive(t, e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resps) != 1 || resps[0].Status != wantResp.Status || string(resps[0].Output) != string(wantResp.Output) {
			t.Fatalf("retry answered %+v", resps)
		}
		recs := stepRecords(t, e.st, "investigate")
		if len(recs) != 1 || recs[0].Attempt != 2 {
			t.Fatalf("records %+v, want one, attempt 2", recs)
		}
		sameRecord(t, recs[0], want)
		if got := runUsage(t, e); !reflect.DeepEqual(got, wantUsage) {
			t.Errorf("run usage %+v, want %+v", got, wantUsage)
		}
	})

	t.Run("model call failed", func(t *testing.T) {
		withError := strings.Replace(scriptedLoop, "  - {tool_calls: [{name: runbooks.delete_page", "  - {error: \"http 500\"}\n  - {tool_calls: [{name: runbooks.delete_page", 1)
		e := turnsEnv(t, withError, time.Second)
		req := turnsRequest(t, longStep("investigate", 3600), sreAgent(""))
		_, err := e.h.Respond(context.Background(), req)
		if fault.Name(err) != fault.NameExecutorUnavailable {
			t.Fatalf("first attempt: %v, want ExecutorUnavailable", err)
		}
		failed := stepRecords(t, e.st, "investigate")
		if len(failed) != 1 || failed[0].Status != store.StepFailed || failed[0].Attempt != 1 || failed[0].Iterations != 2 ||
			strings.Count(string(failed[0].Trace), `"tool_call"`) != 1 {
			t.Fatalf("failed attempt's record %+v", failed)
		}
		req.Attempt = 2
		resps, err := drive(t, e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resps) != 1 || string(resps[0].Output) != string(wantResp.Output) {
			t.Fatalf("retry answered %+v", resps)
		}
		recs := stepRecords(t, e.st, "investigate")
		if len(recs) != 2 || recs[1].Attempt != 2 {
			t.Fatalf("records %+v, want the failed attempt and attempt 2", recs)
		}
		sameRecord(t, recs[1], want)
		if got := runUsage(t, e); !reflect.DeepEqual(got, wantUsage) {
			t.Errorf("run usage %+v, want %+v", got, wantUsage)
		}
	})
}

// TestAgentTurnsVerifier: the verifier runs once the agent has answered,
// in the next Task when the answer came after the budget; the record and
// usage are the single-invocation run's.
func TestAgentTurnsVerifier(t *testing.T) {
	responses := scriptedLoop + "investigate:verifier: [{reply: '{\"confidence\": 0.8, \"summary\": \"mostly\", \"next_step_context\": \"\"}', input_tokens: 50, output_tokens: 5}]\n"
	st := agentStep("investigate")
	st.Verifier = &pipeline.Verifier{Executor: "scripted", Mode: pipeline.ModeCritic, CombinationStrategy: pipeline.CombineMinimum,
		Trigger: pipeline.VerifierTrigger{Always: true}}
	want, wantResp, wantUsage := singleRun(t, responses, st)
	e := turnsEnv(t, responses, 100*time.Second)
	e.h.AgentInvocationBudget = 50 * time.Second
	st.TimeoutSeconds = 3600
	resps, err := drive(t, e, turnsRequest(t, st, sreAgent("")))
	if err != nil {
		t.Fatal(err)
	}
	if got := handedBack(resps); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("handed back at turns %v, want 1, 2 and 3 (answered after the budget: verified by the next Task)", got)
	}
	last := resps[len(resps)-1]
	if string(last.Output) != string(wantResp.Output) || last.Usage != wantResp.Usage {
		t.Errorf("answer %s %+v, want %s %+v", last.Output, last.Usage, wantResp.Output, wantResp.Usage)
	}
	sameRecord(t, stepRecords(t, e.st, "investigate")[0], want)
	if got := runUsage(t, e); !reflect.DeepEqual(got, wantUsage) {
		t.Errorf("run usage %+v, want %+v", got, wantUsage)
	}
}

// TestAgentTurnsConversationBound: a conversation over the bound kept
// between Tasks fails the step (ConfigError) when it is kept, with the
// loop's record; one at the bound is kept.
func TestAgentTurnsConversationBound(t *testing.T) {
	probe := turnsEnv(t, scriptedLoop, time.Second)
	probe.h.AgentInvocationBudget = time.Nanosecond
	resp, err := probe.h.Respond(context.Background(), turnsRequest(t, longStep("investigate", 3600), sreAgent("")))
	if err != nil || resp.Status != task.StatusContinue {
		t.Fatalf("probe: %v %+v", err, resp)
	}
	kept, err := os.ReadFile(filepath.Join(probe.h.Artifacts.(Dir).Root, "run-1", "investigate.agent", "turn-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	size := len(kept) // the conversation after one model call
	cases := []struct {
		name  string
		limit int
		fails int // the model calls made when it fails
	}{
		{"below the first call's conversation", size - 1, 1},
		{"at it", size, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := turnsEnv(t, scriptedLoop, time.Second)
			e.h.AgentInvocationBudget = time.Nanosecond
			e.h.maxConversation = c.limit
			_, err := drive(t, e, turnsRequest(t, longStep("investigate", 3600), sreAgent("")))
			if fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), "kept between invocations") {
				t.Fatalf("err = %v", err)
			}
			rec := stepRecords(t, e.st, "investigate")[0]
			if rec.Status != store.StepFailed || rec.Iterations != c.fails {
				t.Errorf("record %s after %d model calls, want failed after %d", rec.Status, rec.Iterations, c.fails)
			}
		})
	}
}

// TestAgentTurnsRefused: what an agent_turns Task cannot run fails with
// a ConfigError naming the reason, before any model call.
func TestAgentTurnsRefused(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*env, *task.Request, *pipeline.Step)
		agent bool
		want  string
	}{
		{"no artifact store", func(e *env, _ *task.Request, _ *pipeline.Step) { e.h.Artifacts = nil }, true, "artifact store"},
		{"no agent", nil, false, "needs a step that runs a resolved agent"},
		{"loop_until", func(_ *env, _ *task.Request, st *pipeline.Step) {
			st.LoopUntil = &pipeline.LoopUntil{Confidence: 0.9, MaxIterations: 2}
		}, true, "loop_until"},
		{"bad deadline", func(_ *env, req *task.Request, _ *pipeline.Step) {
			req.AgentLoop = &task.AgentLoop{Turn: 1, StartedAt: testStart.Format(time.RFC3339Nano), Deadline: "soon"}
		}, true, "agent_loop.deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := turnsEnv(t, scriptedLoop, time.Second)
			st := longStep("investigate", 3600)
			req := turnsRequest(t, st, sreAgent(""))
			if c.edit != nil {
				c.edit(e, &req, &st)
			}
			if !c.agent {
				req = newRequest(t, task.ModeAgentTurns, st)
			} else {
				loop := req.AgentLoop
				req = turnsRequest(t, st, sreAgent(""))
				req.AgentLoop = loop
			}
			_, err := e.h.Respond(context.Background(), req)
			if fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want a ConfigError about %s", err, c.want)
			}
			if !e.clock.Equal(testStart.Add(time.Second)) {
				t.Errorf("the clock moved to %s: a model call was made", e.clock)
			}
		})
	}
}

// TestAgentTurnsKeptConversationOfAnotherAgent: a kept conversation that
// is not the step's agent's is refused rather than continued.
func TestAgentTurnsKeptConversationOfAnotherAgent(t *testing.T) {
	e := turnsEnv(t, scriptedLoop, time.Second)
	e.h.AgentInvocationBudget = time.Nanosecond
	req := turnsRequest(t, longStep("investigate", 3600), sreAgent(""))
	resp, err := e.h.Respond(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	other := sreAgent("")
	other.Profile.Name = "sre-investigator"
	req = turnsRequest(t, longStep("investigate", 3600), other)
	req.AgentLoop = resp.AgentLoop
	_, err = e.h.Respond(context.Background(), req)
	if fault.Name(err) != fault.NameConfigError || !strings.Contains(err.Error(), `is agent "sre-triage"'s, not "sre-investigator"'s`) {
		t.Fatalf("err = %v", err)
	}
}
