package compiler

import (
	"fmt"
	"io"
	"strings"

	"github.com/stepline/stepline/shared/asl"
)

// Graph formats.
const (
	GraphMermaid = "mermaid"
	GraphDot     = "dot"
)

// edge is one transition of the state machine.
type edge struct {
	from, to, label string
	dashed          bool // a Catch: the failure path
}

// graph is the drawable form of a state machine: states (with their kind),
// groups (Parallel branches and Map item processors) and edges.
type graph struct {
	nodes  []gnode
	edges  []edge
	groups []ggroup
}

type gnode struct{ name, kind string }

type ggroup struct {
	name  string
	nodes []gnode
	edges []edge
}

// WriteGraph draws a state machine as a Mermaid flowchart or a Graphviz
// digraph: every state, the when: conditions on Choice edges, Parallel
// and Map groups as subgraphs, and failure paths dashed.
func WriteGraph(w io.Writer, sm *asl.StateMachine, format string) error {
	g := &graph{}
	g.nodes, g.edges = collect(sm.States, g)
	switch format {
	case GraphMermaid:
		return g.mermaid(w, sm.StartAt)
	case GraphDot:
		return g.dot(w, sm.StartAt)
	}
	return fmt.Errorf("unknown graph format %q (want %s or %s)", format, GraphMermaid, GraphDot)
}

func collect(states asl.States, g *graph) ([]gnode, []edge) {
	var nodes []gnode
	var edges []edge
	for name, st := range states.All() {
		nodes = append(nodes, gnode{name, st.Type()})
		for _, t := range asl.Transitions(st) {
			e := edge{from: name, to: t.To}
			e.label, e.dashed = t.Label()
			switch t.Kind {
			case asl.KindChoice:
				e.label = shortCondition(e.label)
			case asl.KindBranch:
				gn, ge := collect(st.(*asl.Parallel).Branches[t.Branch].States, g)
				g.groups = append(g.groups, ggroup{name: fmt.Sprintf("%s (branch %d)", name, t.Branch+1), nodes: gn, edges: ge})
				e.label = "branch"
			case asl.KindItem:
				gn, ge := collect(st.(*asl.Map).ItemProcessor.States, g)
				g.groups = append(g.groups, ggroup{name: name + " (each item)", nodes: gn, edges: ge})
			}
			edges = append(edges, e)
		}
	}
	return nodes, edges
}

// shortCondition shortens a Choice condition for an edge label.
func shortCondition(s string) string {
	s = strings.ReplaceAll(s, "$states.input.status = ", "status ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func mermaidID(name string) string {
	var b strings.Builder
	b.WriteString("s_")
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "_%x", r)
		}
	}
	return b.String()
}

func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

func (g *graph) mermaid(w io.Writer, start string) error {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	node := func(n gnode, indent string) {
		id, text := mermaidID(n.name), mermaidText(n.name)
		switch n.kind {
		case asl.TypeChoice:
			fmt.Fprintf(&b, "%s%s{\"%s\"}\n", indent, id, text)
		case asl.TypeSucceed:
			fmt.Fprintf(&b, "%s%s([\"%s\"])\n", indent, id, text)
		case asl.TypeFail:
			fmt.Fprintf(&b, "%s%s[[\"%s\"]]\n", indent, id, text)
		default:
			fmt.Fprintf(&b, "%s%s[\"%s\"]\n", indent, id, text)
		}
	}
	arrow := func(e edge, indent string) {
		a := "-->"
		if e.dashed {
			a = "-.->"
		}
		if e.label != "" {
			fmt.Fprintf(&b, "%s%s %s|\"%s\"| %s\n", indent, mermaidID(e.from), a, mermaidText(e.label), mermaidID(e.to))
		} else {
			fmt.Fprintf(&b, "%s%s %s %s\n", indent, mermaidID(e.from), a, mermaidID(e.to))
		}
	}
	for _, n := range g.nodes {
		node(n, "  ")
	}
	for i, gr := range g.groups {
		fmt.Fprintf(&b, "  subgraph group%d[\"%s\"]\n", i, mermaidText(gr.name))
		for _, n := range gr.nodes {
			node(n, "    ")
		}
		for _, e := range gr.edges {
			arrow(e, "    ")
		}
		b.WriteString("  end\n")
	}
	for _, e := range g.edges {
		arrow(e, "  ")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (g *graph) dot(w io.Writer, start string) error {
	var b strings.Builder
	b.WriteString("digraph pipeline {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n")
	shape := map[string]string{asl.TypeChoice: "diamond", asl.TypeSucceed: "doublecircle", asl.TypeFail: "octagon", asl.TypeParallel: "box3d", asl.TypeMap: "box3d"}
	node := func(n gnode, indent string) {
		sh := shape[n.kind]
		if sh == "" {
			sh = "box"
		}
		fmt.Fprintf(&b, "%s%q [shape=%s];\n", indent, n.name, sh)
	}
	arrow := func(e edge, indent string) {
		attrs := []string{}
		if e.label != "" {
			attrs = append(attrs, fmt.Sprintf("label=%q", e.label))
		}
		if e.dashed {
			attrs = append(attrs, "style=dashed")
		}
		fmt.Fprintf(&b, "%s%q -> %q", indent, e.from, e.to)
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString(";\n")
	}
	for _, n := range g.nodes {
		node(n, "  ")
	}
	for i, gr := range g.groups {
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%q;\n", i, gr.name)
		for _, n := range gr.nodes {
			node(n, "    ")
		}
		for _, e := range gr.edges {
			arrow(e, "    ")
		}
		b.WriteString("  }\n")
	}
	for _, e := range g.edges {
		arrow(e, "  ")
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
