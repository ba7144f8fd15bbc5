package asl

import "strings"

// Transition is one way out of a state, as drawn in a graph of the
// machine.
type Transition struct {
	To   string
	Kind TransitionKind
	// Condition is a Choice rule's condition (KindChoice).
	Condition any
	// Errors are a Catcher's ErrorEquals (KindCatch).
	Errors []string
	// Branch is the 0-based index of a Parallel branch (KindBranch).
	Branch int
}

// TransitionKind says what a Transition is.
type TransitionKind int

// Kinds of transitions.
const (
	KindNext    TransitionKind = iota // Next
	KindChoice                        // a Choice rule's Next
	KindDefault                       // a Choice's Default
	KindCatch                         // a Catcher's Next: the failure path
	KindBranch                        // a Parallel branch's StartAt (its states are Branches[Branch].States)
	KindItem                          // a Map's ItemProcessor.StartAt
)

// Transitions lists the ways out of st in the order a graph draws them:
// a Parallel's branches and a Map's item processor first, then the Choice
// rules in order, the Default, Next, and the Catchers. Empty targets
// (no Default, an End state) are left out.
func Transitions(st State) []Transition {
	var ts []Transition
	next := func(to string) {
		if to != "" {
			ts = append(ts, Transition{To: to, Kind: KindNext})
		}
	}
	catches := func(cs []Catcher) {
		for _, c := range cs {
			ts = append(ts, Transition{To: c.Next, Kind: KindCatch, Errors: c.ErrorEquals})
		}
	}
	switch st := st.(type) {
	case *Pass:
		next(st.Next)
	case *Task:
		next(st.Next)
		catches(st.Catch)
	case *Choice:
		for _, r := range st.Choices {
			if r.Next != "" {
				ts = append(ts, Transition{To: r.Next, Kind: KindChoice, Condition: r.Condition})
			}
		}
		if st.Default != "" {
			ts = append(ts, Transition{To: st.Default, Kind: KindDefault})
		}
	case *Wait:
		next(st.Next)
	case *Parallel:
		for i, b := range st.Branches {
			ts = append(ts, Transition{To: b.StartAt, Kind: KindBranch, Branch: i})
		}
		next(st.Next)
		catches(st.Catch)
	case *Map:
		ts = append(ts, Transition{To: st.ItemProcessor.StartAt, Kind: KindItem})
		next(st.Next)
		catches(st.Catch)
	}
	return ts
}

// Label is how a graph names the transition: a Choice rule's condition
// (the body of its JSONata expression, whole), "otherwise" for a Default,
// a Catcher's errors, "each item" for a Map's item processor; "" for Next
// and for a Parallel branch, which each graph names its own way. Dashed
// reports the failure path (a Catcher).
func (t Transition) Label() (label string, dashed bool) {
	switch t.Kind {
	case KindChoice:
		s, _ := t.Condition.(string)
		if body, ok := ExprBody(s); ok {
			s = body
		}
		return s, false
	case KindDefault:
		return "otherwise", false
	case KindCatch:
		return strings.Join(t.Errors, ", "), true
	case KindItem:
		return "each item", false
	}
	return "", false
}
