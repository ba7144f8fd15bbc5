package compiler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// Limits and defaults of the lowering.
const (
	// MaxDefinitionBytes is Step Functions' limit on a definition, measured
	// on its compact encoding (what the CDK stack deploys).
	MaxDefinitionBytes = asl.MaxDefinitionBytes
	// MaxPayloadBytes is Step Functions' limit on a state's input, output
	// and a variable; the static part of a Task's payload must leave room
	// for the run's data.
	MaxPayloadBytes = asl.MaxPayloadBytes
	// payloadBudget is the share of MaxPayloadBytes the static part of a
	// Task's payload may take.
	payloadBudget = MaxPayloadBytes / 2
	// DefaultHumanTimeoutSeconds bounds a human step without timeout_seconds.
	DefaultHumanTimeoutSeconds = 300
	// DefaultChildTimeoutSeconds bounds a sub-pipeline step without
	// timeout_seconds.
	DefaultChildTimeoutSeconds = 86400
	// bookkeepingTimeoutSeconds bounds the Tasks that only record and
	// decide (join, failure, decision).
	bookkeepingTimeoutSeconds = 60
	// reasks is how many model calls one attempt may make: the first and
	// the structured-output runner's re-asks.
	reasks = 3
	// maxInlineRoutes caps the when: rules folded into one outcome Choice:
	// the next step's condition is checked there (no extra transition
	// when it runs); a skip goes on through a Choice of its own.
	maxInlineRoutes = 1
	// maxMapConcurrency is the most iterations an inline Map runs at once.
	maxMapConcurrency = 40
)

// Names of the states every pipeline may end in.
const (
	StateStart     = "Start run"
	StateEnded     = "Run ended"
	StateRecord    = "Record failure"
	StateCompleted = "Run completed"
	// StateRecordRun closes the record of a completed run in an Express
	// workflow, before "Run completed".
	StateRecordRun = "Record run"
	StateStopped   = "Run stopped"
	StateEscalated = "Run escalated"
	StateAborted   = "Run aborted"
	StateFailed    = "Run failed"
)

