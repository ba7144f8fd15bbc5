package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/pricing"
)

func TestOneStateAtATime(t *testing.T) {
	const pass = `{"Type": "Pass", "End": true}`
	for _, tc := range []struct {
		name   string
		states string
		want   bool
	}{
		{name: "tasks and choices", want: true, states: `{
			"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "B"},
			"B": {"Type": "Choice", "Choices": [{"Condition": "{% true %}", "Next": "C"}], "Default": "C"},
			"C": ` + pass + `}`},
		{name: "a Parallel state", want: false, states: `{
			"A": {"Type": "Parallel", "Branches": [{"StartAt": "X", "States": {"X": ` + pass + `}}], "End": true}}`},
		{name: "a Map state", want: false, states: `{
			"A": {"Type": "Map", "ItemProcessor": {"StartAt": "X", "States": {"X": ` + pass + `}}, "End": true}}`},
		{name: "a sub-pipeline", want: false, states: `{
			"A": {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2", "End": true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := asl.Decode([]byte(`{"QueryLanguage": "JSONata", "StartAt": "A", "States": ` + tc.states + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := oneStateAtATime(sm); got != tc.want {
				t.Errorf("oneStateAtATime = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunOneProcessor: stepline run asks for one processor before it
// drives a pipeline of plain steps, not before one with a parallel group.
func TestRunOneProcessor(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, pipeline, replies string
		want                    int
	}{
		{name: "steps", want: 1,
			pipeline: "name: seq\nsteps:\n  - {name: a, executor: scripted}\n  - {name: b, executor: scripted}\n",
			replies:  "a: ['{\"confidence\": 0.9, \"summary\": \"a\", \"next_step_context\": \"\"}']\nb: ['{\"confidence\": 0.9, \"summary\": \"b\", \"next_step_context\": \"\"}']\n"},
		{name: "parallel group", want: 0,
			pipeline: "name: par\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - {name: a, executor: scripted}\n        - {name: b, executor: scripted}\n",
			replies:  "a: ['{\"confidence\": 0.9, \"summary\": \"a\", \"next_step_context\": \"\"}']\nb: ['{\"confidence\": 0.9, \"summary\": \"b\", \"next_step_context\": \"\"}']\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.name+".yaml", tc.pipeline)
			r := writeFile(t, tc.name+"-replies.yaml", tc.replies)
			calls := 0
			var out, errOut bytes.Buffer
			code := dispatch(context.Background(), []string{"run", p, "--responses", r, "--json", "--dir", filepath.Join(dir, tc.name)}, env{
				stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
				oneProcessor: func() { calls++ },
			})
			if code != exitOK || !strings.Contains(out.String(), `"status": "completed"`) {
				t.Fatalf("exit %d: %s%s", code, errOut.String(), out.String())
			}
			if calls != tc.want {
				t.Errorf("oneProcessor called %d times, want %d", calls, tc.want)
			}
		})
	}
}

// TestHandlerPrices: the step functions price from the default table,
// loaded at their first call: a scripted call is priced at 0, a known
// model as the table says.
func TestHandlerPrices(t *testing.T) {
	want, err := pricing.Default()
	if err != nil {
		t.Fatal(err)
	}
	e := env{stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	h := handler(e, nil, t.TempDir(), nil, nil, executor.Deps{})
	u := pricing.Usage{InputTokens: 1000, OutputTokens: 500}
	for _, c := range [][2]string{{"scripted", "scripted"}, {"openai", "gpt-4o-2024-08-06"}, {"nobody", "nothing"}} {
		gc, gok := h.Pricing.Cost(c[0], c[1], u)
		wc, wok := want.Cost(c[0], c[1], u)
		if gc != wc || gok != wok {
			t.Errorf("%s/%s: %v %v, want %v %v", c[0], c[1], gc, gok, wc, wok)
		}
	}
	if c, ok := h.Pricing.Cost("scripted", "scripted", u); c != 0 || !ok {
		t.Errorf("a scripted call: %v %v, want priced at 0", c, ok)
	}
	if c, ok := h.Pricing.Cost("openai", "gpt-4o-2024-08-06", u); c <= 0 || !ok {
		t.Errorf("a gpt-4o call: %v %v, want priced", c, ok)
	}
}

// TestDrivingCommandsStartTheHeap: every command that drives a run sets
// the collector for a short process once its flags are read (run, resume,
// approve, reject, rerun), whether or not the run is then found; a command
// that only reads does not.
func TestDrivingCommandsStartTheHeap(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"resume", "run-nope"}, 1},
		{[]string{"approve", "run-nope", "step"}, 1},
		{[]string{"reject", "run-nope", "step"}, 1},
		{[]string{"rerun", "run-nope"}, 1},
		{[]string{"runs"}, 0},
		{[]string{"show", "run-nope"}, 0},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			calls := 0
			var out, errOut bytes.Buffer
			dispatch(context.Background(), append(tc.args, "--dir", filepath.Join(dir, tc.args[0])), env{
				stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" },
				startHeap: func() { calls++ },
			})
			if calls != tc.want {
				t.Errorf("startHeap called %d times, want %d (%s)", calls, tc.want, errOut.String())
			}
		})
	}
}
