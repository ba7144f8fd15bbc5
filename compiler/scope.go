package compiler

import (
	"strings"

	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/shared/pipeline"
)

// whenScope says which names a when: expression (and a fan_out's over:)
// may use besides steps, and where each lives in the state machine's
// variables. It binds what a template sees of the run (task.Pipeline's
// TriggerBindings): vars and labels as objects, pipeline_name,
// pipeline_run_id, each context_template.include path under its leaf name
// (a dotted path also makes its root readable as it is in the trigger),
// then each var under its own name, which wins over all of them. Check
// accepts exactly these names and the lowering reads them from here, so
// what validate accepts compiles.
func whenScope(p *pipeline.Pipeline) when.Scope {
	s := when.Scope{
		pipeline.BindVars:         {Expr: "$pipeline.vars", Keyed: 1},
		pipeline.BindLabels:       {Expr: "$trigger.labels", Keyed: 1},
		pipeline.BindPipelineName: {Expr: "$pipeline.name"},
		pipeline.BindRunID:        {Expr: "$run.id"},
	}
	object := func(root string) int {
		if root == "labels" || root == "metadata" {
			return 1 // the trigger's labels and metadata are objects
		}
		return 0
	}
	for _, inc := range p.ContextInclude {
		parts := strings.Split(inc.Path, ".")
		expr := "$trigger"
		for _, part := range parts {
			expr += "." + jsonataName(part)
		}
		keyed := 0
		if len(parts) == 1 {
			keyed = object(parts[0])
		}
		s[inc.Leaf()] = when.Root{Expr: expr, Keyed: keyed}
	}
	for _, inc := range p.ContextInclude {
		root, _, dotted := strings.Cut(inc.Path, ".")
		if _, bound := s[root]; dotted && !bound {
			s[root] = when.Root{Expr: "$trigger." + jsonataName(root), Keyed: object(root)}
		}
	}
	for _, v := range p.Vars {
		s[v.Name] = when.Root{Expr: "$pipeline.vars." + jsonataName(v.Name)}
	}
	return s
}
