package webui

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/store"
)

// The graph is the compiled state machine drawn as an SVG, laid out in
// layers: each state sits one layer below the deepest state that leads
// to it (back edges of loops left out of the ranking), and the states of
// a layer are ordered by where their predecessors sit (one barycentre
// pass). Parallel branches and Map item processors are drawn inline,
// under an edge from their state. Each state is coloured by what
// happened to it in a run: the status of its step's last record, else
// whether the run entered it, and the state the run is in now.

// Node kinds of the graph's CSS (class "k-<kind>") and states ("s-<state>").
const (
	stateUnvisited = "none"
	stateVisited   = "visited"
	stateActive    = "active"
)

type gnode struct {
	name, kind string
	layer, pos int
	x, y       int
	state      string // stateUnvisited, stateVisited, stateActive or a step status
	note       string // the tooltip: kind, status, confidence
}

type gedge struct {
	from, to int
	label    string
	dashed   bool
	back     bool
}

// Graph geometry, in SVG user units.
const (
	nodeW  = 150
	nodeH  = 26
	gapX   = 16
	gapY   = 28
	margin = 12
	// maxGraphStates bounds what is drawn; a larger machine shows the
	// first ones and says so.
	maxGraphStates = 400
)

// rerunPrefix starts the names of the states the compiler adds for
// reruns (loading earlier steps, jumping to the first step run again):
// they are left out of the graph unless the run entered them.
const rerunPrefix = "Rerun: "

// runFacts is what a run tells the graph: its steps' last records and
// the states it entered.
type runFacts struct {
	steps   map[string]store.StepRecord
	entered map[string]bool
	active  map[string]bool
	waiting map[string]bool // states with a pending approval
}

func factsOf(steps []store.StepRecord, history []store.HistoryEvent, pending ...string) *runFacts {
	f := &runFacts{steps: map[string]store.StepRecord{}, entered: map[string]bool{}, active: map[string]bool{}, waiting: map[string]bool{}}
	for _, p := range pending {
		f.waiting[p] = true
	}
	for _, s := range steps {
		f.steps[s.Name] = s // execution order: the last attempt wins
	}
	for _, e := range history {
		switch e.Type {
		case "StateEntered":
			f.entered[e.State] = true
			f.active[e.State] = true
		case "StateExited":
			delete(f.active, e.State)
		}
	}
	return f
}

// drawGraph lays sm out and returns its SVG; facts (nil: none) colour it.
func drawGraph(sm *asl.StateMachine, facts *runFacts) template.HTML {
	if sm == nil {
		return ""
	}
	var nodes []*gnode
	var edges []gedge
	index := map[string]int{}
	var collect func(states asl.States)
	add := func(name, kind string) int {
		if i, ok := index[name]; ok {
			return i
		}
		index[name] = len(nodes)
		nodes = append(nodes, &gnode{name: name, kind: kind})
		return index[name]
	}
	type pending struct {
		from, to, label string
		dashed          bool
	}
	var links []pending
	collect = func(states asl.States) {
		for name, st := range states.All() {
			if len(nodes) >= maxGraphStates {
				return
			}
			if strings.HasPrefix(name, rerunPrefix) && (facts == nil || !facts.entered[name]) {
				continue // the rerun machinery, drawn only in a rerun
			}
			add(name, st.Type())
			for _, t := range asl.Transitions(st) {
				l := pending{from: name, to: t.To}
				l.label, l.dashed = t.Label()
				switch t.Kind {
				case asl.KindChoice:
					l.label = clip(l.label, 120)
				case asl.KindBranch:
					collect(st.(*asl.Parallel).Branches[t.Branch].States)
					l.label = fmt.Sprintf("branch %d", t.Branch+1)
				case asl.KindItem:
					collect(st.(*asl.Map).ItemProcessor.States)
				}
				links = append(links, l)
			}
		}
	}
	collect(sm.States)
	if len(nodes) == 0 {
		return ""
	}
	out := make([][]int, len(nodes))
	for _, l := range links {
		from, ok1 := index[l.from]
		to, ok2 := index[l.to]
		if !ok1 || !ok2 {
			continue
		}
		edges = append(edges, gedge{from: from, to: to, label: l.label, dashed: l.dashed})
		out[from] = append(out[from], len(edges)-1)
	}
	rank(nodes, edges, out, index[sm.StartAt])
	order(nodes, edges)
	colour(nodes, facts)
	return render(nodes, edges)
}

// rank gives each node its layer: the longest path to it from start (or
// from the first node not reached), back edges found by a depth-first
// search left out.
func rank(nodes []*gnode, edges []gedge, out [][]int, start int) {
	const (
		white = iota
		grey
		black
	)
	colour := make([]int, len(nodes))
	var topo []int // reverse post-order
	var dfs func(n int)
	dfs = func(n int) {
		colour[n] = grey
		for _, ei := range out[n] {
			to := edges[ei].to
			switch colour[to] {
			case white:
				dfs(to)
			case grey:
				edges[ei].back = true
			}
		}
		colour[n] = black
		topo = append(topo, n)
	}
	dfs(start)
	for i := range nodes {
		if colour[i] == white {
			dfs(i)
		}
	}
	slices.Reverse(topo)
	for _, n := range topo {
		for _, ei := range out[n] {
			e := edges[ei]
			if !e.back && nodes[e.to].layer < nodes[n].layer+1 {
				nodes[e.to].layer = nodes[n].layer + 1
			}
		}
	}
}

