package compiler

import (
	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/shared/pipeline"
)

// checkInfo is what Check parsed, kept for Lower as go/types keeps its
// Info: Lower lowers from it and parses no when:, over: or template text
// again. Check records it on the File (File.info).
type checkInfo struct {
	// when holds each node's when:, parsed; a node without one, or whose
	// when: did not parse (Check reported it), has no entry.
	when map[pipeline.Node]when.Expr
	// over holds each fan-out's over:, parsed, under the same rule.
	over map[*pipeline.FanOut]when.Expr
	// templates holds the scan of every template text of the pipeline's
	// nodes (nodeTemplates) that refers to steps; a text that refers to
	// none has no entry.
	templates map[string]templateScan
}

// templateScan is what a template text refers to.
type templateScan struct {
	refs []templateRef
	// dynamic: the text reads steps with a key computed at run time
	// (dynamicSteps), so the steps it reads cannot be listed.
	dynamic bool
}

func newCheckInfo() *checkInfo {
	return &checkInfo{
		when:      map[pipeline.Node]when.Expr{},
		over:      map[*pipeline.FanOut]when.Expr{},
		templates: map[string]templateScan{},
	}
}

// scanTemplate returns the scan of tpl, scanning it the first time.
func (in *checkInfo) scanTemplate(tpl string) templateScan {
	if t, ok := in.templates[tpl]; ok {
		return t
	}
	t := templateScan{refs: templateRefs(tpl), dynamic: dynamicSteps(tpl)}
	if len(t.refs) > 0 || t.dynamic {
		in.templates[tpl] = t
	}
	return t
}

// template returns the recorded scan of tpl: zero when tpl refers to no
// step.
func (in *checkInfo) template(tpl string) templateScan { return in.templates[tpl] }

// noteTemplates scans every string in vs, also nested in maps and slices.
func (in *checkInfo) noteTemplates(vs ...any) {
	for _, v := range vs {
		in.noteValue(v)
	}
}

func (in *checkInfo) noteValue(v any) {
	switch v := v.(type) {
	case string:
		in.scanTemplate(v)
	case map[string]any:
		for _, e := range v {
			in.noteValue(e)
		}
	case map[string]string:
		for _, e := range v {
			in.scanTemplate(e)
		}
	case []any:
		for _, e := range v {
			in.noteValue(e)
		}
	}
}

// nodeTemplates lists the values of node n whose strings are templates
// Lower reads step references from: what lowerStep, lowerParallel and
// lowerFanOut pass to lowerer.refs.
func nodeTemplates(n pipeline.Node) []any {
	switch n := n.(type) {
	case *pipeline.Step:
		return stepTemplates(n)
	case *pipeline.Parallel:
		var out []any
		for _, b := range n.Branches {
			out = append(out, b.PromptTemplate, b.ExecutorConfig)
		}
		return out
	case *pipeline.FanOut:
		return []any{n.PromptTemplate, n.ExecutorConfig}
	}
	return nil
}

// stepTemplates lists the template-holding values of step s.
func stepTemplates(s *pipeline.Step) []any {
	templates := []any{s.PromptTemplate, s.ExecutorConfig}
	if w := s.OnFailure.Webhook; w != nil {
		templates = append(templates, w.URL, w.Headers, w.Payload)
	}
	return append(templates, trustTemplates(s)...)
}
