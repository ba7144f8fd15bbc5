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

// textTriggerFields are the trigger's fields that hold text.
var textTriggerFields = []string{"summary", "severity", "source", "pipeline", "received_at", "fingerprint", "team"}

// textRoot says what the when: scope name root is when it always holds
// text (or, for labels and vars, an object of text), never a list: a var,
// a label, the trigger's text fields, the pipeline's name, the run's ID.
// It is "" for a name that may hold a list: steps, metadata and the names
// included from it.
func textRoot(s when.Scope, root string) string {
	if root == pipeline.BindSteps {
		return ""
	}
	r, ok := s[root]
	if !ok {
		return ""
	}
	switch e := r.Expr; {
	case e == "$pipeline.vars":
		return "is the pipeline's vars, which hold text"
	case strings.HasPrefix(e, "$pipeline.vars."):
		return "is a var, which holds text"
	case e == "$trigger.labels":
		return "is the trigger's labels, which hold text"
	case strings.HasPrefix(e, "$trigger.labels."):
		return "is a label of the trigger, which holds text"
	case e == "$pipeline.name":
		return "is the pipeline's name, which is text"
	case e == "$run.id":
		return "is the run's ID, which is text"
	}
	for _, f := range textTriggerFields {
		if r.Expr == "$trigger."+jsonataName(f) {
			return "is the trigger's " + f + ", which holds text"
		}
	}
	return ""
}
