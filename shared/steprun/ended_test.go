package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/task"
)

// TestHandleEndsRunWithAnError: a step whose answer ends the run (the
// gate escalates, proceed: false stops) comes out of Handle as a
// *fault.RunEnded holding the same answer Respond gives, the step
// recorded the same; a completed step's answer comes back as it is.
func TestHandleEndsRunWithAnError(t *testing.T) {
	cases := []struct {
		name, reply, status string
	}{
		{"completed", `{"confidence": 0.9, "summary": "ok", "next_step_context": ""}`, task.StatusCompleted},
		{"escalated", `{"confidence": 0.2, "summary": "unsure", "next_step_context": ""}`, task.StatusEscalated},
		{"stopped", `{"confidence": 0.9, "summary": "nothing to do", "next_step_context": "", "proceed": false, "proceed_reason": "quiet"}`, task.StatusStopped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replies := "triage: ['" + c.reply + "']\n"
			want, err := newEnv(t, replies).h.Respond(context.Background(), newRequest(t, task.ModeStep, seqStep("triage", "look")))
			if err != nil || want.Status != c.status {
				t.Fatalf("Respond: %s, %v", want.Status, err)
			}
			e := newEnv(t, replies)
			got, err := e.h.Handle(context.Background(), endingRequest(t, task.ModeStep, seqStep("triage", "look")))
			if recs := stepRecords(t, e.st, "triage"); len(recs) != 1 || string(recs[0].Status) != c.status {
				t.Errorf("records: %+v", recs)
			}
			if c.status == task.StatusCompleted {
				if err != nil || got.Status != c.status {
					t.Fatalf("Handle: %s, %v", got.Status, err)
				}
				return
			}
			if fault.Name(err) != fault.NameRunEnded || got.Status != "" {
				t.Fatalf("Handle: %+v, %v (%s), want a %s error", got, err, fault.Name(err), fault.NameRunEnded)
			}
			ended, ok := EndedAnswer(err)
			want.Steps = nil // the group's entries stay out of the answer
			if !ok || !reflect.DeepEqual(ended, normalize(t, want)) {
				t.Errorf("answer\n%+v\nwant\n%+v", ended, want)
			}
		})
	}
}

// endingRequest is newRequest in a definition that catches
// Stepline.RunEnded (task.Pipeline.RunEndedError), as Lower compiles.
func endingRequest(t *testing.T, mode string, step any) task.Request {
	t.Helper()
	req := newRequest(t, mode, step)
	req.Pipeline.RunEndedError = true
	return req
}

// TestOlderDefinitionsGetTheAnswer: a definition compiled before
// Stepline.RunEnded (no run_ended_error in $pipeline) gets a run-ending
// answer as the Task's result, for its outcome Choice: an execution
// started before an upgrade ends as it would have.
func TestOlderDefinitionsGetTheAnswer(t *testing.T) {
	e := newEnv(t, "triage: ['{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}']\n")
	resp, err := e.h.Handle(context.Background(), newRequest(t, task.ModeStep, seqStep("triage", "look")))
	if err != nil || resp.Status != task.StatusEscalated || len(resp.Steps) == 0 {
		t.Errorf("Handle: %s (steps %d), %v; want the escalated answer as the result", resp.Status, len(resp.Steps), err)
	}
}

