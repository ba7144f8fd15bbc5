package compiler

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/pipeline"
)

// MaxStateNameLength is Step Functions' limit on a state's name, in
// characters. Step names are at most 64 characters, so the states that
// can pass it are those named after two names, a parallel branch's
// "<group>/<branch>".
const MaxStateNameLength = 80

// checkStateNames reports each node whose states have a name Step
// Functions refuses, once, at the node's name.
func (l *lowerer) checkStateNames() {
	reported := map[string]bool{}
	var walk func(states asl.States)
	walk = func(states asl.States) {
		for name, st := range states.All() {
			if n := utf8.RuneCountInString(name); n > MaxStateNameLength {
				where, pos := l.stateOwner(name)
				if !reported[where] {
					reported[where] = true
					l.ds.errorf(pos, "%s: state name %q has %d characters, over Step Functions' limit of %d: shorten the names it is made of", where, name, n, MaxStateNameLength)
				}
			}
			switch st := st.(type) {
			case *asl.Parallel:
				for _, b := range st.Branches {
					walk(b.States)
				}
			case *asl.Map:
				walk(st.ItemProcessor.States)
			}
		}
	}
	walk(l.sm.States)
}

// stateOwner names the node a state was made for, and where its name is:
// a parallel branch for "<group>/<branch>...", else the node with the
// longest name the state's name holds.
func (l *lowerer) stateOwner(state string) (string, pipeline.Pos) {
	where, pos, best := fmt.Sprintf("pipeline %q", l.p.Name), l.p.Pos, 0
	for _, n := range l.p.Steps {
		if g, ok := n.(*pipeline.Parallel); ok {
			for _, b := range g.Branches {
				if strings.HasPrefix(state, g.Name+"/"+b.Name) {
					return fmt.Sprintf("branch %q of parallel %q", b.Name, g.Name), fieldPos(b.Fields, "name", b.Pos)
				}
			}
		}
		if name := n.NodeName(); len(name) > best && strings.Contains(state, name) {
			where, pos, best = fmt.Sprintf("step %q", name), namePos(n), len(name)
		}
	}
	return where, pos
}

// namePos is where the node or branch called name is named in the file;
// the pipeline's position when none is.
func (l *lowerer) namePos(name string) pipeline.Pos {
	for _, n := range l.p.Steps {
		if n.NodeName() == name {
			return namePos(n)
		}
		if g, ok := n.(*pipeline.Parallel); ok {
			for _, b := range g.Branches {
				if b.Name == name {
					return fieldPos(b.Fields, "name", b.Pos)
				}
			}
		}
	}
	return l.p.Pos
}
