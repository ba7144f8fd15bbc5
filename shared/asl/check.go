package asl

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Problem is one finding of Check.
type Problem struct {
	// State names the state the problem is about; "" for the machine itself.
	State string
	Msg   string
	// Warning marks something allowed but worth a look, such as a Choice
	// without Default that can fall through to States.NoChoiceMatched.
	Warning bool
}

func (p Problem) Error() string {
	if p.State == "" {
		return p.Msg
	}
	return fmt.Sprintf("state %q: %s", p.State, p.Msg)
}

// ErrorList is the error Validate and Parse return: every error found, in
// definition order.
type ErrorList []Problem

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	msgs := make([]string, len(l))
	for i, p := range l {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// Validate checks the definition and returns an ErrorList of its errors, or
// nil. Warnings are left out; see Check.
func (m *StateMachine) Validate() error {
	var errs ErrorList
	for _, p := range m.Check() {
		if !p.Warning {
			errs = append(errs, p)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Check returns every problem of the definition, errors and warnings, in
// definition order: StartAt and every Next, Default and Catch target exist in
// the same scope; every state is reachable; Next/End are consistent; state
// names are unique in the whole machine and at most 80 characters; Retry and
// Catch follow the rules on States.ALL, intervals and rates; Choice rules
// have a Condition and a Next; Wait has exactly one of Seconds and
// Timestamp; numeric fields are integers in range or JSONata strings;
// variables are valid names, never "states", and an inner scope (Parallel
// branch, Map iteration) never assigns a name an outer scope uses;
// $states.result and $states.errorOutput appear only where the States
// Language allows them; the query language is JSONata.
func (m *StateMachine) Check() []Problem {
	probs := m.CheckStates()
	if len(probs) == 0 {
		if b, err := m.MarshalJSON(); err != nil {
			probs = append(probs, Problem{Msg: fmt.Sprintf("definition cannot be encoded: %v", err)})
		} else if len(b) > MaxDefinitionBytes {
			probs = append(probs, Problem{Msg: fmt.Sprintf("definition is %d bytes, over the %d-byte limit", len(b), MaxDefinitionBytes)})
		}
	}
	return probs
}

// CheckStates is Check without Step Functions' size limit, for a caller
// that measures the definition against a limit of its own (the local
// engine runs larger ones when asked).
func (m *StateMachine) CheckStates() []Problem {
	c := &checker{names: map[string]bool{}}
	switch m.QueryLanguage {
	case JSONata:
	case "", JSONPath:
		c.errorf("", "QueryLanguage must be %q (JSONPath definitions are not supported)", JSONata)
	default:
		c.errorf("", "QueryLanguage %q is not a query language (want %q)", m.QueryLanguage, JSONata)
	}
	if m.TimeoutSeconds < 0 {
		c.errorf("", "TimeoutSeconds must not be negative")
	}
	c.scope("", "", m.StartAt, m.States, nil)
	return c.probs
}

type checker struct {
	probs []Problem
	names map[string]bool // every state name in the machine
}

func (c *checker) errorf(state, format string, args ...any) {
	c.probs = append(c.probs, Problem{State: state, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) warnf(state, format string, args ...any) {
	c.probs = append(c.probs, Problem{State: state, Msg: fmt.Sprintf(format, args...), Warning: true})
}

// scope checks one States object. owner is the Parallel or Map state that
// holds it ("" at the top level) and where says which of its parts it is.
func (c *checker) scope(owner, where, startAt string, states States, outer map[string]bool) {
	prefix := where
	if prefix != "" {
		prefix += ": "
	}
	if states.Len() == 0 {
		c.errorf(owner, "%sStates is empty", prefix)
		return
	}
	if startAt == "" {
		c.errorf(owner, "%sStartAt is missing", prefix)
	} else if _, ok := states.Get(startAt); !ok {
		c.errorf(owner, "%sStartAt %q does not exist", prefix, startAt)
	}

	// Variables this scope assigns, checked against the outer scopes.
	own := map[string]bool{}
	for name, st := range states.All() {
		for _, v := range assignedVars(st) {
			if !validVarName(v) {
				c.errorf(name, "Assign: %q is not a valid variable name", v)
				continue
			}
			if v == "states" {
				c.errorf(name, "Assign: variable name \"states\" is reserved")
				continue
			}
			if outer[v] {
				c.errorf(name, "Assign: variable %q is already used by an outer scope; an inner scope must not assign it", v)
				continue
			}
			own[v] = true
		}
	}
	visible := make(map[string]bool, len(outer)+len(own))
	for v := range outer {
		visible[v] = true
	}
	for v := range own {
		visible[v] = true
	}

	for name, st := range states.All() {
		if c.names[name] {
			c.errorf(name, "name is used by more than one state")
		}
		c.names[name] = true
		if utf8.RuneCountInString(name) > MaxStateNameLength {
			c.errorf(name, "name is longer than %d characters", MaxStateNameLength)
		}
		if strings.TrimSpace(name) == "" {
			c.errorf(name, "name is blank")
		}
		c.state(name, st, states, visible)
	}

	// Reachability from StartAt.
	if _, ok := states.Get(startAt); !ok {
		return
	}
	reached := map[string]bool{startAt: true}
	queue := []string{startAt}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		st, _ := states.Get(n)
		for _, t := range transitions(st) {
			if _, ok := states.Get(t); ok && !reached[t] {
				reached[t] = true
				queue = append(queue, t)
			}
		}
	}
	for name := range states.All() {
		if !reached[name] {
			c.errorf(name, "state is unreachable from StartAt %q", startAt)
		}
	}
}

// transitions lists the states st can move to within its scope.
func transitions(st State) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	switch v := st.(type) {
	case *Pass:
		add(v.Next)
	case *Wait:
		add(v.Next)
	case *Task:
		add(v.Next)
		for _, ct := range v.Catch {
			add(ct.Next)
		}
	case *Parallel:
		add(v.Next)
		for _, ct := range v.Catch {
			add(ct.Next)
		}
	case *Map:
		add(v.Next)
		for _, ct := range v.Catch {
			add(ct.Next)
		}
	case *Choice:
		for _, r := range v.Choices {
			add(r.Next)
		}
		add(v.Default)
	}
	return out
}

func assignedVars(st State) []string {
	var maps []map[string]any
	switch v := st.(type) {
	case *Pass:
		maps = append(maps, v.Assign)
	case *Wait:
		maps = append(maps, v.Assign)
	case *Task:
		maps = append(maps, v.Assign)
		for _, ct := range v.Catch {
			maps = append(maps, ct.Assign)
		}
	case *Parallel:
		maps = append(maps, v.Assign)
		for _, ct := range v.Catch {
			maps = append(maps, ct.Assign)
		}
	case *Map:
		maps = append(maps, v.Assign)
		for _, ct := range v.Catch {
			maps = append(maps, ct.Assign)
		}
	case *Choice:
		maps = append(maps, v.Assign)
		for _, r := range v.Choices {
			maps = append(maps, r.Assign)
		}
	}
	var names []string
	for _, m := range maps {
		for k := range m {
			names = append(names, k)
		}
	}
	return names
}

// validVarName reports whether s is a variable's name: at most 80 bytes
// that ^[A-Za-z_][A-Za-z0-9_]*$ matches (read without the regexp engine:
// the engine's compile checks every Assign key of a definition).
func validVarName(s string) bool {
	if s == "" || len(s) > 80 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// VisibleVariables returns the variable names a state in the given chain of
// scopes can reference: everything assigned in the scope or its outer
// scopes. The engine uses it to bind variables for JSONata.
func VisibleVariables(scopes ...States) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range scopes {
		for _, st := range s.All() {
			for _, v := range assignedVars(st) {
				if !seen[v] {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
	}
	return out
}

func (c *checker) next(name string, scope States, next string, end bool) {
	switch {
	case next != "" && end:
		c.errorf(name, "has both Next and End")
	case next == "" && !end:
		c.errorf(name, "has neither Next nor End")
	}
	if next != "" {
		c.target(name, scope, "Next", next)
	}
}

func (c *checker) target(name string, scope States, field, target string) {
	if _, ok := scope.Get(target); !ok {
		c.errorf(name, "%s %q does not exist", field, target)
	}
}

func (c *checker) queryLanguage(name, ql string) {
	if ql != "" && ql != JSONata {
		c.errorf(name, "QueryLanguage %q is not supported (want %q)", ql, JSONata)
	}
}

// Where a JSONata string may reference $states.result and $states.errorOutput.
const (
	refNone   = iota // only $states.input and $states.context
	refResult        // also $states.result
	refError         // also $states.errorOutput
)

// value checks each JSONata string v holds, at any depth, reporting a
// problem at field, or at field.key when key is not "" (an Assign's
// member: the name is joined only for a problem).
func (c *checker) value(name, field string, v any, refs int) {
	c.valueAt(name, field, "", v, refs)
}

func (c *checker) valueAt(name, field, key string, v any, refs int) {
	switch x := v.(type) {
	case string:
		body, ok := ExprBody(x)
		if !ok {
			return
		}
		at := func() string {
			if key == "" {
				return field
			}
			return field + "." + key
		}
		if body == "" {
			c.errorf(name, "%s: empty JSONata expression", at())
			return
		}
		if refs != refResult && strings.Contains(body, "$states.result") {
			c.errorf(name, "%s: $states.result is not available here", at())
		}
		if refs != refError && strings.Contains(body, "$states.errorOutput") {
			c.errorf(name, "%s: $states.errorOutput is not available here (only in a Catcher's Output and Assign)", at())
		}
	case map[string]any:
		for _, e := range x {
			c.valueAt(name, field, key, e, refs)
		}
	case []any:
		for _, e := range x {
			c.valueAt(name, field, key, e, refs)
		}
	}
}

// intField checks a field holding a number or a JSONata string.
func (c *checker) intField(name, field string, v any, min int) {
	if v == nil {
		return
	}
	if s, ok := v.(string); ok {
		if !IsExpr(s) {
			c.errorf(name, "%s must be a number or a JSONata string, not %q", field, s)
			return
		}
		c.value(name, field, s, refNone)
		return
	}
	n, ok := number(v)
	if !ok || n != math.Trunc(n) {
		c.errorf(name, "%s must be an integer", field)
		return
	}
	if n < float64(min) {
		c.errorf(name, "%s must be at least %d", field, min)
	}
}

// number converts the numeric types a definition built in Go or decoded from
// JSON may hold.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	}
	return 0, false
}

func (c *checker) assign(name, field string, m map[string]any, refs int) {
	for k, v := range m {
		c.valueAt(name, field, k, v, refs)
	}
}

func (c *checker) retry(name string, rs []Retrier) {
	for i, r := range rs {
		f := fmt.Sprintf("Retry[%d]", i)
		c.errorEquals(name, f, r.ErrorEquals, i == len(rs)-1)
		if r.IntervalSeconds < 0 {
			c.errorf(name, "%s.IntervalSeconds must be positive", f)
		}
		if r.MaxAttempts != nil && *r.MaxAttempts < 0 {
			c.errorf(name, "%s.MaxAttempts must not be negative", f)
		}
		if r.BackoffRate != 0 && r.BackoffRate < 1 {
			c.errorf(name, "%s.BackoffRate must be at least 1.0", f)
		}
		if r.MaxDelaySeconds < 0 {
			c.errorf(name, "%s.MaxDelaySeconds must be positive", f)
		}
		switch r.JitterStrategy {
		case "", JitterFull, JitterNone:
		default:
			c.errorf(name, "%s.JitterStrategy %q is not FULL or NONE", f, r.JitterStrategy)
		}
	}
}

func (c *checker) catch(name string, scope States, cs []Catcher) {
	for i, ct := range cs {
		f := fmt.Sprintf("Catch[%d]", i)
		c.errorEquals(name, f, ct.ErrorEquals, i == len(cs)-1)
		if ct.Next == "" {
			c.errorf(name, "%s.Next is missing", f)
		} else {
			c.target(name, scope, f+".Next", ct.Next)
		}
		c.value(name, f+".Output", ct.Output, refError)
		c.assign(name, f+".Assign", ct.Assign, refError)
	}
}

func (c *checker) errorEquals(name, field string, names []string, last bool) {
	if len(names) == 0 {
		c.errorf(name, "%s.ErrorEquals is empty", field)
		return
	}
	for _, e := range names {
		if e == StatesALL {
			if len(names) > 1 {
				c.errorf(name, "%s.ErrorEquals: States.ALL must appear alone", field)
			}
			if !last {
				c.errorf(name, "%s: a rule with States.ALL must be the last one", field)
			}
		}
		if e == "" {
			c.errorf(name, "%s.ErrorEquals holds an empty name", field)
		}
	}
}

func (c *checker) state(name string, st State, scope States, visible map[string]bool) {
	switch v := st.(type) {
	case *Pass:
		c.queryLanguage(name, v.QueryLanguage)
		c.next(name, scope, v.Next, v.End)
		c.value(name, "Output", v.Output, refNone)
		c.assign(name, "Assign", v.Assign, refNone)
	case *Task:
		c.queryLanguage(name, v.QueryLanguage)
		c.next(name, scope, v.Next, v.End)
		if v.Resource == "" {
			c.errorf(name, "Resource is missing")
		}
		c.value(name, "Arguments", v.Arguments, refNone)
		c.value(name, "Credentials", v.Credentials, refNone)
		c.intField(name, "TimeoutSeconds", v.TimeoutSeconds, 1)
		c.intField(name, "HeartbeatSeconds", v.HeartbeatSeconds, 1)
		if t, ok := number(v.TimeoutSeconds); ok {
			if h, ok := number(v.HeartbeatSeconds); ok && h >= t {
				c.errorf(name, "HeartbeatSeconds must be smaller than TimeoutSeconds")
			}
		}
		c.value(name, "Output", v.Output, refResult)
		c.assign(name, "Assign", v.Assign, refResult)
		c.retry(name, v.Retry)
		c.catch(name, scope, v.Catch)
	case *Choice:
		c.queryLanguage(name, v.QueryLanguage)
		if len(v.Choices) == 0 {
			c.errorf(name, "Choices is empty")
		}
		for i, r := range v.Choices {
			f := fmt.Sprintf("Choices[%d]", i)
			switch cond := r.Condition.(type) {
			case bool:
			case string:
				if !IsExpr(cond) {
					c.errorf(name, "%s.Condition must be a boolean or a JSONata string", f)
				}
				c.value(name, f+".Condition", cond, refNone)
			case nil:
				c.errorf(name, "%s.Condition is missing", f)
			default:
				c.errorf(name, "%s.Condition must be a boolean or a JSONata string", f)
			}
			if r.Next == "" {
				c.errorf(name, "%s.Next is missing", f)
			} else {
				c.target(name, scope, f+".Next", r.Next)
			}
			c.value(name, f+".Output", r.Output, refNone)
			c.assign(name, f+".Assign", r.Assign, refNone)
		}
		if v.Default != "" {
			c.target(name, scope, "Default", v.Default)
		} else if len(v.Choices) > 0 && !alwaysTrue(v.Choices[len(v.Choices)-1].Condition) {
			c.warnf(name, "no Default: when no Condition holds the run fails with %s", StatesNoChoiceMatched)
		}
		c.value(name, "Output", v.Output, refNone)
		c.assign(name, "Assign", v.Assign, refNone)
	case *Parallel:
		c.queryLanguage(name, v.QueryLanguage)
		c.next(name, scope, v.Next, v.End)
		c.value(name, "Arguments", v.Arguments, refNone)
		if len(v.Branches) == 0 {
			c.errorf(name, "Branches is empty")
		}
		for i, b := range v.Branches {
			c.scope(name, fmt.Sprintf("Branches[%d]", i), b.StartAt, b.States, visible)
		}
		c.value(name, "Output", v.Output, refResult)
		c.assign(name, "Assign", v.Assign, refResult)
		c.retry(name, v.Retry)
		c.catch(name, scope, v.Catch)
	case *Map:
		c.queryLanguage(name, v.QueryLanguage)
		c.next(name, scope, v.Next, v.End)
		switch items := v.Items.(type) {
		case nil, []any:
		case string:
			if !IsExpr(items) {
				c.errorf(name, "Items must be an array or a JSONata string")
			}
		default:
			c.errorf(name, "Items must be an array or a JSONata string")
		}
		c.value(name, "Items", v.Items, refNone)
		c.value(name, "ItemSelector", v.ItemSelector, refNone)
		c.intField(name, "MaxConcurrency", v.MaxConcurrency, 0)
		if pc := v.ItemProcessor.ProcessorConfig; pc != nil && pc.Mode != "" && pc.Mode != ModeInline {
			c.errorf(name, "ItemProcessor.ProcessorConfig.Mode %q is not supported (want %q)", pc.Mode, ModeInline)
		}
		c.scope(name, "ItemProcessor", v.ItemProcessor.StartAt, v.ItemProcessor.States, visible)
		c.value(name, "Output", v.Output, refResult)
		c.assign(name, "Assign", v.Assign, refResult)
		c.retry(name, v.Retry)
		c.catch(name, scope, v.Catch)
	case *Wait:
		c.queryLanguage(name, v.QueryLanguage)
		c.next(name, scope, v.Next, v.End)
		switch {
		case v.Seconds == nil && v.Timestamp == "":
			c.errorf(name, "needs Seconds or Timestamp")
		case v.Seconds != nil && v.Timestamp != "":
			c.errorf(name, "has both Seconds and Timestamp")
		}
		c.intField(name, "Seconds", v.Seconds, 0)
		if v.Timestamp != "" {
			if IsExpr(v.Timestamp) {
				c.value(name, "Timestamp", v.Timestamp, refNone)
			} else if _, err := time.Parse(time.RFC3339, v.Timestamp); err != nil {
				c.errorf(name, "Timestamp %q is not an RFC 3339 time", v.Timestamp)
			}
		}
		c.value(name, "Output", v.Output, refNone)
		c.assign(name, "Assign", v.Assign, refNone)
	case *Succeed:
		c.queryLanguage(name, v.QueryLanguage)
		c.value(name, "Output", v.Output, refNone)
	case *Fail:
		c.queryLanguage(name, v.QueryLanguage)
		c.value(name, "Error", v.Error, refNone)
		c.value(name, "Cause", v.Cause, refNone)
	case nil:
		c.errorf(name, "state is nil")
	default:
		c.errorf(name, "unsupported state type %T", st)
	}
}

// alwaysTrue reports whether a Condition is the literal true (or an
// expression that is just "true"), so that a Choice cannot fall through.
func alwaysTrue(cond any) bool {
	switch v := cond.(type) {
	case bool:
		return v
	case string:
		body, ok := ExprBody(v)
		return ok && body == "true"
	}
	return false
}