// ChildPlaceholder is the substitution placeholder of the state machine ARN
// of the pipeline named name, used by sub-pipeline steps.
func ChildPlaceholder(name string) string {
	var b strings.Builder
	b.WriteString("${Pipeline")
	up := true
	for _, r := range name {
		if r == '-' || r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	b.WriteString("Arn}")
	return b.String()
}

// Compile parses, checks and lowers one pipeline source to a state
// machine. The diagnostics hold every error and warning; the state machine
// is nil when there is any error.
func Compile(name string, src []byte) (*asl.StateMachine, Diagnostics) {
	return CompileWith(name, src, nil)
}

// CompileWith is Compile with executor configurations also checked by
// checkExecutor.
func CompileWith(name string, src []byte, checkExecutor ExecutorCheck) (*asl.StateMachine, Diagnostics) {
	_, sm, ds := Build(name, src, checkExecutor)
	return sm, ds
}

// Options adjust Lower.
type Options struct {
	// MaxDefinitionBytes is the definition size Lower refuses beyond; 0
	// means MaxDefinitionBytes. Only the local engine can run a larger
	// definition: benchmarks use it to measure how runs scale.
	MaxDefinitionBytes int
}

// Lower turns a checked pipeline into a state machine. See the package
// documentation for the shape it emits.
func Lower(f *File) (*asl.StateMachine, Diagnostics) {
	return LowerOptions(f, Options{})
}

// LowerOptions is Lower with options.
func LowerOptions(f *File, opts Options) (*asl.StateMachine, Diagnostics) {
	limit := opts.MaxDefinitionBytes
	if limit <= 0 {
		limit = MaxDefinitionBytes
	}
	l := &lowerer{f: f, p: f.Pipeline, sm: &asl.StateMachine{QueryLanguage: asl.JSONata}}
	if f.info == nil {
		l.ds.errorf(l.p.Pos, "internal: Lower needs a checked file: Load it, or Check it first")
		return nil, l.ds
	}
	l.build()
	l.checkStateNames()
	if l.ds.HasErrors() {
		return nil, l.ds
	}
	if def, err := MarshalCompact(l.sm); err == nil {
		l.stampConfig(def)
	}
	if def, err := MarshalCompact(l.sm); err != nil {
		l.ds.errorf(l.p.Pos, "internal: encode state machine: %v", err)
	} else if len(def) > limit {
		l.ds.errorf(l.p.Pos, "pipeline %q compiles to %d bytes of ASL, over Step Functions' %d-byte limit: move steps into a sub-pipeline (executor: pipeline)", l.p.Name, len(def), MaxDefinitionBytes)
	}
	if l.ds.HasErrors() {
		return nil, l.ds
	}
	return l.sm, l.ds
}

type lowerer struct {
	f      *File
	wf     WorkflowDecision // the state machine's workflow type
	info   task.Pipeline    // the run's $pipeline
	p      *pipeline.Pipeline
	sm     *asl.StateMachine
	ds     Diagnostics
	scope  when.Scope
	alias  map[string]string        // template name → step name
	added  map[string]bool          // terminal and routing states already emitted
	router map[int]string           // node index → name of its routing Choice
	conds  map[pipeline.Node]string // a node's when: as JSONata, lowered once
}

func (l *lowerer) add(states *asl.States, name string, st asl.State) {
	if err := states.Add(name, st); err != nil {
		l.ds.errorf(l.p.Pos, "internal: %v", err)
	}
}

func (l *lowerer) build() {
	l.added = map[string]bool{}
	l.router = map[int]string{}
	l.alias = map[string]string{}
	for _, n := range l.p.Steps {
		for _, name := range nodeNames(n) {
			l.alias[name] = name
			l.alias[pipeline.TemplateName(name)] = name
		}
	}
	l.scope = l.buildScope()
	l.sm.Comment = fmt.Sprintf("Stepline pipeline %q", l.p.Name)
	if l.p.Description != "" {
		l.sm.Comment += ": " + l.p.Description
	}
	l.sm.StartAt = StateStart
	l.wf = WorkflowOf(l.p)
	info := l.pipelineInfo()
	l.info = info
	if b, _ := json.Marshal(info); len(b) > payloadBudget {
		l.ds.errorf(l.p.Pos, "pipeline %q: its vars, notifications and budget take %d bytes, more than the %d bytes a state payload can spare", l.p.Name, len(b), payloadBudget)
	}
	base := map[string]any{
		"pipeline": asl.LiteralValue(toPlain(info)),
		"run": map[string]any{
			"id":            asl.Expr("$states.context.Execution.Name"),
			"execution":     asl.Expr("$states.context.Execution.Id"),
			"started_at":    asl.Expr("$states.context.Execution.StartTime"),
			"parent_run_id": asl.Expr("$exists($states.input.parent_run_id) ? $string($states.input.parent_run_id) : ''"),
		},
		"trigger": asl.Expr("$exists($states.input.trigger) ? $states.input.trigger : {}"),
		"usage":   map[string]any{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0},
		"last":    nil,
	}
	l.add(&l.sm.States, StateStart, &asl.Choice{
		Comment: "Set the run's variables: every later state reads them. A rerun (input.rerun) sets them with the earlier run's outputs.",
		Choices: []asl.ChoiceRule{{Condition: asl.Expr("$exists(" + rerunInput + ")"), Next: StateRerunLoad}},
		Assign:  base,
		Default: l.routeTo(0),
	})
	l.addRerun(base)
	for i, n := range l.p.Steps {
		switch n := n.(type) {
		case *pipeline.Step:
			l.lowerStep(i, n)
		case *pipeline.Parallel:
			l.lowerParallel(i, n)
		case *pipeline.FanOut:
			l.lowerFanOut(i, n)
		}
	}
	l.addTerminals()
}

// stampConfig sets $pipeline.config, the name of the definition def (the
// state machine without it): see task.Pipeline.Config. Both states that
// set $pipeline carry it: "Start run" and, for a rerun, "Rerun: load
// earlier steps".
func (l *lowerer) stampConfig(def []byte) {
	info := l.info
	info.Config = ConfigFingerprint(def)
	for _, a := range []map[string]any{startAssign(l.sm, StateStart), startAssign(l.sm, StateRerunLoad)} {
		if a != nil {
			a["pipeline"] = asl.LiteralValue(toPlain(info))
		}
	}
	l.p.Config = info.Config
}

// startAssign returns the Assign of state name when it is a Pass or a
// Choice, else nil.
func startAssign(sm *asl.StateMachine, name string) map[string]any {
	st, _ := sm.States.Get(name)
	switch st := st.(type) {
	case *asl.Pass:
		return st.Assign
	case *asl.Choice:
		return st.Assign
	}
	return nil
}

// ConfigFingerprint is the name of a compiled definition: 12 hex digits
// of its SHA-256.
func ConfigFingerprint(def []byte) string {
	sum := sha256.Sum256(def)
	return hex.EncodeToString(sum[:6])
}

// ConfigOf returns the config fingerprint stamped in a state machine
// Lower built ("" when it has none): what its runs record as
// store.Run.ConfigFingerprint.
func ConfigOf(sm *asl.StateMachine) string {
	if sm == nil {
		return ""
	}
	facts, _ := startAssign(sm, sm.StartAt)["pipeline"].(map[string]any)
	s, _ := facts["config"].(string)
	return s
}

func (l *lowerer) pipelineInfo() task.Pipeline {
	info := task.Pipeline{Name: l.p.Name, Stage: l.p.Stage, Budget: l.p.Budget, Notifications: l.p.Notifications, RunEndedError: true}
	if l.wf.Type == pipeline.WorkflowExpress {
		info.Workflow = string(pipeline.WorkflowExpress)
	}
	if len(l.p.Vars) > 0 {
		info.Vars = map[string]string{}
		for _, v := range l.p.Vars {
			info.Vars[v.Name] = v.Value
		}
	}
	for _, inc := range l.p.ContextInclude {
		info.Include = append(info.Include, inc.Path)
	}
	return info
}

// buildScope says where each name a when: expression may use lives in the
// state machine's variables (whenScope).
func (l *lowerer) buildScope() when.Scope { return whenScope(l.p) }

// jsonataName quotes a field name for a JSONata path when it is not a
// plain identifier.
func jsonataName(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "`" + s + "`"
}

// toPlain converts a value to the maps and slices its JSON would decode to.
func toPlain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// entry is the first state of node i.
func (l *lowerer) entry(i int) string {
	switch n := l.p.Steps[i].(type) {
	case *pipeline.FanOut:
		return n.Name + ": items"
	case *pipeline.Step:
		if n.Executor == pipeline.ExecPipeline && n.ExecutorConfig["context"] != nil {
			return n.Name + ": context"
		}
	}
	return l.p.Steps[i].NodeName()
}

// route is one way on from a completed node: when cond holds (or always,
// when cond is empty), go to next.
type route struct {
	cond string
	next string
}

// routes lists how a run reaches node j and beyond: a guarded node is
// entered when its when: holds, else the routes of the node after it.
func (l *lowerer) routes(j, depth int) []route {
	if j >= len(l.p.Steps) {
		return []route{{next: l.terminal(StateCompleted)}}
	}
	cond := l.whenCond(l.p.Steps[j])
	if cond == "" {
		return []route{{next: l.entry(j)}}
	}
	if depth >= maxInlineRoutes {
		return []route{{next: l.routeTo(j)}}
	}
	return append([]route{{cond: cond, next: l.entry(j)}}, l.routes(j+1, depth+1)...)
}

// routeTo returns a state that leads to node j: the node itself, or, when
// it is guarded, a Choice that checks its when:.
func (l *lowerer) routeTo(j int) string {
	rs := l.routes(j, 0)
	if len(rs) == 1 && rs[0].cond == "" {
		return rs[0].next
	}
	if name, ok := l.router[j]; ok {
		return name
	}
	name := "Check " + l.p.Steps[j].NodeName()
	l.router[j] = name
	ch := &asl.Choice{Comment: "when: " + nodeWhen(l.p.Steps[j])}
	for _, r := range rs {
		if r.cond == "" {
			ch.Default = r.next
			break
		}
		ch.Choices = append(ch.Choices, asl.ChoiceRule{Condition: asl.Expr(r.cond), Next: r.next})
	}
	l.add(&l.sm.States, name, ch)
	return name
}

func nodeWhen(n pipeline.Node) string {
	switch n := n.(type) {
	case *pipeline.Step:
		return n.When
	case *pipeline.Parallel:
		return n.When
	case *pipeline.FanOut:
		return n.When
	}
	return ""
}

// whenCond lowers a node's when: to JSONata, or "" when it has none.
func (l *lowerer) whenCond(n pipeline.Node) string {
	src := nodeWhen(n)
	if src == "" {
		return ""
	}
	if code, ok := l.conds[n]; ok {
		return code
	}
	code := l.lowerWhen(n)
	if l.conds == nil {
		l.conds = map[pipeline.Node]string{}
	}
	l.conds[n] = code
	return code
}

// lowerWhen lowers the when: of node n, as Check parsed it; whenCond
// keeps the result, since the routes into a run of guarded steps ask for
// the same node again.
func (l *lowerer) lowerWhen(n pipeline.Node) string {
	parsed, ok := l.f.info.when[n]
	if !ok {
		return "false" // Check reported it
	}
	expr := when.Clone(parsed) // stepRoots rewrites it
	l.stepRoots(expr)
	code, err := when.JSONata(expr, l.scope)
	if err != nil {
		l.ds.errorf(n.Position(), "step %q: when: %v", n.NodeName(), err)
		return "false"
	}
	return code
}

// stepVar is the variable that holds a step's output (a group's joined
// output, a branch's output): one variable per step, so that recording a
// step costs the same at the first step and the thousandth.
func stepVar(name string) string { return "step_" + pipeline.TemplateName(name) }

// itemsVar holds a fan-out's item outputs, keyed "<fan_out>/<i>".
func itemsVar(name string) string { return "items_" + pipeline.TemplateName(name) }

// stepExpr is the JSONata that reads a step's output: its variable, or
// for a fan-out item its entry in the group's items.
func stepExpr(ref string) string {
	if group, _, ok := strings.Cut(ref, "/"); ok {
		return "$" + itemsVar(group) + "." + jsonataName(ref)
	}
	return "$" + stepVar(ref)
}

// stepRoots rewrites the step references of a when: or over: expression
// to the variables that hold the outputs: steps.x.f reads $step_x.f. A
// test on a bare step (steps.x is defined) asks about its confidence,
// which every output has, so that a step that did not run reads as
// undefined.
func (l *lowerer) stepRoots(e when.Expr) {
	when.Walk(e, func(n when.Expr) bool {
		switch n := n.(type) {
		case *when.Test:
			if p, ok := n.X.(*when.Path); ok && p.Root == "steps" && len(p.Segments) == 1 {
				p.Segments = append(p.Segments, "confidence")
			}
		case *when.Path:
			if n.Root != "steps" || len(n.Segments) == 0 {
				return true
			}
			ref := n.Segments[0]
			name, item, isItem := strings.Cut(ref, "/")
			if real, ok := l.alias[name]; ok {
				name = real
			}
			if isItem {
				ref = name + "/" + item
			} else {
				ref = name
			}
			root := "@" + ref
			if _, ok := l.scope[root]; !ok {
				l.scope[root] = when.Root{Expr: stepExpr(ref), Keyed: 1}
			}
			n.Root, n.Segments = root, n.Segments[1:]
		}
		return true
	})
}

// terminal returns the name of a terminal state (in an Express workflow,
// the state that records a completed run before "Run completed");
// addTerminals emits the ones used once every node is lowered.
func (l *lowerer) terminal(name string) string {
	l.added[name] = true
	if name == StateCompleted && l.wf.Type == pipeline.WorkflowExpress {
		l.added[StateRecordRun] = true
		return StateRecordRun
	}
	return name
}

func (l *lowerer) addTerminals() {
	if l.added[StateRecord] {
		l.addRecordFailure()
	}
	if l.added[StateRecordRun] {
		l.addRecordRun()
	}
	if l.added[StateEnded] {
		l.addEnded()
	}
	for _, name := range []string{StateCompleted, StateStopped, StateEscalated, StateAborted, StateFailed} {
		if l.added[name] {
			l.addTerminal(name)
		}
	}
}

func (l *lowerer) addTerminal(name string) {
	cause := asl.Expr("$exists($states.input.reason) ? $string($states.input.reason) : 'no reason was recorded'")
	var st asl.State
	switch name {
	case StateCompleted:
		st = &asl.Succeed{Output: map[string]any{
			"status": task.StatusCompleted, "run_id": exprRunID, "output": exprLast, "usage": exprUsage,
		}}
	case StateStopped:
		st = &asl.Succeed{Output: map[string]any{
			"status": task.StatusStopped, "run_id": exprRunID, "step": asl.Expr("$states.input.step"),
			"reason": cause, "output": asl.Expr("$states.input.output"), "usage": exprUsage,
		}}
	case StateEscalated:
		st = &asl.Fail{Error: task.ErrorEscalated, Cause: cause}
	case StateAborted:
		st = &asl.Fail{Error: task.ErrorAborted, Cause: cause}
	case StateFailed:
		st = &asl.Fail{Error: task.ErrorFailed, Cause: cause}
	}
	l.add(&l.sm.States, name, st)
}

// outcomeWith emits the Choice that follows a deciding Task whose answer
// may also be neither completed nor run-ending (decided): first are its
// first rules (an agent step's continue, a human check's wait); completed
// goes on (checking the next steps' when:); any other status goes to the
// shared Choice that ends the run in the matching terminal state.
func (l *lowerer) outcomeWith(i int, name string, first ...asl.ChoiceRule) string {
	state := name + ": outcome"
	ch := &asl.Choice{}
	ch.Choices = append(ch.Choices, first...)
	for _, r := range l.routes(i+1, 0) {
		cond := "$states.input.status = 'completed'"
		if r.cond != "" {
			cond += " and (" + r.cond + ")"
		}
		ch.Choices = append(ch.Choices, asl.ChoiceRule{
			Condition: asl.Expr(cond),
			Assign:    map[string]any{"last": asl.Expr("$states.input.output")},
			Next:      r.next,
		})
	}
	ch.Default = l.terminal(StateEnded)
	l.add(&l.sm.States, state, ch)
	return state
}

// addEnded emits the Choice every run-ending answer goes to (from a
// deciding Task's Catch of Stepline.RunEnded, or an outcome Choice): the
// answer's usage is the run's (a Task's Assign does not run when it
// fails), and its status picks the terminal state. Each rule assigns the
// usage, and the state's own Assign does for its Default: a Choice takes
// the Assign of the rule it follows, or its own for the Default.
func (l *lowerer) addEnded() {
	usage := func() map[string]any {
		return map[string]any{"usage": asl.Expr("$exists($states.input.usage) ? $states.input.usage : $usage")}
	}
	ch := &asl.Choice{Comment: "A step did not complete: end the run with its status.", Assign: usage()}
	for _, t := range []struct{ status, state string }{
		{task.StatusStopped, StateStopped},
		{task.StatusEscalated, StateEscalated},
		{task.StatusAborted, StateAborted},
	} {
		ch.Choices = append(ch.Choices, asl.ChoiceRule{
			Condition: asl.Expr("$states.input.status = '" + t.status + "'"),
			Assign:    usage(),
			Next:      t.state,
		})
		l.added[t.state] = true
	}
	ch.Default = StateFailed
	l.added[StateFailed] = true
	l.add(&l.sm.States, StateEnded, ch)
}

// invoke is the Arguments of a Task that invokes function with payload.
func invoke(function string, payload map[string]any) map[string]any {
	return map[string]any{"FunctionName": function, "Payload": payload}
}

// payload is the common part of a Request.
func (l *lowerer) payload(mode string, cfg any, refs []string) map[string]any {
	step := toPlain(cfg)
	if m, ok := step.(map[string]any); ok {
		delete(m, "when") // decided by the state machine, not the function
	}
	return map[string]any{
		"mode":     mode,
		"step":     asl.LiteralValue(step),
		"pipeline": exprPipeline,
		"run":      exprRun,
		"trigger":  exprTrigger,
		"steps":    l.stepsExpr(refs),
		"usage":    exprUsage,
	}
}

// stepsExpr selects the earlier outputs a Task's templates read, by name.
// An object constructor keeps only the steps that ran (a field that reads
// nothing is left out, in both JSONata evaluators), and its cost follows
// the references, not the number of earlier steps. refs nil means the
// templates address steps dynamically: every step is sent.
func (l *lowerer) stepsExpr(refs []string) any {
	if refs == nil {
		var parts, items []string
		for _, n := range l.p.Steps {
			for _, name := range nodeNames(n) {
				parts = append(parts, asl.Quote(name)+": "+stepExpr(name))
			}
			if _, ok := n.(*pipeline.FanOut); ok {
				items = append(items, "$"+itemsVar(n.NodeName()))
			}
		}
		return asl.Expr("$merge([{" + strings.Join(parts, ", ") + "}" + prefixEach(", ", items) + "])")
	}
	if len(refs) == 0 {
		return map[string]any{}
	}
	fields := make([]string, len(refs))
	for i, r := range refs {
		fields[i] = asl.Quote(r) + ": " + stepExpr(r)
	}
	return asl.Expr("{" + strings.Join(fields, ", ") + "}")
}

func prefixEach(sep string, xs []string) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(sep)
		b.WriteString(x)
	}
	return b.String()
}