// order places the nodes of each layer: by the mean position of their
// predecessors in the layers above, ties in discovery order.
func order(nodes []*gnode, edges []gedge) {
	layers := map[int][]int{}
	maxLayer := 0
	for i, n := range nodes {
		layers[n.layer] = append(layers[n.layer], i)
		maxLayer = max(maxLayer, n.layer)
	}
	preds := make([][]int, len(nodes))
	for _, e := range edges {
		if !e.back {
			preds[e.to] = append(preds[e.to], e.from)
		}
	}
	for l := 0; l <= maxLayer; l++ {
		ids := layers[l]
		key := make(map[int]float64, len(ids))
		for k, id := range ids {
			sum, n := 0.0, 0
			for _, p := range preds[id] {
				if nodes[p].layer < l {
					sum += float64(nodes[p].pos)
					n++
				}
			}
			if n > 0 {
				key[id] = sum / float64(n)
			} else {
				key[id] = float64(k)
			}
		}
		slices.SortStableFunc(ids, func(a, b int) int {
			switch {
			case key[a] < key[b]:
				return -1
			case key[a] > key[b]:
				return 1
			}
			return 0
		})
		for p, id := range ids {
			nodes[id].pos = p
		}
	}
	width := 0
	for _, ids := range layers {
		width = max(width, len(ids))
	}
	for l := 0; l <= maxLayer; l++ {
		ids := layers[l]
		offset := (width - len(ids)) * (nodeW + gapX) / 2 // centre each layer
		for _, id := range ids {
			n := nodes[id]
			n.x = margin + offset + n.pos*(nodeW+gapX)
			n.y = margin + n.layer*(nodeH+gapY)
		}
	}
}

func colour(nodes []*gnode, f *runFacts) {
	for _, n := range nodes {
		n.state = stateUnvisited
		n.note = n.kind
		if f == nil {
			continue
		}
		if rec, ok := f.steps[n.name]; ok {
			n.state = string(rec.Status)
			n.note += ", step " + string(rec.Status)
			if c := rec.EffectiveConfidence; c != nil {
				n.note += fmt.Sprintf(", confidence %.2f", *c)
			}
			if rec.Attempt > 1 {
				n.note += fmt.Sprintf(", attempt %d", rec.Attempt)
			}
			continue
		}
		switch {
		case f.active[n.name] && f.waiting[n.name]:
			n.state, n.note = string(store.StepWaiting), n.note+", waiting for approval"
		case f.active[n.name]:
			n.state, n.note = stateActive, n.note+", running now"
		case f.entered[n.name]:
			n.state, n.note = stateVisited, n.note+", entered"
			if n.kind == asl.TypeFail {
				n.state = "failed"
			}
			if n.kind == asl.TypeSucceed {
				n.state = "completed"
			}
		}
	}
}

func render(nodes []*gnode, edges []gedge) template.HTML {
	w, h := 0, 0
	for _, n := range nodes {
		w, h = max(w, n.x+nodeW+margin), max(h, n.y+nodeH+margin)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="state graph">`, w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z"/></marker></defs>`)
	for _, e := range edges {
		a, z := nodes[e.from], nodes[e.to]
		x1, y1 := a.x+nodeW/2, a.y+nodeH
		x2, y2 := z.x+nodeW/2, z.y
		cls := "edge"
		if e.dashed {
			cls += " catch"
		}
		var d string
		if e.back || z.layer <= a.layer {
			// up or sideways: leave from the right, come in on the right
			x1, y1 = a.x+nodeW, a.y+nodeH/2
			x2, y2 = z.x+nodeW, z.y+nodeH/2
			bend := nodeW/2 + 10*abs(a.layer-z.layer)
			d = fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+bend, y1, x2+bend, y2, x2, y2)
			cls += " back"
		} else {
			mid := (y1 + y2) / 2
			d = fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1, mid, x2, mid, x2, y2)
		}
		fmt.Fprintf(&b, `<path class="%s" d="%s" marker-end="url(#arrow)">`, cls, d)
		if e.label != "" {
			fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(e.label))
		}
		b.WriteString(`</path>`)
	}
	for _, n := range nodes {
		shape := "rect"
		rx := 4
		switch n.kind {
		case asl.TypeChoice:
			rx = 16
		case asl.TypeSucceed, asl.TypeFail:
			rx = 16
		}
		fmt.Fprintf(&b, `<g class="node k-%s s-%s" data-state="%s" transform="translate(%d %d)"><title>%s</title>`,
			strings.ToLower(n.kind), n.state, template.HTMLEscapeString(n.name), n.x, n.y,
			template.HTMLEscapeString(n.name+" ("+n.note+")"))
		fmt.Fprintf(&b, `<%s width="%d" height="%d" rx="%d"/>`, shape, nodeW, nodeH, rx)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text></g>`, nodeW/2, nodeH/2+4, template.HTMLEscapeString(clip(n.name, 22)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text above is escaped
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// clip cuts s to n characters with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
