package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/internal/jsonstr"
)

// program is a definition prepared for running: validated, every JSONata
// string compiled once. It is immutable and shared by every run of the
// definition.
type program struct {
	def    *asl.StateMachine
	hash   string // sha256 of the marshalled definition
	root   *scope
	states map[string]*stateProg       // state names are unique in a machine
	exprs  exprCache                   // while compiling: the expressions compiled so far
	seen   map[*scope]map[string]bound // while compiling: each scope's bodies met so far
	// deferCheck: while compiling, JSONata bodies are checked at their
	// program's first compile rather than now (compileChecked).
	deferCheck bool
}

// scope is one States object: the top level, a Parallel branch or a Map
// item processor.
type scope struct {
	startAt string
	parent  *scope
	visible map[string]bool // variables assigned here or in an outer scope
}

type assignProg struct {
	name string
	val  *tmpl
}

type choiceProg struct {
	cond   *tmpl
	output *tmpl
	assign []assignProg
	next   string
}

type catchProg struct {
	errorEquals []string
	output      *tmpl
	assign      []assignProg
	next        string
}

type stateProg struct {
	name  string
	state asl.State
	scope *scope

	args, output, items, selector *tmpl
	timeout, heartbeat, seconds   *tmpl
	maxConcurrency, timestamp     *tmpl
	failError, failCause          *tmpl
	assign                        []assignProg
	choices                       []choiceProg
	defaultNext                   string
	catches                       []catchProg
	retry                         []asl.Retrier
	branches                      []*scope
	processor                     *scope
	next                          string
	end                           bool
	resource                      string
	readsContext                  bool // some expression may read $states.context
}

// compile validates def, allowing up to maxBytes of compact JSON (0:
// asl.MaxDefinitionBytes), and compiles its expressions.
func compile(def *asl.StateMachine, maxBytes int) (*program, error) {
	p, _, err := compileFull(def, maxBytes)
	return p, err
}

// compileFull is compile returning what it established of def.
func compileFull(def *asl.StateMachine, maxBytes int) (*program, Checked, error) {
	if def == nil {
		return nil, Checked{}, fmt.Errorf("compile definition: nil state machine")
	}
	if maxBytes <= 0 {
		maxBytes = asl.MaxDefinitionBytes
	}
	raw, err := asl.Marshal(def)
	if err != nil {
		return nil, Checked{}, fmt.Errorf("compile definition: %w", err)
	}
	size := compactSize(raw)
	if size > maxBytes {
		return nil, Checked{}, fmt.Errorf("compile definition: definition is %d bytes, over the %d-byte limit", size, maxBytes)
	}
	if err := validate(def); err != nil {
		return nil, Checked{}, fmt.Errorf("compile definition: %w", err)
	}
	sum := sha256.Sum256(raw)
	c := Checked{Hash: hex.EncodeToString(sum[:]), Size: size}
	p, err := build(def, c.Hash, true)
	if err != nil {
		return nil, Checked{}, err
	}
	return p, c, nil
}

// compileChecked is compile for a definition compile accepted before
// with c: the size limit and the structural checks as compile applies
// them, the hash and size taken from c, and each JSONata body checked
// when its program is first compiled rather than now.
func compileChecked(def *asl.StateMachine, c Checked, maxBytes int) (*program, error) {
	if def == nil {
		return nil, fmt.Errorf("compile definition: nil state machine")
	}
	if maxBytes <= 0 {
		maxBytes = asl.MaxDefinitionBytes
	}
	if !validHash(c.Hash) || c.Size <= 0 {
		return nil, fmt.Errorf("compile definition: checked hash %q and size %d are not a compile's", c.Hash, c.Size)
	}
	if c.Size > maxBytes {
		return nil, fmt.Errorf("compile definition: definition is %d bytes, over the %d-byte limit", c.Size, maxBytes)
	}
	if err := validate(def); err != nil {
		return nil, fmt.Errorf("compile definition: %w", err)
	}
	return build(def, c.Hash, false)
}

// validHash reports whether h is a SHA-256 in lower-case hex, as compile
// writes it.
func validHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !('0' <= h[i] && h[i] <= '9' || 'a' <= h[i] && h[i] <= 'f') {
			return false
		}
	}
	return true
}

// build compiles the states of a validated def whose hash is hash.
// check: each distinct JSONata body is compiled on its own now, so that a
// broken one fails here; otherwise when its program is first compiled.
func build(def *asl.StateMachine, hash string, check bool) (*program, error) {
	p := &program{def: def, hash: hash, states: map[string]*stateProg{}, exprs: exprCache{}, seen: map[*scope]map[string]bound{}, deferCheck: !check}
	var err error
	p.root, err = p.scope(def.StartAt, def.States, nil)
	if err != nil {
		return nil, fmt.Errorf("compile definition: %w", err)
	}
	p.exprs, p.seen = nil, nil
	return p, nil
}