// assignResult is the Assign of a deciding Task: the step's output into
// its variable (a parallel group's branches into theirs, a fan-out's items
// into its items variable) and the run's usage.
func assignResult(name string, cfg any) map[string]any {
	a := map[string]any{
		stepVar(name): exprPayloadOutput,
		"usage":       exprPayloadUsage,
	}
	switch g := cfg.(type) {
	case *pipeline.Parallel:
		for _, b := range g.Branches {
			out := "$states.result.Payload.steps." + jsonataName(b.Name)
			a[stepVar(b.Name)] = asl.Expr("$exists(" + out + ") ? " + out + " : null")
		}
	case *pipeline.FanOut:
		a[itemsVar(name)] = asl.Expr("$states.result.Payload.steps")
	}
	return a
}

func lambdaRetrier() asl.Retrier {
	return asl.Retrier{
		ErrorEquals:     fault.LambdaServiceErrors(),
		IntervalSeconds: 1,
		MaxAttempts:     asl.Attempts(3),
		BackoffRate:     2,
		JitterStrategy:  asl.JitterFull,
	}
}

// stepRetry is a step's Retry: the Lambda service retrier, then the
// retry: policy over the retryable executor errors and Task timeouts.
func stepRetry(r *pipeline.Retry) []asl.Retrier {
	rs := []asl.Retrier{lambdaRetrier()}
	if r == nil || r.Attempts <= 1 {
		return rs
	}
	rate := 2.0
	if r.Backoff == pipeline.BackoffFixed {
		rate = 1
	}
	return append(rs, asl.Retrier{
		ErrorEquals:     append(fault.Retryable(), asl.StatesTimeout),
		IntervalSeconds: retryInterval(r.DelaySeconds),
		MaxAttempts:     asl.Attempts(r.Attempts - 1),
		BackoffRate:     rate,
	})
}

