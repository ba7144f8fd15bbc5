package compiler_test

import (
	"fmt"

	"github.com/stepline/stepline/compiler"
)

// Compile a pipeline and list the states of its state machine: the start,
// a Task and an outcome Choice per step, and the end states it can reach.
func ExampleCompile() {
	src := []byte(`name: greet
steps:
  - name: hello
    executor: scripted
    prompt_template: "Say hello to {{ labels.user }}"
  - name: follow-up
    executor: scripted
    when: steps.hello.confidence > 0.9
`)
	sm, ds := compiler.Compile("greet.yaml", src)
	if sm == nil {
		fmt.Print(ds)
		return
	}
	for _, name := range sm.States.Names() {
		st, _ := sm.States.Get(name)
		fmt.Printf("%-20s %s\n", name, st.Type())
	}
	// Output:
	// Start run            Choice
	// Check follow-up      Choice
	// Rerun: load earlier steps Pass
	// Rerun: go to step    Choice
	// Rerun: unknown step  Fail
	// hello                Task
	// follow-up            Task
	// Record failure       Task
	// Run ended            Choice
	// Run completed        Succeed
	// Run stopped          Succeed
	// Run escalated        Fail
	// Run aborted          Fail
	// Run failed           Fail
}

// Load reports every problem of a file, positioned.
func ExampleLoad() {
	_, ds := compiler.Load("bad.yaml", []byte("name: bad\nsteps:\n  - name: a\n    executor: gatway\n"))
	fmt.Print(ds)
	// Output:
	// bad.yaml:4:15: step "a": executor "gatway" is not one of gateway, anthropic, bedrock, openclaw, webhook, notify, human, pipeline, scripted (did you mean "gateway"?)
}
