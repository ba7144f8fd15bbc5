package compiler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/task"
)

// TestAgentTimeouts: a sequential agent step may ask for more than one
// Lambda invocation (its loop then spans Tasks), nothing else may; each
// refusal is positioned at the field it is about.
func TestAgentTimeouts(t *testing.T) {
	p := agentProject(t, agentConfig, nil)
	step := func(timeout, extra string) string {
		return "name: p\nsteps:\n  - name: a\n    executor: anthropic\n    executor_config: {agent: triage}\n    timeout_seconds: " + timeout + "\n" + extra
	}
	cases := []struct {
		name, src string
		mode      string // the mode of the step's Task; "" when it does not compile
		want      []string
	}{
		{"agent step within one invocation", step("900", ""), task.ModeStep, nil},
		{"agent step one second past it", step("901", ""), task.ModeAgentTurns, nil},
		{"agent step of a day", step("86400", ""), task.ModeAgentTurns, nil},
		{"loop_until within one invocation", step("900", "    loop_until: {confidence: 0.9, max_iterations: 2}\n"), task.ModeStep, nil},
		{"loop_until past it", step("901", "    loop_until: {confidence: 0.9, max_iterations: 2}\n"), "", []string{
			`p.yaml:7:17: step "a": loop_until cannot repeat an agent step whose timeout_seconds 901 is over 900: its tool loop spans several Lambda invocations; loop in the agent's own instructions instead, or keep timeout_seconds within 900`}},
		{"plain model step past it", "name: p\nsteps:\n  - name: a\n    executor: anthropic\n    executor_config: {model: claude-sonnet-4-6}\n    timeout_seconds: 901\n", "", []string{
			`p.yaml:6:22: step "a": timeout_seconds 901 is over 900: a anthropic step runs in one Lambda invocation, which stops at 900 s`}},
		{"agent branch past it", "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - {name: b, executor: gateway, executor_config: {agent: triage}, timeout_seconds: 901}\n", "", []string{
			`p.yaml:6:91: branch "b" of parallel "g": timeout_seconds 901 is over 900: the agent of a parallel branch or fan-out item runs in one Lambda invocation, which stops at 900 s; only a sequential step's agent may run longer`}},
		{"agent fan-out past it", "name: p\nsteps:\n  - fan_out:\n      name: f\n      over: \"['a']\"\n      executor: bedrock\n      executor_config: {agent: triage}\n      timeout_seconds: 1200\n", "", []string{
			`p.yaml:8:24: fan_out "f": timeout_seconds 1200 is over 900: the agent of a parallel branch or fan-out item runs in one Lambda invocation, which stops at 900 s; only a sequential step's agent may run longer`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, sm, ds := BuildIn("p.yaml", []byte(c.src), Env{Project: p})
			var got []string
			for _, d := range ds {
				if !d.Warning {
					got = append(got, d.String())
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if c.mode == "" {
				return
			}
			if sm == nil {
				t.Fatalf("does not compile:\n%s", ds)
			}
			if mode := taskMode(t, sm, "a"); mode != c.mode {
				t.Errorf("Task mode %q, want %q", mode, c.mode)
			}
		})
	}
}

// taskMode is the mode of the payload state name sends.
func taskMode(t *testing.T, sm *asl.StateMachine, name string) string {
	t.Helper()
	st, ok := sm.States.Get(name)
	if !ok {
		t.Fatalf("no state %q", name)
	}
	tk, ok := st.(*asl.Task)
	if !ok {
		t.Fatalf("state %q is a %T", name, st)
	}
	mode, _ := tk.Arguments.(map[string]any)["Payload"].(map[string]any)["mode"].(string)
	return mode
}

// TestAgentTurnsShape: an agent step past one invocation is a Task that
// carries the loop's state from a variable of its own and has the step's
// Retry and Catch and Lambda's 900 s, and an outcome Choice whose first
// rule sends a continue answer back to it with that state; completed
// goes on as for any step.
func TestAgentTurnsShape(t *testing.T) {
	p := agentProject(t, agentConfig, nil)
	src := `name: p
steps:
  - name: dig-in
    executor: anthropic
    executor_config: {agent: triage}
    prompt_template: "{{ summary }}"
    timeout_seconds: 3600
    retry: {attempts: 3}
    on_failure: continue
  - name: next
    executor: scripted
    when: steps.dig_in.confidence > 0.5
`
	_, sm, ds := BuildIn("p.yaml", []byte(src), Env{Project: p})
	if sm == nil {
		t.Fatalf("does not compile:\n%s", ds)
	}
	def, err := Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ States map[string]json.RawMessage }
	if err := json.Unmarshal(def, &v); err != nil {
		t.Fatal(err)
	}
	var tk struct {
		Arguments struct {
			Payload map[string]any
		}
		TimeoutSeconds int
		Retry          []struct{ ErrorEquals []string }
		Catch          []struct{ Next string }
		Assign         map[string]string
		Next           string
	}
	if err := json.Unmarshal(v.States["dig-in"], &tk); err != nil {
		t.Fatal(err)
	}
	pl := tk.Arguments.Payload
	if pl["mode"] != task.ModeAgentTurns || pl["agent_loop"] != "{% $exists($turns_dig_in) ? $turns_dig_in : null %}" ||
		pl["attempt"] != "{% $states.context.State.RetryCount + 1 %}" {
		t.Errorf("payload mode %v agent_loop %v attempt %v", pl["mode"], pl["agent_loop"], pl["attempt"])
	}
	if tk.TimeoutSeconds != MaxSyncTimeoutSeconds || len(tk.Retry) != 2 || len(tk.Catch) != 2 || tk.Catch[0].Next != StateEnded || tk.Catch[1].Next != "dig-in: failed" ||
		tk.Next != "dig-in: outcome" || tk.Assign["step_dig_in"] == "" {
		t.Errorf("Task: timeout %d retry %v catch %v next %q assign %v", tk.TimeoutSeconds, tk.Retry, tk.Catch, tk.Next, tk.Assign)
	}
	var ch struct {
		Choices []struct {
			Condition string
			Assign    map[string]string
			Next      string
		}
		Default string
	}
	if err := json.Unmarshal(v.States["dig-in: outcome"], &ch); err != nil {
		t.Fatal(err)
	}
	if len(ch.Choices) < 2 {
		t.Fatalf("outcome rules %+v", ch.Choices)
	}
	first := ch.Choices[0]
	if first.Condition != "{% $states.input.status = 'continue' %}" || first.Next != "dig-in" ||
		!reflect.DeepEqual(first.Assign, map[string]string{"turns_dig_in": "{% $states.input.agent_loop %}"}) {
		t.Errorf("first outcome rule %+v", first)
	}
	if !strings.HasPrefix(ch.Choices[1].Condition, "{% $states.input.status = 'completed' and (") || ch.Choices[1].Next != "next" || ch.Default != StateEnded {
		t.Errorf("outcome %+v", ch)
	}
	if _, ok := v.States["dig-in: failed"]; !ok {
		t.Error("no failure Task for on_failure: continue")
	}
}