// taskTimeout bounds one attempt of a model step: every call it may make
// (re-asks, the verifier, loop iterations) at timeout_seconds each, within
// Lambda's 900 s.
func taskTimeout(timeout, calls int) int {
	if timeout <= 0 {
		return MaxSyncTimeoutSeconds
	}
	return min(MaxSyncTimeoutSeconds, timeout*calls+15)
}

// refs lists the steps a node's templates read, by real name; nil when a
// template reads steps in a way that cannot be listed.
func (l *lowerer) refs(templates ...any) []string {
	out := []string{}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			t := l.f.info.template(v)
			if t.dynamic {
				return false
			}
			for _, r := range t.refs {
				name, _, _ := strings.Cut(r.name, "/")
				if real, ok := l.alias[name]; ok {
					name = real
				}
				if r.name != name && strings.Contains(r.name, "/") {
					name = r.name // a fan-out item: its own entry
				}
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		case map[string]any:
			for _, e := range v {
				if !walk(e) {
					return false
				}
			}
		case map[string]string:
			for _, e := range v {
				if !walk(e) {
					return false
				}
			}
		case []any:
			for _, e := range v {
				if !walk(e) {
					return false
				}
			}
		}
		return true
	}
	for _, t := range templates {
		if !walk(t) {
			return nil
		}
	}
	slices.Sort(out)
	return out
}

func (l *lowerer) checkPayload(name string, args any) {
	b, _ := json.Marshal(args)
	if len(b) > payloadBudget {
		l.ds.errorf(l.namePos(name), "step %q: its configuration and templates take %d bytes, more than the %d bytes a Task payload can spare (Step Functions allows %d): move large text to an artifact or a file the executor reads", name, len(b), payloadBudget, MaxPayloadBytes)
	}
}

// failureCatch is the Catch of a node's Tasks. With on_failure: abort it
// hands the failure to the shared Record failure Task, which ends the run
// failed; with continue, to the node's own failure Task (addFailureTask).
func (l *lowerer) failureCatch(name string, cfg any, policy string) []asl.Catcher {
	if policy == pipeline.FailureContinue {
		return catchAll(name + ": failed")
	}
	return []asl.Catcher{{
		ErrorEquals: []string{asl.StatesALL},
		Output:      map[string]any{"error": exprErrorOutput, "step": asl.LiteralValue(failureConfig(cfg))},
		Next:        l.terminal(StateRecord),
	}}
}

// addFailureTask emits the Task of an on_failure: continue step: it
// records the failure, sends the failure webhook and goes on with the step
// in steps at confidence 0.
func (l *lowerer) addFailureTask(i int, name string, cfg any, refs []string) {
	p := l.payload(task.ModeFailure, failureConfig(cfg), refs)
	p["error"] = exprInput
	l.add(&l.sm.States, name+": failed", &asl.Task{
		Comment:        "Record the failure, send the failure webhook and go on (on_failure: continue).",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, p),
		TimeoutSeconds: bookkeepingTimeoutSeconds,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          recordLost(),
		Assign:         assignResult(name, cfg),
		Output:         exprResultPayload,
		Next:           l.routeTo(i + 1),
	})
}

// recordLost ends the run failed when recording a failure itself fails.
func recordLost() []asl.Catcher {
	return []asl.Catcher{{
		ErrorEquals: []string{asl.StatesALL},
		Output:      map[string]any{"reason": asl.Expr("'a step failed and the failure could not be recorded: ' & $string($states.errorOutput.Cause)")},
		Next:        StateFailed,
	}}
}

// addRecordFailure emits the Task every on_failure: abort step shares: it
// records the failure the Catch passed on, sends the failure webhook and
// ends the run failed.
func (l *lowerer) addRecordFailure() {
	p := l.payload(task.ModeFailure, nil, nil)
	p["step"] = asl.Expr("$states.input.step")
	p["error"] = asl.Expr("$states.input.error")
	l.added[StateFailed] = true
	l.add(&l.sm.States, StateRecord, &asl.Task{
		Comment:        "A step failed (on_failure: abort): record it, send its failure webhook, end the run failed.",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, p),
		TimeoutSeconds: bookkeepingTimeoutSeconds,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          recordLost(),
		Output:         exprResultPayload,
		Next:           StateFailed,
	})
}

// addRecordRun emits the Task an Express workflow ends a completed run
// with: Express emits no execution status change event, so the step
// function closes the run's record (mode finish: completed, the output,
// the usage) and counts it, as the recorder function does for a Standard
// workflow. A run whose record cannot be closed still completes.
func (l *lowerer) addRecordRun() {
	p := l.payload(task.ModeFinish, nil, []string{})
	p["final"] = exprLast
	l.add(&l.sm.States, StateRecordRun, &asl.Task{
		Comment:        "Express workflow: close the completed run's record and count it (no status change event reaches the recorder).",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, p),
		TimeoutSeconds: bookkeepingTimeoutSeconds,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          []asl.Catcher{{ErrorEquals: []string{asl.StatesALL}, Next: StateCompleted}},
		Next:           StateCompleted,
	})
}