// Checked is what the engine's compile of a definition established: the
// definition's hash (sha256 of asl.Marshal's text: the DefHash of its
// runs' checkpoints) and its size as compact JSON. A caller that keeps a
// definition's exact bytes (a cache of compiled definitions, verified when
// read) may keep its Checked beside them and give both to PrepareChecked
// in a later process.
type Checked struct {
	Hash string `json:"hash"`
	Size int    `json:"size"`
}

// Prepare compiles def as Start does when it first sees it (the size
// limit, the structural checks, every JSONata body compiled on its own)
// and keeps it, so that runs of def start without compiling it again. It
// returns what the compile established; an error is the one Start would
// return for def.
func (e *Engine) Prepare(def *asl.StateMachine) (Checked, error) {
	p, c, err := compileFull(def, e.cfg.MaxDefinitionBytes)
	if err != nil {
		return Checked{}, err
	}
	e.keep(def, p)
	return c, nil
}

// PrepareChecked keeps def, a definition Prepare accepted before and
// returned c for, decoded again from the same bytes: the size limit (c's
// size) and every structural check apply as in Prepare, but def is not
// marshalled again to hash it, and its JSONata bodies are not compiled
// now: each is compiled when its program is first needed (a plain path
// never is), and a body that does not compile fails that evaluation. A
// definition not decoded from the bytes Prepare accepted must go through
// Prepare (or Start), which refuses a broken body before any run begins.
func (e *Engine) PrepareChecked(def *asl.StateMachine, c Checked) error {
	p, err := compileChecked(def, c, e.cfg.MaxDefinitionBytes)
	if err != nil {
		return err
	}
	e.keep(def, p)
	return nil
}

// keep keeps p as def's program, as program does.
func (e *Engine) keep(def *asl.StateMachine, p *program) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.progs) >= maxPrograms {
		clear(e.progs)
	}
	e.progs[def] = p
}

// compactSize is the length raw, valid JSON, has once compacted (as
// json.Compact writes it): its bytes less the whitespace outside strings,
// counted without writing the compact copy.
func compactSize(raw []byte) int {
	n := len(raw)
	for _, c := range jsonstr.Outside(raw) {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			n--
		}
	}
	return n
}