func normalize(t *testing.T, r task.Response) task.Response {
	t.Helper()
	var out task.Response
	if err := json.Unmarshal(mustJSON(t, r), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEnds pins which answers end a run: a deciding mode's statuses other
// than completed, continue and check (any other, as the outcome Choice's
// Default did); never a branch's, an approval's, a failure's or a
// child_input's.
func TestEnds(t *testing.T) {
	ending := []string{task.StatusStopped, task.StatusEscalated, task.StatusAborted, task.StatusFailed, "unknown"}
	going := []string{task.StatusCompleted, task.StatusContinue, task.StatusCheck}
	for _, mode := range []string{task.ModeStep, task.ModeAgentTurns, task.ModeCheck, task.ModeHuman, task.ModeChild, task.ModeJoin} {
		for _, s := range ending {
			if !Ends(mode, s) {
				t.Errorf("Ends(%s, %s) = false", mode, s)
			}
		}
		for _, s := range going {
			if Ends(mode, s) {
				t.Errorf("Ends(%s, %s) = true", mode, s)
			}
		}
	}
	for _, mode := range []string{task.ModeBranch, task.ModeApproval, task.ModeFailure, task.ModeChildInput} {
		for _, s := range append(ending, going...) {
			if Ends(mode, s) {
				t.Errorf("Ends(%s, %s) = true", mode, s)
			}
		}
	}
}

// TestEndedAnswerIsBounded: an answer whose JSON string text would pass
// MaxEndedAnswerBytes leaves out the output, then cuts the reason, and
// stays valid JSON the state machine parses.
func TestEndedAnswerIsBounded(t *testing.T) {
	big := json.RawMessage(mustJSON(t, map[string]any{"confidence": 0.1, "summary": strings.Repeat(`<"x">`, 20000)}))
	cases := []struct {
		name       string
		r          task.Response
		keepOutput bool
		keepReason bool
	}{
		{"small", task.Response{Status: task.StatusStopped, Step: "a", Output: json.RawMessage(`{"confidence":1}`), Reason: "done"}, true, true},
		{"large output", task.Response{Status: task.StatusStopped, Step: "a", Output: big, Reason: "done"}, false, true},
		{"large reason", task.Response{Status: task.StatusEscalated, Step: "a", Output: big, Reason: strings.Repeat("é<", 40000)}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := endedAnswer(c.r)
			if n := quotedLen(b); n > MaxEndedAnswerBytes {
				t.Fatalf("%d bytes as a JSON string, over %d", n, MaxEndedAnswerBytes)
			}
			var got task.Response
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Status != c.r.Status || got.Step != c.r.Step {
				t.Errorf("status %q step %q", got.Status, got.Step)
			}
			if keep := bytes.Equal(got.Output, c.r.Output); keep != c.keepOutput || !keep && string(got.Output) != "null" {
				t.Errorf("output kept %v (%.40s), want %v", keep, got.Output, c.keepOutput)
			}
			if keep := got.Reason == c.r.Reason; keep != c.keepReason || !strings.HasPrefix(c.r.Reason, got.Reason) || got.Reason == "" {
				t.Errorf("reason kept %v (%d bytes), want %v", keep, len(got.Reason), c.keepReason)
			}
		})
	}
}

// TestLambdaReportsRunEndedByName: the Lambda adapter reports a
// run-ending answer as an InvokeResponse_Error of type Stepline.RunEnded
// (which the runtime sends as it is: no Go type has that name) with the
// answer as its message; other errors keep their fault's type.
func TestLambdaReportsRunEndedByName(t *testing.T) {
	e := newEnv(t, "triage: ['{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}']\n")
	_, err := e.h.Lambda()(context.Background(), endingRequest(t, task.ModeStep, seqStep("triage", "look")))
	var ive messages.InvokeResponse_Error
	if !errors.As(err, &ive) || ive.Type != fault.NameRunEnded {
		t.Fatalf("error %T %v, want an InvokeResponse_Error of type %s", err, err, fault.NameRunEnded)
	}
	var r task.Response
	if json.Unmarshal([]byte(ive.Message), &r) != nil || r.Status != task.StatusEscalated || r.Step != "triage" {
		t.Errorf("message %s", ive.Message)
	}
	// The local engine names Handle's error the same.
	e = newEnv(t, "triage: ['{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}']\n")
	_, err = e.h.Handle(context.Background(), endingRequest(t, task.ModeStep, seqStep("triage", "look")))
	if got := engine.ErrorName(err); got != fault.NameRunEnded {
		t.Errorf("engine.ErrorName = %q, want %q", got, fault.NameRunEnded)
	}
	wrapped := lambdaError(fmt.Errorf("step %q: %w", "triage", &fault.ConfigError{Msg: "no key"}))
	if _, ok := wrapped.(*fault.ConfigError); !ok {
		t.Errorf("a fault is surfaced as %T", wrapped)
	}
}

// TestTaskErrorsMetric: a failed Task counts in TaskErrors (by pipeline
// and for the function as a whole); a run-ending answer does not.
func TestTaskErrorsMetric(t *testing.T) {
	var b bytes.Buffer
	h := &Handler{Metrics: &metrics.EMF{W: &b}}
	req := task.Request{Mode: task.ModeStep, Pipeline: task.Pipeline{Name: "demo"}}
	h.countError(req, &fault.RunEnded{Msg: "{}"})
	if b.Len() != 0 {
		t.Fatalf("a run-ending answer was counted: %s", b.String())
	}
	h.countError(req, &fault.ExecutorUnavailable{Msg: "503"})
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	cw := line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if line[metrics.TaskErrors] != 1.0 || line["Pipeline"] != "demo" || line["Function"] != metrics.FunctionStep ||
		!reflect.DeepEqual(cw["Dimensions"], []any{[]any{"Pipeline"}, []any{"Function"}}) {
		t.Errorf("metric line %s", b.String())
	}
	// Handle counts what it returns.
	b.Reset()
	e := newEnv(t, "triage: ['{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}']\n")
	e.h.Metrics = &metrics.EMF{W: &b}
	if _, err := e.h.Handle(context.Background(), task.Request{Mode: task.ModeStep, Run: task.Run{ID: "run-1"}}); err == nil {
		t.Fatal("a request without a step did not fail")
	}
	if !strings.Contains(b.String(), `"TaskErrors":1`) {
		t.Errorf("Handle's error was not counted: %s", b.String())
	}
}

// TestFinishClosesAnExpressRun: an Express workflow's finish Task closes
// the run completed with its output and usage and counts it in Runs; it
// answers no status (no progress line). A run a step ended
// keeps its status; a Standard run's ends are never counted here (the
// recorder counts them).
func TestFinishClosesAnExpressRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "")
	var b bytes.Buffer
	e.h.Metrics = &metrics.EMF{W: &b}
	req := newRequest(t, task.ModeFinish, nil)
	req.Pipeline.Workflow = WorkflowExpress
	req.Final = json.RawMessage(`{"confidence":0.9,"summary":"done"}`)
	req.Usage = task.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: 0.5}
	resp, err := e.h.Handle(ctx, req)
	if err != nil || resp.Status != "" || resp.Usage != req.Usage {
		t.Fatalf("finish: %+v, %v", resp, err)
	}
	run := getRun(t, e.st)
	if run.Status != "completed" || string(run.FinalOutput) != string(req.Final) || run.Usage.InputTokens != 7 || run.CompletedAt == nil {
		t.Errorf("run %+v", run)
	}
	if !strings.Contains(b.String(), `"Runs":1`) || !strings.Contains(b.String(), `"Status":"completed"`) ||
		!strings.Contains(b.String(), `"Dimensions":[["Pipeline","Status"],["Status"]]`) {
		t.Errorf("metrics: %s", b.String())
	}
	// Again (a retried Task): the record stays as it is (metrics, like
	// every step metric, are at least once).
	if _, err := e.h.Handle(ctx, req); err != nil || getRun(t, e.st).Status != "completed" {
		t.Errorf("second finish: %v", err)
	}

	// A step that ends an Express run counts it; a Standard run's end is
	// left to the recorder.
	for _, wf := range []string{WorkflowExpress, ""} {
		e := newEnv(t, "triage: ['{\"confidence\": 0.2, \"summary\": \"unsure\", \"next_step_context\": \"\"}']\n")
		var b bytes.Buffer
		e.h.Metrics = &metrics.EMF{W: &b}
		req := endingRequest(t, task.ModeStep, seqStep("triage", "look"))
		req.Pipeline.Workflow = wf
		if _, err := e.h.Handle(ctx, req); fault.Name(err) != fault.NameRunEnded {
			t.Fatalf("%q: %v", wf, err)
		}
		counted := strings.Contains(b.String(), `"Runs":1`) && strings.Contains(b.String(), `"Status":"escalated"`)
		if counted != (wf == WorkflowExpress) {
			t.Errorf("workflow %q: Runs counted %v: %s", wf, counted, b.String())
		}
	}
}