// failureConfig keeps of a node's config what recording its failure
// needs: the name, the executor and the failure webhook.
func failureConfig(cfg any) any {
	m, _ := toPlain(cfg).(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"name", "executor", "on_failure", "on_abort"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func catchAll(next string) []asl.Catcher {
	return []asl.Catcher{{ErrorEquals: []string{asl.StatesALL}, Output: exprErrorOutput, Next: next}}
}

func (l *lowerer) lowerStep(i int, s *pipeline.Step) {
	refs := l.refs(stepTemplates(s)...)
	failed := l.failureCatch(s.Name, s, s.OnFailure.Policy)
	if s.OnFailure.Policy == pipeline.FailureContinue {
		defer l.addFailureTask(i, s.Name, s, refs)
	}
	switch s.Executor {
	case pipeline.ExecHuman:
		l.lowerHuman(i, s, refs, failed)
		return
	case pipeline.ExecPipeline:
		l.lowerChild(i, s, refs, failed)
		return
	}
	if outlivesInvocation(s) {
		l.lowerAgentTurns(i, s, refs, failed)
		return
	}
	p := l.payload(task.ModeStep, s, refs)
	p["attempt"] = exprAttempt
	args := invoke(task.StepFunctionPlaceholder, p)
	l.checkPayload(s.Name, args)
	comment := fmt.Sprintf("%s step: execute, verify, decide, record.", s.Executor)
	if s.Grounding != nil || len(s.Checks) > 0 {
		comment = fmt.Sprintf("%s step: execute, verify, ground and check, decide, record.", s.Executor)
	}
	t := &asl.Task{
		Comment:        comment,
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      args,
		TimeoutSeconds: stepTaskTimeout(s),
		Retry:          stepRetry(s.Retry),
		Catch:          failed,
		Assign:         assignResult(s.Name, s),
		Output:         exprResultPayload,
	}
	l.add(&l.sm.States, s.Name, t)
	l.decided(i, s.Name, t, l.lowerHumanChecks(s, refs, l.endedCatch(failed))...)
}

// decided sets the ways on of a deciding Task of node i (a step, a
// decision, a join, a check): a Catch of fault.NameRunEnded before its
// own, which takes an answer that ends the run to "Run ended" with the
// answer as the input and the run's usage updated from it; and, when the
// node needs no outcome Choice (first is empty: no human check, no agent
// turns), the next node itself (through its when: router when it has
// one), the output kept as $last. Otherwise the Task goes to the node's
// outcome Choice, first its first rules.
func (l *lowerer) decided(i int, node string, t *asl.Task, first ...asl.ChoiceRule) {
	t.Catch = l.endedCatch(t.Catch)
	if len(first) == 0 {
		t.Assign["last"] = exprPayloadOutput
		t.Next = l.routeTo(i + 1)
		return
	}
	t.Next = node + ": outcome"
	l.outcomeWith(i, node, first...)
}

// endedAnswer reads a run-ending answer from a Catch's error output: the
// Cause is the function's error response as JSON text, whose errorMessage
// is the answer as JSON text (bounded by the step function,
// steprun.MaxEndedAnswerBytes).
const endedAnswer = "$parse($parse($states.errorOutput.Cause).errorMessage)"

// endedCatch returns catch after the Catch of a run-ending answer
// (fault.RunEnded): the answer goes to "Run ended", which takes its usage
// as the run's and picks the terminal state by its status.
func (l *lowerer) endedCatch(catch []asl.Catcher) []asl.Catcher {
	return append([]asl.Catcher{{
		ErrorEquals: []string{fault.NameRunEnded},
		Output:      asl.Expr(endedAnswer),
		Next:        l.terminal(StateEnded),
	}}, catch...)
}

// outlivesInvocation reports whether a sequential step is an agent step
// whose timeout_seconds is over what one Lambda invocation allows: its
// tool loop runs as state machine iterations (lowerAgentTurns).
func outlivesInvocation(s *pipeline.Step) bool {
	return s.Agent != nil && s.Agent.Remote == nil && s.TimeoutSeconds > MaxSyncTimeoutSeconds
}

// loopVar holds, between the Tasks of an agent step that outlives one
// invocation, where its tool loop stands (task.AgentLoop).
func loopVar(name string) string { return "turns_" + pipeline.TemplateName(name) }

// lowerAgentTurns emits an agent step that outlives one invocation: a
// Task (mode agent_turns) that makes model calls for up to one
// invocation's budget, keeping the conversation in the artifact store,
// and its outcome Choice, which sends a "continue" answer back to the
// Task with the loop's state in a variable of the step's own, so that the
// step's timeout_seconds is its only limit. The last Task verifies,
// gates and records the step as a step Task does; every Task has the
// step's retry: and Catch. Each Task costs two state transitions, as a
// single-invocation step does.
func (l *lowerer) lowerAgentTurns(i int, s *pipeline.Step, refs []string, failed []asl.Catcher) {
	v := loopVar(s.Name)
	p := l.payload(task.ModeAgentTurns, s, refs)
	p["attempt"] = exprAttempt
	p["agent_loop"] = asl.Expr("$exists($" + v + ") ? $" + v + " : null")
	args := invoke(task.StepFunctionPlaceholder, p)
	l.checkPayload(s.Name, args)
	t := &asl.Task{
		Comment:        fmt.Sprintf("%s agent step past one invocation: call the model and its tools for up to one invocation's budget, keep the conversation, then continue, or verify, decide and record.", s.Executor),
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      args,
		TimeoutSeconds: MaxSyncTimeoutSeconds,
		Retry:          stepRetry(s.Retry),
		Catch:          failed,
		Assign:         assignResult(s.Name, s),
		Output:         exprResultPayload,
	}
	l.add(&l.sm.States, s.Name, t)
	l.decided(i, s.Name, t, append([]asl.ChoiceRule{{
		Condition: asl.Expr("$states.input.status = '" + task.StatusContinue + "'"),
		Assign:    map[string]any{v: asl.Expr("$states.input.agent_loop")},
		Next:      s.Name,
	}}, l.lowerHumanChecks(s, refs, l.endedCatch(failed))...)...)
}

func (l *lowerer) lowerHuman(i int, s *pipeline.Step, refs []string, failed []asl.Catcher) {
	timeout := s.TimeoutSeconds
	if timeout <= 0 {
		timeout = DefaultHumanTimeoutSeconds
	}
	p := l.payload(task.ModeApproval, s, refs)
	p["task_token"] = exprTaskToken
	args := invoke(task.ApprovalFunctionPlaceholder, p)
	l.checkPayload(s.Name, args)
	decision := s.Name + ": decision"
	l.add(&l.sm.States, s.Name, &asl.Task{
		Comment:        "Ask for approval and wait for the decision (task token).",
		Resource:       asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments:      args,
		TimeoutSeconds: timeout,
		Retry:          l.humanRetry(s.Retry),
		Catch:          append(l.testingApproves(decision, nil), failed...),
		Output:         exprResult,
		Next:           decision,
	})
	dp := l.payload(task.ModeHuman, s, []string{})
	dp["decision"] = exprInput
	l.addDecision(i, s.Name, s, decision, "Turn the decision into the step's output, decide and record.", dp, failed)
}

// humanRetry is a human step's Retry. In a pipeline of stage testing a
// timeout is not retried: the reference runner approves at the first
// timeout there (nothing failed), so the Catch of testingApproves must see
// it, not a retrier that asks again. In production a timeout fails the
// step and retry: asks again, as for any step.
func (l *lowerer) humanRetry(r *pipeline.Retry) []asl.Retrier {
	rs := stepRetry(r)
	if l.p.Stage == pipeline.StageProduction {
		return rs
	}
	for i := range rs {
		rs[i].ErrorEquals = slices.DeleteFunc(slices.Clone(rs[i].ErrorEquals), func(e string) bool { return e == asl.StatesTimeout })
	}
	return slices.DeleteFunc(rs, func(r asl.Retrier) bool { return len(r.ErrorEquals) == 0 })
}

// TimeoutApprover is who approves a human step of a testing pipeline that
// nobody decided within its timeout.
const TimeoutApprover = "timeout (stage testing)"

// testingApproves is the Catch that, in a pipeline of stage testing, turns
// a human step's timeout into an approval, as the reference runner does
// (production: the timeout fails the step). wrap, when set, shapes the
// decision as the branch's Task output does.
func (l *lowerer) testingApproves(decision string, wrap func(map[string]any) map[string]any) []asl.Catcher {
	if l.p.Stage == pipeline.StageProduction {
		return nil
	}
	d := map[string]any{"decision": task.Approve, "by": TimeoutApprover}
	out := any(d)
	if wrap != nil {
		out = wrap(map[string]any{"decision": d})
	}
	return []asl.Catcher{{ErrorEquals: []string{asl.StatesTimeout}, Output: out, Next: decision}}
}

// addDecision adds the Task that hands what node i waited for (a human's
// decision, a sub-pipeline's outcome, a group's branches) to the step
// function, which turns it into the node's output, decides and records;
// then the node's outcome.
func (l *lowerer) addDecision(i int, node string, cfg any, state, comment string, payload map[string]any, catch []asl.Catcher) {
	t := &asl.Task{
		Comment:        comment,
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, payload),
		TimeoutSeconds: bookkeepingTimeoutSeconds,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          catch,
		Assign:         assignResult(node, cfg),
		Output:         exprResultPayload,
	}
	l.add(&l.sm.States, state, t)
	l.decided(i, node, t)
}

func (l *lowerer) lowerChild(i int, s *pipeline.Step, refs []string, failed []asl.Catcher) {
	child, _ := s.ExecutorConfig["pipeline"].(string)
	timeout := s.TimeoutSeconds
	if timeout <= 0 {
		timeout = DefaultChildTimeoutSeconds
	}
	decision := s.Name + ": decision"
	trigger := childTrigger(child)
	if l.childContext(fmt.Sprintf("step %q", s.Name), s.ExecutorConfig, fieldPos(s.Fields, "executor_config", s.Pos)) {
		p := l.payload(task.ModeChildInput, s, refs)
		l.checkPayload(s.Name, p)
		l.add(&l.sm.States, s.Name+": context", &asl.Task{
			Comment:        "Render executor_config.context over the step context: the sub-pipeline's trigger.",
			Resource:       asl.ResourceLambdaInvoke,
			Arguments:      invoke(task.StepFunctionPlaceholder, p),
			TimeoutSeconds: bookkeepingTimeoutSeconds,
			Retry:          []asl.Retrier{lambdaRetrier()},
			Catch:          failed,
			Output:         map[string]any{"trigger": exprPayloadOutput},
			Next:           s.Name,
		})
		trigger = asl.Expr("$states.input.trigger")
	}
	l.add(&l.sm.States, s.Name, &asl.Task{
		Comment:        fmt.Sprintf("Run pipeline %q as a run of its own and wait for it.", child),
		Resource:       asl.ResourceStartExecutionSync,
		Arguments:      childArguments(child, trigger),
		TimeoutSeconds: timeout,
		Retry:          stepRetry(s.Retry),
		Catch: []asl.Catcher{{
			ErrorEquals: []string{asl.StatesALL},
			Output:      map[string]any{"error": exprErrorOutput},
			Next:        decision,
		}},
		Output: map[string]any{"child": asl.Expr("$states.result.Output")},
		Next:   decision,
	})
	dp := l.payload(task.ModeChild, s, []string{})
	dp["child"] = childExpr
	dp["error"] = errorExpr
	l.addDecision(i, s.Name, s, decision, "Turn the sub-pipeline's outcome into the step's output, decide and record.", dp, failed)
}

// What the Task after a sub-pipeline's reads of its outcome: the child's
// output, or the error that ended it.
var (
	childExpr = asl.Expr("$exists($states.input.child) ? $states.input.child : null")
	errorExpr = asl.Expr("$exists($states.input.error) ? $states.input.error : null")
)

// childTrigger is the JSONata of a sub-pipeline's trigger when its step
// has no executor_config.context: the parent's, as the child's.
func childTrigger(child string) string {
	return asl.Expr("$merge([$trigger, {'pipeline': " + asl.Quote(child) + ", 'source': 'sub-pipeline', 'fingerprint': null}])")
}

// childArguments are the Arguments of the startExecution.sync:2 Task that
// runs pipeline child with trigger (a JSONata string) as its trigger.
func childArguments(child, trigger string) map[string]any {
	return map[string]any{
		"StateMachineArn": ChildPlaceholder(child),
		"Input": map[string]any{
			"trigger":       trigger,
			"parent_run_id": exprRunID,
			"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": asl.Expr("$states.context.Execution.Id"),
		},
	}
}

// Fields of a sub-pipeline's trigger that executor_config.context may set,
// and those the runner sets.
var (
	contextText    = []string{"summary", "severity"} // templates, rendered to text
	contextObjects = []string{"labels", "metadata"}  // mappings whose values are rendered, merged over the parent's
	contextRunner  = []string{"pipeline", "source", "fingerprint", "team"}
)

// childContext reports whether a sub-pipeline step (or branch) has an
// executor_config.context, and reports what in it a child's trigger has
// no place for.
func (l *lowerer) childContext(where string, cfg map[string]any, pos pipeline.Pos) bool {
	raw, ok := cfg["context"]
	if !ok || raw == nil {
		return false
	}
	m, ok := raw.(map[string]any)
	if !ok {
		l.ds.errorf(pos, "%s: executor_config.context must be a mapping of the child's trigger fields (%s)", where, strings.Join(append(slices.Clone(contextText), contextObjects...), ", "))
		return false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch v := m[k]; {
		case slices.Contains(contextRunner, k):
			l.ds.errorf(pos, "%s: executor_config.context.%s is set by the runner (pipeline: the child's name, source: sub-pipeline, fingerprint: none, team: the parent's)", where, k)
		case slices.Contains(contextText, k):
			if _, isText := v.(string); !isText {
				l.ds.errorf(pos, "%s: executor_config.context.%s must be a string (a template)", where, k)
			}
		case slices.Contains(contextObjects, k):
			obj, isObj := v.(map[string]any)
			if !isObj {
				l.ds.errorf(pos, "%s: executor_config.context.%s must be a mapping, merged over the parent's", where, k)
				continue
			}
			if k != "labels" {
				continue
			}
			for lk, lv := range obj {
				if _, isText := lv.(string); !isText {
					l.ds.errorf(pos, "%s: executor_config.context.labels.%s must be a string (a template): labels are text", where, lk)
				}
			}
		default:
			l.ds.errorf(pos, "%s: executor_config.context.%s is not a trigger field a sub-pipeline's context sets (%s)", where, k, strings.Join(append(slices.Clone(contextText), contextObjects...), ", "))
		}
	}
	return true
}

// lostBranch is the output of a branch whose Task failed outside the step
// function (a timeout, a Lambda fault): confidence 0, as any failed branch.
func lostBranch(step string) map[string]any {
	return map[string]any{
		"status": task.StatusFailed,
		"step":   step,
		"output": map[string]any{
			"confidence":        0,
			"summary":           asl.Expr("$string($states.errorOutput.Error) & ': ' & $string($states.errorOutput.Cause)"),
			"next_step_context": asl.Expr("''"),
			"failed":            true,
		},
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0},
	}
}