// validate is def.Validate without Step Functions' size limit, which the
// caller checked against its own.
func validate(def *asl.StateMachine) error {
	var errs asl.ErrorList
	for _, p := range def.CheckStates() {
		if !p.Warning {
			errs = append(errs, p)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (p *program) scope(startAt string, states asl.States, parent *scope) (*scope, error) {
	sc := &scope{startAt: startAt, parent: parent, visible: map[string]bool{}}
	if parent != nil {
		for v := range parent.visible {
			sc.visible[v] = true
		}
	}
	for _, v := range asl.VisibleVariables(states) {
		sc.visible[v] = true
	}
	for name, st := range states.All() {
		sp, err := p.state(name, st, sc)
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", name, err)
		}
		p.states[name] = sp
	}
	return sc, nil
}

func (p *program) state(name string, st asl.State, sc *scope) (*stateProg, error) {
	sp := &stateProg{name: name, state: st, scope: sc}
	seen := p.seen[sc]
	if seen == nil {
		seen = map[string]bound{}
		p.seen[sc] = seen
	}
	bind := binding{visible: sc.visible, seen: seen}
	var err error
	field := func(dst **tmpl, v any, f string) {
		if err != nil || v == nil {
			return
		}
		*dst, err = p.exprs.tmplChecking(v, f, bind, !p.deferCheck)
	}
	assign := func(m map[string]any, f string) []assignProg {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []assignProg
		for _, k := range keys {
			var t *tmpl
			field(&t, m[k], f+"/"+k)
			if t == nil && err == nil {
				t = &tmpl{static: true}
			}
			out = append(out, assignProg{name: k, val: t})
		}
		return out
	}
	catches := func(cs []asl.Catcher) []catchProg {
		var out []catchProg
		for i, c := range cs {
			cp := catchProg{errorEquals: c.ErrorEquals, next: c.Next}
			field(&cp.output, c.Output, fmt.Sprintf("Catch[%d]/Output", i))
			cp.assign = assign(c.Assign, fmt.Sprintf("Catch[%d]/Assign", i))
			out = append(out, cp)
		}
		return out
	}
	str := func(dst **tmpl, s, f string) {
		if s != "" {
			field(dst, s, f)
		}
	}
	switch v := st.(type) {
	case *asl.Pass:
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
		sp.next, sp.end = v.Next, v.End
	case *asl.Task:
		sp.resource = v.Resource
		field(&sp.args, v.Arguments, "Arguments")
		field(&sp.timeout, v.TimeoutSeconds, "TimeoutSeconds")
		field(&sp.heartbeat, v.HeartbeatSeconds, "HeartbeatSeconds")
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
		sp.retry = v.Retry
		sp.catches = catches(v.Catch)
		sp.next, sp.end = v.Next, v.End
	case *asl.Choice:
		for i, r := range v.Choices {
			cp := choiceProg{next: r.Next}
			field(&cp.cond, r.Condition, fmt.Sprintf("Choices[%d]/Condition", i))
			field(&cp.output, r.Output, fmt.Sprintf("Choices[%d]/Output", i))
			cp.assign = assign(r.Assign, fmt.Sprintf("Choices[%d]/Assign", i))
			sp.choices = append(sp.choices, cp)
		}
		sp.defaultNext = v.Default
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
	case *asl.Parallel:
		field(&sp.args, v.Arguments, "Arguments")
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
		sp.retry = v.Retry
		sp.catches = catches(v.Catch)
		sp.next, sp.end = v.Next, v.End
		if err == nil {
			for _, b := range v.Branches {
				var bs *scope
				bs, err = p.scope(b.StartAt, b.States, sc)
				if err != nil {
					break
				}
				sp.branches = append(sp.branches, bs)
			}
		}
	case *asl.Map:
		field(&sp.items, v.Items, "Items")
		field(&sp.selector, v.ItemSelector, "ItemSelector")
		field(&sp.maxConcurrency, v.MaxConcurrency, "MaxConcurrency")
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
		sp.retry = v.Retry
		sp.catches = catches(v.Catch)
		sp.next, sp.end = v.Next, v.End
		if err == nil {
			sp.processor, err = p.scope(v.ItemProcessor.StartAt, v.ItemProcessor.States, sc)
		}
	case *asl.Wait:
		field(&sp.seconds, v.Seconds, "Seconds")
		str(&sp.timestamp, v.Timestamp, "Timestamp")
		field(&sp.output, v.Output, "Output")
		sp.assign = assign(v.Assign, "Assign")
		sp.next, sp.end = v.Next, v.End
	case *asl.Succeed:
		field(&sp.output, v.Output, "Output")
		sp.end = true
	case *asl.Fail:
		str(&sp.failError, v.Error, "Error")
		str(&sp.failCause, v.Cause, "Cause")
		sp.end = true
	default:
		return nil, fmt.Errorf("unsupported state type %T", st)
	}
	if err != nil {
		return nil, err
	}
	sp.readsContext = readsContext(sp)
	return sp, nil
}

// readsContext reports whether an expression of the state may read
// $states.context: it names it, or uses $states other than through
// .input, .result or .errorOutput.
func readsContext(sp *stateProg) bool {
	tmpls := []*tmpl{sp.args, sp.output, sp.items, sp.selector, sp.timeout, sp.heartbeat, sp.seconds,
		sp.maxConcurrency, sp.timestamp, sp.failError, sp.failCause}
	addAssign := func(as []assignProg) {
		for _, a := range as {
			tmpls = append(tmpls, a.val)
		}
	}
	addAssign(sp.assign)
	for _, c := range sp.choices {
		tmpls = append(tmpls, c.cond, c.output)
		addAssign(c.assign)
	}
	for _, c := range sp.catches {
		tmpls = append(tmpls, c.output)
		addAssign(c.assign)
	}
	for _, t := range tmpls {
		if t != nil && t.readsContext() {
			return true
		}
	}
	return false
}

func (t *tmpl) readsContext() bool {
	if t.expr != nil {
		return exprReadsContext(t.expr.src)
	}
	for _, f := range t.fields {
		if f.readsContext() {
			return true
		}
	}
	for _, it := range t.items {
		if it.readsContext() {
			return true
		}
	}
	return false
}

// exprReadsContext looks at every $states in src: followed by .input,
// .result or .errorOutput it does not read the context; anything else
// (.context, the whole $states, a quoted name) may.
func exprReadsContext(src string) bool {
	isName := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	skipSpace := func(i int) int {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		return i
	}
	for i := 0; ; {
		j := strings.Index(src[i:], "$states")
		if j < 0 {
			return false
		}
		i += j + len("$states")
		if i < len(src) && isName(src[i]) {
			continue // another variable, such as $statesX
		}
		k := skipSpace(i)
		if k >= len(src) || src[k] != '.' {
			return true
		}
		k = skipSpace(k + 1)
		start := k
		for k < len(src) && isName(src[k]) {
			k++
		}
		switch src[start:k] {
		case "input", "result", "errorOutput":
		default:
			return true
		}
	}
}
