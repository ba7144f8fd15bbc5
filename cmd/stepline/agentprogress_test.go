package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// TestProgressOfAgentSteps: run's progress says what an agent step's
// loop did: a Task that hands back "continues" with the calls so far, and
// the step's line is followed by its agent, model calls and tool calls
// (and Tasks, for a step that outlives one invocation); a step without an
// agent prints one line as before.
func TestProgressOfAgentSteps(t *testing.T) {
	at := time.Date(2026, 11, 29, 17, 40, 0, 0, time.UTC)
	succeeded := func(r task.Response) store.HistoryEvent {
		d, _ := json.Marshal(map[string]any{"output": map[string]any{"Payload": r}})
		return store.HistoryEvent{Type: "TaskSucceeded", State: r.Step, Time: at.Add(3 * time.Second), Detail: d}
	}
	// An answer that ends the run comes as the step function's
	// Stepline.RunEnded error, its Cause the function's error response.
	ended := func(r task.Response) store.HistoryEvent {
		msg, _ := json.Marshal(r)
		cause, _ := json.Marshal(map[string]string{"errorMessage": string(msg), "errorType": fault.NameRunEnded})
		d, _ := json.Marshal(map[string]any{"error": fault.NameRunEnded, "cause": string(cause)})
		return store.HistoryEvent{Type: "TaskFailed", State: r.Step, Time: at.Add(3 * time.Second), Detail: d}
	}
	out := json.RawMessage(`{"confidence": 0.86, "summary": "pool exhausted", "next_step_context": ""}`)
	cases := []struct {
		name  string
		resp  task.Response
		want  string
		event func(task.Response) store.HistoryEvent // succeeded when nil
	}{
		{"a Task hands back", task.Response{Status: task.StatusContinue, Step: "investigate", Output: json.RawMessage("null"),
			Agent: &task.AgentSummary{Agent: "sre-investigator", Iterations: 1, ToolCalls: 2, Tasks: 1}},
			"  investigate                  continues  agent sre-investigator: 1 model call, 2 tool calls in 1 Task\n", nil},
		{"the step answers after Tasks", task.Response{Status: task.StatusCompleted, Step: "investigate", Output: out,
			Agent: &task.AgentSummary{Agent: "sre-investigator", Iterations: 5, ToolCalls: 1, Tasks: 3}},
			"  investigate                  completed  confidence 0.86      3s  pool exhausted\n" +
				"                                          agent sre-investigator: 5 model calls, 1 tool call in 3 Tasks\n", nil},
		{"an agent step in one invocation", task.Response{Status: task.StatusEscalated, Step: "triage", Output: out,
			Agent: &task.AgentSummary{Agent: "sre-triage", Iterations: 1}},
			"  triage                       escalated  confidence 0.86      3s  pool exhausted\n" +
				"                                          agent sre-triage: 1 model call, 0 tool calls\n", ended},
		{"a step stops the run", task.Response{Status: task.StatusStopped, Step: "report", Output: out},
			"  report                       stopped    confidence 0.86      3s  pool exhausted\n", ended},
		{"a step without an agent", task.Response{Status: task.StatusCompleted, Step: "report", Output: out},
			"  report                       completed  confidence 0.86      3s  pool exhausted\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(env{stdout: &b})
			p.event("run-1", store.HistoryEvent{Type: "TaskScheduled", State: c.resp.Step, Time: at})
			ev := c.event
			if ev == nil {
				ev = succeeded
			}
			p.event("run-1", ev(c.resp))
			if b.String() != c.want {
				t.Errorf("progress:\n%q\nwant\n%q", b.String(), c.want)
			}
		})
	}
}

// TestRunAgentExample runs the agent example as make run-agent does,
// offline: its investigation's line names the agent and what its loop
// did, and the run completes without reaching the network. The line's
// confidence is the one later steps see: the combined trust its gate
// decided on (G 0.75 enforced caps the 0.80 after the verifier).
func TestRunAgentExample(t *testing.T) {
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--dir", filepath.Join(t.TempDir(), "state"),
		"--event", "../../events/incident-declared.trigger.json",
		"--responses", "../../pipelines/responses/sre-investigation.yaml",
		"../../pipelines/sre-investigation.yaml"}, offlineEnv(t, &out, &errOut))
	if code != exitOK || errOut.Len() > 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, re := range []string{
		`(?m)^  investigate\s+completed\s+confidence 0\.75 .*connection pool`,
		`(?m)^\s+agent sre-investigator: 5 model calls, 6 tool calls in 1 Task$`,
		`(?m)^  remediate\s+completed`,
		`(?m)^run run-\S+: completed$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output does not match %s:\n%s", re, out.String())
		}
	}
	if strings.Contains(out.String(), "continues") {
		t.Errorf("the scripted investigation handed back within one budget:\n%s", out.String())
	}
}