// branchStates emits the Task (and its fallback) that runs one branch.
func (l *lowerer) branchStates(states *asl.States, state, step string, payload map[string]any, timeout int) {
	lost := state + ": lost"
	l.add(states, state, &asl.Task{
		Comment:        "Run the branch; its confidence feeds the join.",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, payload),
		TimeoutSeconds: timeout,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          []asl.Catcher{{ErrorEquals: []string{asl.StatesALL}, Output: lostBranch(step), Next: lost}},
		Output:         exprResultPayload,
		End:            true,
	})
	l.add(states, lost, &asl.Pass{Comment: "A branch that could not answer counts as failed, confidence 0.", End: true})
}

// waiting is a branch that waits (a human's decision, a sub-pipeline's
// run): a parallel branch or a fan-out's item.
type waiting struct {
	states *asl.States
	state  string         // its first state (the wait, or the context Task before a sub-pipeline)
	step   string         // its name in the failed output: the branch's or the fan-out's
	where  string         // for errors: step "x" of ...
	cfg    any            // its static config
	exec   map[string]any // its executor_config
	pos    pipeline.Pos   // where executor_config is
	refs   []string       // the steps its templates read
	extra  map[string]any // payload fields of every Task: group; for an item, item, index and total
	item   bool           // a fan-out's item: its item and index are carried from state to state
	wait   int            // its timeout_seconds (0: the executor's default), within the group's
}

