package local

import (
	"sync"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/steprun"
)

// prepared remembers the definitions whose prompt templates this process
// parsed ahead of their runs (prepareTemplates), up to maxPrepared.
var prepared = struct {
	mu   sync.Mutex
	defs map[*asl.StateMachine]bool
}{defs: make(map[*asl.StateMachine]bool)}

const maxPrepared = 64

// prepareTemplates parses sm's prompt templates before its run, all in
// one pass (steprun.PrepareTemplates), once per definition this process
// holds: a 100-step pipeline's first run otherwise parsed each template
// at its step, the Liquid library compiling a regular expression each
// time.
func prepareTemplates(sm *asl.StateMachine) {
	prepared.mu.Lock()
	done := prepared.defs[sm]
	if !done {
		if len(prepared.defs) >= maxPrepared {
			clear(prepared.defs)
		}
		prepared.defs[sm] = true
	}
	prepared.mu.Unlock()
	if !done {
		steprun.PrepareTemplates(promptTemplates(sm.States, nil))
	}
}

// promptTemplates appends the prompt templates of the Tasks among states
// and the states nested in them: each prompt_template string of a Task's
// arguments, at any depth (a step's, a branch's, a fan-out's, a
// verifier's).
func promptTemplates(states asl.States, out []string) []string {
	for _, st := range states.All() {
		switch st := st.(type) {
		case *asl.Task:
			out = templatesIn(st.Arguments, out)
		case *asl.Parallel:
			for _, b := range st.Branches {
				out = promptTemplates(b.States, out)
			}
		case *asl.Map:
			out = promptTemplates(st.ItemProcessor.States, out)
		}
	}
	return out
}

func templatesIn(v any, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "prompt_template" {
				out = append(out, s)
				continue
			}
			out = templatesIn(e, out)
		}
	case []any:
		for _, e := range v {
			out = templatesIn(e, out)
		}
	}
	return out
}
