package compiler

import (
	"maps"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
)

// Names of the states a rerun goes through.
const (
	StateRerunLoad    = "Rerun: load earlier steps"
	StateRerunFrom    = "Rerun: go to step"
	StateRerunUnknown = "Rerun: unknown step"
)

// ErrorRerunUnknownStep is the error of a rerun whose from_step is not a
// sequential step of the pipeline.
const ErrorRerunUnknownStep = "Stepline.RerunUnknownStep"

// rerunInput is where a rerun's input block is.
const rerunInput = "$states.input.rerun"

// addRerun emits the states a rerun goes through after StateStart, and
// returns the first. base is what StateStart assigns. A run whose input has a rerun
// block ({from_step, original_run_id, steps: {name: output}, items:
// {fan_out: {"fan_out/i": output}}}) loads the earlier run's outputs into
// the step variables — every step the block names, sequential steps,
// groups, branches (by their own name) and fan-outs' items — and goes on
// at from_step, a sequential step, as a run that reached it would (its
// when: is checked). Steps before it do not run. Any other run starts at
// the first step, as before.
func (l *lowerer) addRerun(base map[string]any) {
	assign := maps.Clone(base)
	seed := func(name string) {
		v := rerunInput + ".steps." + jsonataName(name)
		assign[stepVar(name)] = asl.Expr("$exists(" + v + ") ? " + v + " : null")
	}
	from := &asl.Choice{Comment: "Go on at the rerun's from_step.", Default: StateRerunUnknown}
	for i, n := range l.p.Steps {
		for _, name := range nodeNames(n) {
			seed(name)
		}
		switch n := n.(type) {
		case *pipeline.FanOut:
			v := rerunInput + ".items." + jsonataName(n.Name)
			assign[itemsVar(n.Name)] = asl.Expr("$exists(" + v + ") ? " + v + " : {}")
		case *pipeline.Step:
			from.Choices = append(from.Choices, asl.ChoiceRule{
				Condition: asl.Expr(rerunInput + ".from_step = " + asl.Quote(n.Name)),
				Next:      l.routeTo(i),
			})
		}
	}
	next := StateRerunFrom
	if len(from.Choices) == 0 { // no sequential step to rerun from
		next = StateRerunUnknown
	}
	l.add(&l.sm.States, StateRerunLoad, &asl.Pass{
		Comment: "Set the run's variables with the outputs of the steps the rerun reuses.",
		Assign:  assign,
		Next:    next,
	})
	if next == StateRerunFrom {
		l.add(&l.sm.States, StateRerunFrom, from)
	}
	l.add(&l.sm.States, StateRerunUnknown, &asl.Fail{
		Error: ErrorRerunUnknownStep,
		Cause: asl.Expr("'from_step ' & $string(" + rerunInput + ".from_step) & ' is not a sequential step of this pipeline'"),
	})
}