// carry adds to a state's Output, for a fan-out's item, the item and its
// index, which the item's next states read from their input.
func (w waiting) carry(out map[string]any) map[string]any {
	if w.item {
		out["item"] = asl.Expr("$states.input.item")
		out["index"] = asl.Expr("$states.input.index")
	}
	return out
}

// branchPayload is a Request of mode for one of a branch's Tasks.
func (l *lowerer) branchPayload(w waiting, mode string, refs []string) map[string]any {
	p := l.payload(mode, w.cfg, refs)
	for k, v := range w.extra {
		p[k] = v
	}
	return p
}

// lostCatch sends a failure of one of a branch's Tasks to its lost state.
func lostCatch(step, lost string) []asl.Catcher {
	return []asl.Catcher{{ErrorEquals: []string{asl.StatesALL}, Output: lostBranch(step), Next: lost}}
}

// branchDecision adds the Task that turns what a waiting branch waited for
// into its output (mode branch with the decision or the child's outcome),
// and the branch's lost state.
func (l *lowerer) branchDecision(w waiting, fields map[string]any) string {
	decision := w.state + ": decision"
	lost := w.state + ": lost"
	p := l.branchPayload(w, task.ModeBranch, []string{})
	for k, v := range fields {
		p[k] = v
	}
	l.add(w.states, decision, &asl.Task{
		Comment:        "Turn what the branch waited for into its output; its confidence feeds the join.",
		Resource:       asl.ResourceLambdaInvoke,
		Arguments:      invoke(task.StepFunctionPlaceholder, p),
		TimeoutSeconds: bookkeepingTimeoutSeconds,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          lostCatch(w.step, lost),
		Output:         exprResultPayload,
		End:            true,
	})
	l.add(w.states, lost, &asl.Pass{Comment: "A branch that could not answer counts as failed, confidence 0.", End: true})
	return decision
}

// humanBranch emits a human branch: the approval Task, which waits for the
// decision (task token), then the decision Task. Returns its first state.
func (l *lowerer) humanBranch(w waiting) string {
	timeout := w.wait
	if timeout <= 0 {
		timeout = DefaultHumanTimeoutSeconds
	}
	p := l.branchPayload(w, task.ModeApproval, w.refs)
	p["task_token"] = exprTaskToken
	args := invoke(task.ApprovalFunctionPlaceholder, p)
	l.checkPayload(w.step, args)
	decision := w.state + ": decision"
	l.add(w.states, w.state, &asl.Task{
		Comment:        "Ask for approval of the branch and wait for the decision (task token).",
		Resource:       asl.ResourceLambdaInvokeWaitForTaskToken,
		Arguments:      args,
		TimeoutSeconds: timeout,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch:          append(l.testingApproves(decision, w.carry), lostCatch(w.step, w.state+": lost")...),
		Output:         w.carry(map[string]any{"decision": exprResult}),
		Next:           decision,
	})
	l.branchDecision(w, map[string]any{"decision": asl.Expr("$states.input.decision")})
	return w.state
}

// childBranch emits a sub-pipeline branch: the context Task when the
// branch has executor_config.context, the startExecution.sync:2 Task, then
// the decision Task. Returns its first state.
func (l *lowerer) childBranch(w waiting) string {
	child, _ := w.exec["pipeline"].(string)
	timeout := w.wait
	if timeout <= 0 {
		timeout = DefaultChildTimeoutSeconds
	}
	first, trigger := w.state, childTrigger(child)
	lost := w.state + ": lost"
	if l.childContext(w.where, w.exec, w.pos) {
		first = w.state + ": context"
		p := l.branchPayload(w, task.ModeChildInput, w.refs)
		l.checkPayload(w.step, p)
		l.add(w.states, first, &asl.Task{
			Comment:        "Render executor_config.context over the branch's context: the sub-pipeline's trigger.",
			Resource:       asl.ResourceLambdaInvoke,
			Arguments:      invoke(task.StepFunctionPlaceholder, p),
			TimeoutSeconds: bookkeepingTimeoutSeconds,
			Retry:          []asl.Retrier{lambdaRetrier()},
			Catch:          lostCatch(w.step, lost),
			Output:         w.carry(map[string]any{"trigger": exprPayloadOutput}),
			Next:           w.state,
		})
		trigger = asl.Expr("$states.input.trigger")
	}
	decision := w.state + ": decision"
	l.add(w.states, w.state, &asl.Task{
		Comment:        fmt.Sprintf("Run pipeline %q as a run of its own and wait for it.", child),
		Resource:       asl.ResourceStartExecutionSync,
		Arguments:      childArguments(child, trigger),
		TimeoutSeconds: timeout,
		Retry:          []asl.Retrier{lambdaRetrier()},
		Catch: []asl.Catcher{{
			ErrorEquals: []string{asl.StatesALL},
			Output:      w.carry(map[string]any{"error": exprErrorOutput}),
			Next:        decision,
		}},
		Output: w.carry(map[string]any{"child": asl.Expr("$states.result.Output")}),
		Next:   decision,
	})
	l.branchDecision(w, map[string]any{"child": childExpr, "error": errorExpr})
	return first
}

func (l *lowerer) join(i int, name string, cfg any, branches string) {
	p := l.payload(task.ModeJoin, cfg, []string{})
	p["group"] = name
	p["branches"] = branches
	p["error"] = errorExpr
	l.addDecision(i, name, cfg, name+": join", "Join the branches' confidences, decide and record the group.", p, l.failureCatch(name, cfg, pipeline.FailureAbort))
}

func (l *lowerer) lowerParallel(i int, g *pipeline.Parallel) {
	par := &asl.Parallel{
		Comment: fmt.Sprintf("Run %d branches at once; join: %s.", len(g.Branches), g.Join),
		Output:  exprResult,
		Catch:   l.failureCatch(g.Name, g, pipeline.FailureAbort),
		Next:    g.Name + ": join",
	}
	for _, b := range g.Branches {
		refs := l.refs(b.PromptTemplate, b.ExecutorConfig)
		var br asl.Branch
		state := g.Name + "/" + b.Name
		br.StartAt = state
		if b.Executor == pipeline.ExecHuman || b.Executor == pipeline.ExecPipeline {
			wait := b.TimeoutSeconds
			if g.TimeoutSeconds > 0 && (wait <= 0 || g.TimeoutSeconds < wait) {
				wait = g.TimeoutSeconds
			}
			w := waiting{states: &br.States, state: state, step: b.Name, cfg: b, exec: b.ExecutorConfig, refs: refs, wait: wait,
				where: fmt.Sprintf("branch %q of parallel %q", b.Name, g.Name), pos: fieldPos(b.Fields, "executor_config", b.Pos),
				extra: map[string]any{"group": g.Name}}
			if b.Executor == pipeline.ExecHuman {
				br.StartAt = l.humanBranch(w)
			} else {
				br.StartAt = l.childBranch(w)
			}
			par.Branches = append(par.Branches, br)
			continue
		}
		p := l.payload(task.ModeBranch, b, refs)
		p["group"] = g.Name
		l.checkPayload(b.Name, p)
		l.branchStates(&br.States, state, b.Name, p, branchTaskTimeout(b, g))
		par.Branches = append(par.Branches, br)
	}
	l.add(&l.sm.States, g.Name, par)
	l.join(i, g.Name, g, exprInput)
}

// overExpr lowers a fan_out over: to the JSONata of the list it names.
func (l *lowerer) overExpr(g *pipeline.FanOut) string {
	parsed, ok := l.f.info.over[g]
	if !ok {
		return "[]" // Check reported it
	}
	switch e := when.Clone(parsed).(type) {
	case *when.Literal:
		return jsonataValue(e.Value)
	case *when.Path:
		l.stepRoots(e)
		root, ok := l.scope[e.Root]
		if !ok {
			return "[]"
		}
		fields := strings.Split(root.Expr, ".")
		for _, seg := range e.Segments {
			fields = append(fields, jsonataName(seg))
		}
		return listAt(fields)
	}
	return "[]"
}

// listAt reads the value at a path (a variable and its fields) so that a
// list stays a list in both JSONata evaluators: the Go one reads a path
// that ends at an empty list as nothing, so a key that is present but
// reads as nothing holds []. Step outputs hold no nulls (the step function
// drops them), so that case cannot be a null.
func listAt(fields []string) string {
	if len(fields) == 1 {
		return fields[0]
	}
	parent := strings.Join(fields[:len(fields)-1], ".")
	last := fields[len(fields)-1]
	key := strings.Trim(last, "`")
	return "($p := " + parent + "; $exists($p." + last + ") ? $p." + last +
		" : ($exists($p) and " + asl.Quote(key) + " in $keys($p)) ? [] : undefined)"
}

func (l *lowerer) lowerFanOut(i int, g *pipeline.FanOut) {
	items := l.overExpr(g)
	// Guarded forms: the Go evaluator the local engine uses fails on
	// $type() of nothing and counts nothing as 1.
	notList := "($i := " + items + "; $exists($i) ? $type($i) != 'array' : true)"
	count := "($i := " + items + "; $exists($i) ? $count($i) : 0)"
	join := g.Name + ": join"
	l.add(&l.sm.States, g.Name+": items", &asl.Choice{
		Comment: "over: " + g.Over,
		Choices: []asl.ChoiceRule{
			{
				Condition: asl.Expr(notList),
				Output:    map[string]any{"error": map[string]any{"Error": "Stepline.NotAList", "Cause": asl.Literal("over: " + g.Over + " is not a list")}},
				Next:      join,
			},
			{
				Condition: asl.Expr(count + " > " + strconv.Itoa(g.MaxItems)),
				Output: map[string]any{"error": map[string]any{
					"Error": "Stepline.TooManyItems",
					"Cause": asl.Expr("$string(" + count + ") & ' items, more than max_items " + strconv.Itoa(g.MaxItems) + "'"),
				}},
				Next: join,
			},
			{
				Condition: asl.Expr(count + " = 0"),
				Output:    map[string]any{"results": []any{}},
				Next:      join,
			},
		},
		Default: g.Name,
	})
	refs := l.refs(g.PromptTemplate, g.ExecutorConfig)
	extra := map[string]any{
		"group": g.Name,
		"item":  asl.Expr("$states.input.item"),
		"index": asl.Expr("$states.input.index"),
		"total": asl.Expr(count),
	}
	p := l.payload(task.ModeBranch, g, refs)
	for k, v := range extra {
		p[k] = v
	}
	m := &asl.Map{
		Comment: fmt.Sprintf("One branch per item, up to %d; join: %s.", g.MaxItems, g.Join),
		Items:   asl.Expr(items),
		ItemSelector: map[string]any{
			"item":  asl.Expr("$states.context.Map.Item.Value"),
			"index": asl.Expr("$states.context.Map.Item.Index"),
		},
		MaxConcurrency: min(g.MaxItems, maxMapConcurrency),
		Output:         map[string]any{"results": exprResult},
		Catch:          l.failureCatch(g.Name, g, pipeline.FailureAbort),
		Next:           join,
	}
	m.ItemProcessor.ProcessorConfig = &asl.ProcessorConfig{Mode: asl.ModeInline}
	state := g.Name + " item"
	m.ItemProcessor.StartAt = state
	switch g.Executor {
	case pipeline.ExecHuman, pipeline.ExecPipeline:
		w := waiting{states: &m.ItemProcessor.States, state: state, step: g.Name, cfg: g, exec: g.ExecutorConfig, refs: refs,
			wait: g.TimeoutSeconds, where: fmt.Sprintf("fan_out %q", g.Name), pos: fieldPos(g.Fields, "executor_config", g.Pos),
			extra: extra, item: true}
		if g.Executor == pipeline.ExecHuman {
			m.ItemProcessor.StartAt = l.humanBranch(w)
		} else {
			m.ItemProcessor.StartAt = l.childBranch(w)
		}
	default:
		l.checkPayload(g.Name, p)
		l.branchStates(&m.ItemProcessor.States, state, g.Name, p, itemTaskTimeout(g))
	}
	l.add(&l.sm.States, g.Name, m)
	l.join(i, g.Name, g, asl.Expr("$exists($states.input.results) ? $states.input.results : []"))
}

// Marshal encodes a state machine as indented JSON in a stable order. A
// ${NAME} that is not one of Stepline's resource placeholders (a secret
// reference in an executor config) is written with its brace escaped, so
// CloudFormation's definition substitutions leave it for run time.
func Marshal(sm *asl.StateMachine) ([]byte, error) {
	b, err := json.MarshalIndent(sm, "", "  ")
	if err != nil {
		return nil, err
	}
	return escapePlaceholders(unescapeHTML(b)), nil
}

// MarshalCompact is Marshal without indentation: what is deployed and what
// the definition size limit applies to.
func MarshalCompact(sm *asl.StateMachine) ([]byte, error) {
	b, err := sm.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return escapePlaceholders(unescapeHTML(b)), nil
}

// unescapeHTML undoes encoding/json's \u003c, \u003e and \u0026 escapes in
// JSON text, which make JSONata comparisons hard to read.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, kept whole
		i++
	}
	return out
}

// escapePlaceholders rewrites ${NAME} as $\u007bNAME} unless NAME is a
// resource placeholder (an ARN substitution). JSON decodes both the same.
func escapePlaceholders(b []byte) []byte {
	i := bytes.Index(b, []byte("${"))
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/32)
	for i >= 0 {
		j := bytes.IndexByte(b[i:], '}')
		if j > 0 && isResourcePlaceholder(string(b[i:i+j+1])) {
			out = append(out, b[:i+j+1]...)
			b = b[i+j+1:]
		} else {
			out = append(out, b[:i]...)
			out = append(out, `$\u007b`...)
			b = b[i+2:]
		}
		i = bytes.Index(b, []byte("${"))
	}
	return append(out, b...)
}

func isResourcePlaceholder(p string) bool {
	if p == task.StepFunctionPlaceholder || p == task.ApprovalFunctionPlaceholder {
		return true
	}
	return strings.HasPrefix(p, "${Pipeline") && strings.HasSuffix(p, "Arn}") && !strings.ContainsAny(p[2:len(p)-1], "{}$ -")
}

// Placeholders lists the resource placeholders a definition uses, sorted:
// what CDK must substitute and the local engine must resolve.
func Placeholders(def []byte) []string {
	var out []string
	s := string(def)
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		p := s[i : i+j+1]
		if isResourcePlaceholder(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
		s = s[i+j+1:]
	}
	slices.Sort(out)
	return out
}
