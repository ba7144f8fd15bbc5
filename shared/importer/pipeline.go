package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/secret"
)

// fileConv converts one pipeline or library step file in place, on its
// YAML tree, so that comments and key order survive.
type fileConv struct {
	file  string   // the source file, as notes name it
	lines [][]byte // its lines, to place text inside block scalars
	notes []Note
	imp   *importer

	vars      map[string]bool
	includes  []string // context_template.include paths to add
	seen      map[string]bool
	skippable map[string]bool // steps with a when: of their own
	library   bool            // a library step file: step references are checked where it is used
}

func newFileConv(imp *importer, file string, src []byte) *fileConv {
	return &fileConv{file: file, lines: bytes.Split(src, []byte("\n")), imp: imp, vars: map[string]bool{}, seen: map[string]bool{}, skippable: map[string]bool{}}
}

func (f *fileConv) add(n *yaml.Node, level Level, kind, msg, orig string) {
	f.notes = append(f.notes, Note{File: f.file, Line: n.Line, Col: n.Column, Level: level, Kind: kind, Msg: msg, Original: orig})
}

// textPos places byte offset off of scalar n's value in the file.
func (f *fileConv) textPos(n *yaml.Node, off int) (int, int) {
	text := n.Value
	if off < 0 || off > len(text) {
		return n.Line, n.Column
	}
	k := strings.Count(text[:off], "\n")
	col := utf8.RuneCountInString(text[strings.LastIndexByte(text[:off], '\n')+1 : off])
	switch n.Style {
	case yaml.LiteralStyle:
		indent := 0
		for i := n.Line; i < len(f.lines); i++ {
			if l := f.lines[i]; len(bytes.TrimSpace(l)) > 0 {
				indent = len(l) - len(bytes.TrimLeft(l, " "))
				break
			}
		}
		return n.Line + 1 + k, indent + 1 + col
	case 0, yaml.TaggedStyle:
		if k == 0 {
			return n.Line, n.Column + col
		}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if k == 0 && !strings.ContainsAny(text[:off], `\'`) {
			return n.Line, n.Column + 1 + col
		}
	}
	return n.Line, n.Column
}

func (f *fileConv) scope() *scope {
	sc := &scope{vars: f.vars, include: f.include}
	if !f.library {
		skippable := f.skippable
		sc.mayBeAbsent = func(name string) bool { return skippable[name] }
		seen := f.seen
		sc.stepKnown = func(name string) bool {
			if i := strings.IndexByte(name, '/'); i >= 0 {
				name = name[:i] // a fan_out item: steps['check/0']
			}
			return seen[name]
		}
	}
	return sc
}

func (f *fileConv) include(path string) {
	for _, p := range f.includes {
		if p == path {
			return
		}
	}
	f.includes = append(f.includes, path)
}

// template converts the template in scalar n, if it is one.
func (f *fileConv) template(key, n *yaml.Node, sc *scope) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.ShortTag() != "!!str" || !IsTemplate(n.Value) {
		return
	}
	out, ns := convertTemplate(n.Value, sc)
	person := 0
	for _, t := range ns {
		line, col := f.textPos(n, t.off)
		f.notes = append(f.notes, Note{File: f.file, Line: line, Col: col, Level: t.level, Kind: t.kind, Msg: t.msg, Original: t.orig})
		if t.level == Person {
			person++
		}
	}
	if person > 0 && key != nil {
		comment(key, fmt.Sprintf("stepline import: needs a person: %d construct(s) below could not be converted from Jinja2; each is marked {%% %s %%} followed by the original text", person, Marker))
	}
	setValue(n, out)
}

// condition converts a when:-like expression in scalar n.
func (f *fileConv) condition(key, n *yaml.Node, roots map[string]bool, sc *scope) {
	if n.Kind != yaml.ScalarNode {
		return
	}
	out, ns := convertWhen(n.Value, roots, sc)
	for _, t := range ns {
		line, col := f.textPos(n, t.off)
		f.notes = append(f.notes, Note{File: f.file, Line: line, Col: col, Level: t.level, Kind: t.kind, Msg: t.msg, Original: t.orig})
		if t.level == Person && key != nil {
			comment(key, "stepline import: needs a person: "+t.msg)
		}
	}
	setValue(n, out)
}

func setValue(n *yaml.Node, v string) {
	if n.Value == v {
		return
	}
	n.Value = v
	if strings.Contains(v, "\n") && n.Style != yaml.LiteralStyle {
		n.Style = yaml.LiteralStyle
	}
}

func comment(key *yaml.Node, text string) {
	if key.HeadComment != "" {
		key.HeadComment += "\n"
	}
	key.HeadComment += "# " + text
}

// entries are a mapping's key/value pairs.
func entries(n *yaml.Node) [][2]*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

func lookup(n *yaml.Node, key string) *yaml.Node {
	for _, e := range entries(n) {
		if e[0].Value == key {
			return e[1]
		}
	}
	return nil
}

// drop removes key from mapping n, noting why.
func (f *fileConv) drop(n *yaml.Node, key string, why string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			k := n.Content[i]
			f.add(k, Dropped, "field "+key, fmt.Sprintf("%s: %s", key, why), "")
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			if n.Style == yaml.FlowStyle {
				n.Style = 0 // a comment needs a block mapping
			}
			text := fmt.Sprintf("stepline import: dropped %s: %s", key, why)
			switch {
			case i > 0 && i < len(n.Content):
				comment(n.Content[i], text)
			case len(n.Content) > 0:
				comment(n, text) // above the mapping: before a list item's dash
			}
			return
		}
	}
}

// Fields the reference accepts that Stepline has no place for, and why.
var droppedFields = map[string]string{
	"readiness":           "promotion-readiness criteria are advisory in the reference and Stepline has none",
	"calibration":         "Stepline has no calibration gate; the step is gated on its confidence (and grounding and checks)",
	"include_approx_cost": "Stepline has no approximate (OpenRouter) cost",
	"max_trace_chars":     "Stepline's verifier takes no trace cap",
}

const unknownField = "the reference ignores fields it does not know"

// builtinFields are the fields of Stepline's pipeline format, by the
// name of their definition in its JSON Schema, used when Options.Schema
// is not given (or lacks a definition).
var builtinFields = map[string][]string{
	"pipeline":           {"name", "description", "tags", "version", "stage", "vars", "trigger", "context_template", "steps", "notifications", "durable", "budget", "schedule"},
	"step":               {"use", "name", "executor", "executor_config", "prompt_template", "confidence_threshold", "on_low_confidence", "on_abort", "timeout_seconds", "when", "on_failure", "retry", "verifier", "loop_until", "grounding", "deterministic_checks"},
	"branch":             {"use", "name", "executor", "executor_config", "prompt_template", "timeout_seconds", "weight", "verifier"},
	"parallel":           {"name", "join", "confidence_threshold", "on_low_confidence", "on_abort", "timeout_seconds", "when", "steps"},
	"fanOut":             {"use", "name", "over", "as", "executor", "executor_config", "prompt_template", "timeout_seconds", "join", "confidence_threshold", "on_low_confidence", "on_abort", "max_items", "on_empty", "when", "verifier"},
	"verifier":           {"executor", "executor_config", "mode", "combination_strategy", "veto_floor", "trigger"},
	"trigger":            {"match", "dedup"},
	"budget":             {"max_tokens", "max_usd", "max_cost"},
	"deterministicCheck": {"name", "type", "url", "method", "headers", "payload", "run", "message", "expect", "timeout_seconds"},
}

// keep drops every key of n that is not in fields.
func (f *fileConv) keep(n *yaml.Node, fields []string) {
	for _, e := range entries(n) {
		k := e[0].Value
		found := false
		for _, fl := range fields {
			if fl == k {
				found = true
				break
			}
		}
		if !found {
			why, ok := droppedFields[k]
			if !ok {
				why = unknownField
			}
			f.drop(n, k, why)
		}
	}
}

// convertPipeline converts a pipeline document's root mapping.
func (f *fileConv) convertPipeline(root *yaml.Node) {
	if v := lookup(root, "vars"); v != nil {
		for _, e := range entries(v) {
			f.vars[e[0].Value] = true
		}
	}
	f.keep(root, f.imp.fields("pipeline"))
	if t := lookup(root, "trigger"); t != nil && t.Kind == yaml.MappingNode {
		f.keep(t, f.imp.fields("trigger"))
	}
	if b := lookup(root, "budget"); b != nil && b.Kind == yaml.MappingNode {
		f.keep(b, f.imp.fields("budget"))
	}
	existing := map[string]bool{}
	if ct := lookup(root, "context_template"); ct != nil {
		if inc := lookup(ct, "include"); inc != nil {
			for _, it := range inc.Content {
				existing[it.Value] = true
			}
		}
	}
	if steps := lookup(root, "steps"); steps != nil && steps.Kind == yaml.SequenceNode {
		for _, s := range steps.Content {
			f.stepEntry(s)
		}
	}
	if ns := lookup(root, "notifications"); ns != nil {
		f.notifications(ns)
	}
	var add []string
	for _, p := range f.includes {
		if !existing[p] {
			add = append(add, p)
		}
	}
	if len(add) > 0 {
		f.addIncludes(root, add)
	}
}

func (f *fileConv) addIncludes(root *yaml.Node, paths []string) {
	ct := lookup(root, "context_template")
	if ct == nil || ct.Kind != yaml.MappingNode {
		ct = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "context_template"}
		comment(key, "stepline import: added for context.X references the reference's documentation writes")
		// before steps, where readers look for it
		at := len(root.Content)
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "steps" {
				at = i
				break
			}
		}
		root.Content = append(root.Content[:at], append([]*yaml.Node{key, ct}, root.Content[at:]...)...)
	}
	inc := lookup(ct, "include")
	if inc == nil {
		inc = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		ct.Content = append(ct.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "include"}, inc)
	}
	for _, p := range paths {
		inc.Content = append(inc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p})
	}
}

// whenRoots are the names a pipeline's when: may start with; nil (any)
// in a library step, whose names are checked where it is used.
func (f *fileConv) whenRoots(root *yaml.Node) map[string]bool {
	if f.library {
		return nil
	}
	r := map[string]bool{"steps": true, "vars": true, "labels": true, "pipeline_name": true, "pipeline_run_id": true}
	for v := range f.vars {
		r[v] = true
	}
	if ct := lookup(root, "context_template"); ct != nil {
		if inc := lookup(ct, "include"); inc != nil {
			for _, it := range inc.Content {
				parts := strings.Split(it.Value, ".")
				r[parts[len(parts)-1]] = true
				r[parts[0]] = true
			}
		}
	}
	for _, p := range f.includes {
		r[p] = true
	}
	return r
}

// stepEntry converts one entry of steps:.
func (f *fileConv) stepEntry(s *yaml.Node) {
	if s.Kind != yaml.MappingNode {
		return
	}
	switch {
	case lookup(s, "parallel") != nil:
		g := lookup(s, "parallel")
		f.keep(g, f.imp.fields("parallel"))
		f.when(g)
		var names []string
		if bs := lookup(g, "steps"); bs != nil {
			for _, b := range bs.Content {
				f.inline(b, "branch")
				f.keep(b, f.imp.fields("branch"))
				f.uses(b)
				f.stepBody(b)
				if n := lookup(b, "name"); n != nil {
					names = append(names, n.Value)
				}
			}
		}
		f.register(lookup(g, "name"))
		for _, n := range names {
			f.register(&yaml.Node{Value: n})
		}
	case lookup(s, "fan_out") != nil:
		g := lookup(s, "fan_out")
		if u := lookup(g, "use"); u != nil {
			f.drop(g, "use", "the reference does not apply use: in a fan_out")
			if lookup(g, "executor") == nil {
				f.add(u, Person, "use", "a fan_out with use: and no executor of its own: the reference refused it; write its executor", "use: "+u.Value)
				comment(keyOf(g, "name"), "stepline import: needs a person: this fan_out has no executor (the reference ignored its use:)")
			}
		}
		f.keep(g, f.imp.fields("fanOut"))
		f.uses(g)
		f.when(g)
		if over := lookup(g, "over"); over != nil {
			f.over(keyOf(g, "over"), over)
		}
		f.stepBody(g)
		f.register(lookup(g, "name"))
	default:
		if f.library {
			f.keep(s, append([]string{"description", "tags"}, f.imp.fields("step")...))
		} else {
			f.keep(s, f.imp.fields("step"))
		}
		f.uses(s)
		f.when(s)
		f.stepBody(s)
		f.webhookBody(s)
		f.calibration(s)
		f.register(lookup(s, "name"))
		if n := lookup(s, "name"); n != nil && (lookup(s, "when") != nil || f.imp.libWhen[str(lookup(s, "use"))] != "") {
			f.skippable[n.Value] = true
			f.skippable[pipeline.TemplateName(n.Value)] = true
		}
		if lookup(s, "name") == nil {
			if u := lookup(s, "use"); u != nil {
				f.register(u)
			}
		}
	}
}

func (f *fileConv) register(n *yaml.Node) {
	if n == nil {
		return
	}
	f.seen[n.Value] = true
	f.seen[pipeline.TemplateName(n.Value)] = true
}

func keyOf(m *yaml.Node, key string) *yaml.Node {
	for _, e := range entries(m) {
		if e[0].Value == key {
			return e[0]
		}
	}
	return nil
}

func (f *fileConv) when(m *yaml.Node) {
	w := lookup(m, "when")
	if w == nil || w.Kind != yaml.ScalarNode || w.Tag == "!!null" {
		return
	}
	f.condition(keyOf(m, "when"), w, f.whenRoots(f.imp.root), f.scope())
}

// uses notes the library step an entry names with use:, so that the
// context names its converted templates read are included in this
// pipeline.
func (f *fileConv) uses(m *yaml.Node) {
	u := lookup(m, "use")
	if u == nil || f.library {
		return
	}
	for _, p := range f.imp.libIncludes[u.Value] {
		f.include(p)
	}
	w, ok := f.imp.libWhen[u.Value]
	if !ok || lookup(m, "when") != nil {
		return
	}
	// The library step's condition, read where it is used.
	if _, ns := convertWhen(w, f.whenRoots(f.imp.root), f.scope()); len(ns) > 0 && ns[len(ns)-1].level == Person {
		msg := fmt.Sprintf("the when: of library step %q: %s", u.Value, ns[len(ns)-1].msg)
		f.add(u, Person, "when", msg, w)
		comment(keyOf(m, "use"), "stepline import: needs a person: "+msg)
	}
}

// over converts a fan_out's over:, which the reference renders as a
// template and reads back as a list.
func (f *fileConv) over(key, n *yaml.Node) {
	src := strings.TrimSpace(n.Value)
	inner := src
	if strings.HasPrefix(src, "{{") && strings.HasSuffix(src, "}}") {
		inner = strings.TrimSpace(src[2 : len(src)-2])
	}
	if e, err := parseJinja(inner); err == nil {
		if fl, ok := e.(*jfilter); ok && (fl.name == "tojson" || fl.name == "list") && len(fl.args) == 0 {
			if _, ok := fl.x.(*jpath); ok {
				f.add(n, Converted, "over", fmt.Sprintf("over: the %s filter dropped (Stepline iterates the list itself)", fl.name), "")
				inner = strings.TrimSpace(inner[:strings.LastIndex(inner, "|")])
			}
		}
	}
	if inner != src {
		orig, style := n.Value, n.Style
		n.Value, n.Style = inner, 0
		f.condition(key, n, f.whenRoots(f.imp.root), f.scope())
		if n.Value == inner && f.lastPerson() {
			n.Value, n.Style = orig, style
			return
		}
	} else {
		f.condition(key, n, f.whenRoots(f.imp.root), f.scope())
	}
	if what := f.overText(strings.TrimSpace(n.Value)); what != "" && !f.lastPerson() {
		f.add(n, Person, "over", fmt.Sprintf("over: %s holds text in Stepline, never a list (the reference parsed the rendered text as a list): fan out over a list a step answers, or one in the trigger's metadata", what), src)
		comment(key, "stepline import: needs a person: over reads text, not a list")
	}
}

// overText says, for a converted over: expression, what its root name
// is when that name always holds text in Stepline ("" otherwise): a var,
// the labels or a label, a trigger text field, the pipeline's name or
// the run's ID. The reference rendered over: to text and parsed that as
// a list, so a list written into a var or a label worked there;
// Stepline iterates a value, and validate refuses a fan_out over text.
func (f *fileConv) overText(expr string) string {
	root := expr
	if i := strings.IndexAny(root, ".[ "); i >= 0 {
		root = root[:i]
	}
	switch {
	case root == "" || root == "steps":
		return ""
	case f.vars[root], root == "vars":
		return "a var"
	case root == "labels", root == "pipeline_name", root == "pipeline_run_id":
		return root
	}
	if ct := lookup(f.imp.root, "context_template"); ct != nil {
		if inc := lookup(ct, "include"); inc != nil {
			for _, it := range inc.Content {
				parts := strings.Split(it.Value, ".")
				if parts[len(parts)-1] != root {
					continue
				}
				if parts[0] == "labels" || len(parts) == 1 && slices.Contains([]string{"summary", "severity", "source", "pipeline", "received_at", "fingerprint", "team"}, parts[0]) {
					return "the trigger's " + it.Value
				}
			}
		}
	}
	return ""
}

func (f *fileConv) lastPerson() bool {
	return len(f.notes) > 0 && f.notes[len(f.notes)-1].Level == Person
}

// stepBody converts the templates and nested blocks of a step, branch
// or fan_out.
func (f *fileConv) stepBody(s *yaml.Node) {
	sc := f.scope()
	if p := lookup(s, "prompt_template"); p != nil {
		f.template(keyOf(s, "prompt_template"), p, sc)
	}
	if c := lookup(s, "executor_config"); c != nil {
		f.values(keyOf(s, "executor_config"), c, sc)
	}
	if of := lookup(s, "on_failure"); of != nil && of.Kind == yaml.MappingNode {
		if wh := lookup(of, "webhook"); wh != nil {
			f.values(keyOf(of, "webhook"), wh, sc)
		}
	}
	if v := lookup(s, "verifier"); v != nil && v.Kind == yaml.MappingNode {
		f.keep(v, f.imp.fields("verifier"))
		if c := lookup(v, "executor_config"); c != nil {
			f.values(keyOf(v, "executor_config"), c, sc)
			if a := lookup(c, "agent"); a != nil {
				msg := "a Stepline verifier is one model call and cannot run an agent: give it a model, or make the agent's review its own step"
				f.add(a, Person, "verifier agent", msg, "agent: "+a.Value)
				comment(keyOf(v, "executor_config"), "stepline import: needs a person: "+msg)
			}
		}
	}
	if g := lookup(s, "grounding"); g != nil && g.Kind == yaml.MappingNode {
		if c := lookup(g, "executor_config"); c != nil {
			f.values(keyOf(g, "executor_config"), c, sc)
		}
	}
	if dc := lookup(s, "deterministic_checks"); dc != nil && dc.Kind == yaml.SequenceNode {
		for _, ch := range dc.Content {
			f.keep(ch, f.imp.fields("deterministicCheck"))
			for _, k := range []string{"run", "url", "message"} {
				if v := lookup(ch, k); v != nil {
					f.template(keyOf(ch, k), v, sc)
				}
			}
			for _, k := range []string{"headers", "payload"} {
				if v := lookup(ch, k); v != nil {
					f.values(keyOf(ch, k), v, sc)
				}
			}
			if ex := lookup(ch, "expect"); ex != nil {
				f.condition(keyOf(ch, "expect"), ex, map[string]bool{"response": true, "result": true, "exit_code": true}, sc)
			}
		}
	}
}

// values converts the templates among the strings of a free-form value.
func (f *fileConv) values(key, n *yaml.Node, sc *scope) {
	switch n.Kind {
	case yaml.ScalarNode:
		f.template(key, n, sc)
	case yaml.MappingNode:
		for _, e := range entries(n) {
			f.values(e[0], e[1], sc)
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			f.values(key, it, sc)
		}
	}
}

// notifications converts a pipeline's notifications: templates, and the
// telegram channel's settings from config.yaml.
func (f *fileConv) notifications(ns *yaml.Node) {
	sc := &scope{vars: f.vars, include: f.include}
	for _, a := range entries(ns) {
		items := []*yaml.Node{a[1]}
		if a[1].Kind == yaml.SequenceNode {
			items = a[1].Content
		}
		for _, it := range items {
			if it.Kind != yaml.MappingNode {
				continue
			}
			if t := lookup(it, "template"); t != nil {
				f.template(keyOf(it, "template"), t, sc)
			}
			if c := lookup(it, "config"); c != nil {
				f.values(keyOf(it, "config"), c, sc)
			}
			if ch := lookup(it, "channel"); ch != nil && ch.Value == "telegram" {
				f.telegram(a[0].Value, it)
			}
		}
	}
}

// telegram writes the bot token's reference and the chat id the
// reference keeps in config.yaml into a telegram notice.
func (f *fileConv) telegram(action string, it *yaml.Node) {
	cfg := lookup(it, "config")
	if cfg == nil || cfg.Kind != yaml.MappingNode {
		cfg = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		it.Content = append(it.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "config"}, cfg)
	}
	set := func(k, v string) {
		if lookup(cfg, k) != nil {
			return
		}
		cfg.Content = append(cfg.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle})
	}
	tg := f.imp.cfg.telegram
	set("bot_token", tg.botToken)
	set("chat_id", tg.chatID)
	f.add(it, Converted, "telegram", "telegram notice: bot_token and chat_id from config.yaml's notifications.telegram", "")
	if !f.imp.telegram {
		f.add(it, Person, "telegram channel", fmt.Sprintf("notifications.%s: Stepline's validate does not accept channel telegram yet; the notice is kept as converted", action), "")
		comment(keyOf(it, "channel"), "stepline import: needs a person: telegram channel (Stepline's validate does not accept it yet)")
	}
}

// expand replaces every alias in n by a copy of the value it names and
// every merge key (<<) by the entries it brings, so that each place is
// converted, and dropped, on its own; anchors are cleared. yamldoc has
// bounded the expanded size. A key written twice in one mapping keeps
// its first place and its last value, as the reference's YAML loader
// read it (Stepline refuses the repetition); dup is told of each
// repetition, by its key.
func expand(n *yaml.Node, dup func(key *yaml.Node)) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return expand(n.Alias, dup)
	}
	c := *n
	c.Anchor = ""
	c.Content = nil
	if n.Kind != yaml.MappingNode {
		for _, ch := range n.Content {
			c.Content = append(c.Content, expand(ch, dup))
		}
		return &c
	}
	have := map[string]bool{}
	at := map[string]int{} // where each key written here sits in c.Content
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag != "!!str" {
			srcs := []*yaml.Node{v}
			if r := resolveAlias(v); r.Kind == yaml.SequenceNode {
				srcs = r.Content
			}
			for _, s := range srcs {
				if r := resolveAlias(s); r.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(r.Content); j += 2 {
						merged = append(merged, r.Content[j], r.Content[j+1])
					}
				}
			}
			continue
		}
		if j, ok := at[k.Value]; ok && k.Kind == yaml.ScalarNode {
			c.Content[j+1] = expand(v, dup)
			dup(k)
			continue
		}
		have[k.Value] = true
		if k.Kind == yaml.ScalarNode {
			at[k.Value] = len(c.Content)
		}
		c.Content = append(c.Content, expand(k, dup), expand(v, dup))
	}
	for j := 0; j+1 < len(merged); j += 2 {
		if k := merged[j]; !have[k.Value] {
			have[k.Value] = true
			c.Content = append(c.Content, expand(k, dup), expand(merged[j+1], dup))
		}
	}
	return &c
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{}
	}
	return n
}

// webhookBody turns a webhook step's JSON prompt_template, whose
// templates all sit inside JSON strings, into executor_config.payload:
// the same body, encoded after rendering, so that a value holding a quote
// stays one string (the reference pasted it into the JSON text).
func (f *fileConv) webhookBody(s *yaml.Node) {
	if e := lookup(s, "executor"); e == nil || e.Value != "webhook" {
		return
	}
	cfg, pt := lookup(s, "executor_config"), lookup(s, "prompt_template")
	if cfg == nil || cfg.Kind != yaml.MappingNode || pt == nil || pt.Kind != yaml.ScalarNode || lookup(cfg, "payload") != nil {
		return
	}
	if m := lookup(cfg, "method"); m != nil && strings.EqualFold(m.Value, "GET") {
		return
	}
	if ct := lookup(cfg, "content_type"); ct != nil && !strings.Contains(ct.Value, "json") {
		return
	}
	body := strings.TrimSpace(pt.Value)
	if !strings.HasPrefix(body, "{") || strings.Contains(body, "{%") {
		return
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	payload, err := jsonNode(dec, 0)
	if err != nil || payload.Kind != yaml.MappingNode || dec.More() {
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		return
	}
	payload.Style = 0
	cfg.Style = 0
	cfg.Content = append(cfg.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "payload"}, payload)
	key := keyOf(s, "prompt_template")
	msg := "a JSON prompt_template of a webhook step → executor_config.payload (each value rendered, then encoded)"
	if escapeDollars(payload) {
		msg += "; each $ is written $$, as the reference sent the body's ${NAME} as text and Stepline resolves a payload's"
	}
	f.notes = append(f.notes, Note{File: f.file, Line: key.Line, Col: key.Column, Level: Converted, Kind: "webhook body", Msg: msg})
	for i := 0; i+1 < len(s.Content); i += 2 {
		if s.Content[i] == key {
			s.Content = append(s.Content[:i], s.Content[i+2:]...)
			break
		}
	}
}

// escapeDollars writes each "$" of the string values under n as "$$"
// (secret.Escape), and reports whether it found one. The reference sent
// a webhook's prompt_template as rendered, never resolving a ${NAME} in
// it, while Stepline resolves the references a payload's values write:
// escaped, a body that held "${PRICE}" still sends that text, and never
// the value of a secret that happens to have the name. Keys are sent as
// written either way.
func escapeDollars(n *yaml.Node) bool {
	found := false
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" && strings.Contains(n.Value, "$") {
			n.Value, found = secret.Escape(n.Value), true
		}
	case yaml.SequenceNode:
		for _, v := range n.Content {
			found = escapeDollars(v) || found
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			found = escapeDollars(n.Content[i]) || found
		}
	}
	return found
}

// jsonNode reads one JSON value as a YAML node, keeping key order.
func jsonNode(dec *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > MaxExprDepth {
		return nil, fmt.Errorf("too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := jsonNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kt.(string)}, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			l := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				v, err := jsonNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l.Content = append(l.Content, v)
			}
			_, err := dec.Token()
			return l, err
		}
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Style: yaml.DoubleQuotedStyle}, nil
	case json.Number:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok)
}

// calibration gives a kept calibration block the n_min and bin_width of
// config.yaml's calibration, which the reference applies to every step.
func (f *fileConv) calibration(s *yaml.Node) {
	cal, cfg := lookup(s, "calibration"), f.imp.cfg.calibration
	if cal == nil || cal.Kind != yaml.MappingNode || cfg == nil {
		return
	}
	kept := f.imp.fields("calibration")
	for _, k := range []string{"n_min", "bin_width"} {
		v := lookup(cfg, k)
		if v == nil || v.Kind != yaml.ScalarNode || lookup(cal, k) != nil || !slices.Contains(kept, k) {
			continue
		}
		cal.Content = append(cal.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: v.Value})
	}
}

// inline writes the library step a branch uses into the branch when the
// library step has fields a branch does not take: the reference ignored
// them there, and Stepline refuses them. The library step's fields are
// the base, the branch's own replace them (executor_config merges one
// level, as in the reference).
func (f *fileConv) inline(b *yaml.Node, target string) {
	u := lookup(b, "use")
	if u == nil || f.library {
		return
	}
	lib := f.imp.libSteps[u.Value]
	if lib == nil {
		return
	}
	takes := f.imp.fields(target)
	var extra []string
	for _, e := range entries(lib) {
		if k := e[0].Value; !slices.Contains(takes, k) && k != "description" && k != "tags" {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return
	}
	out := []*yaml.Node{}
	for _, e := range entries(lib) {
		k := e[0].Value
		if !slices.Contains(takes, k) || k == "use" {
			continue
		}
		v := expand(e[1], func(*yaml.Node) {}) // a copy: the library file was expanded already
		if local := lookup(b, k); local != nil {
			if k == "executor_config" && local.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode {
				for _, le := range entries(local) {
					replaced := false
					for i := 0; i+1 < len(v.Content); i += 2 {
						if v.Content[i].Value == le[0].Value {
							v.Content[i+1] = le[1]
							replaced = true
						}
					}
					if !replaced {
						v.Content = append(v.Content, le[0], le[1])
					}
				}
			} else {
				v = local
			}
		}
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v)
	}
	for _, e := range entries(b) {
		if k := e[0].Value; k != "use" && lookup(lib, k) == nil {
			out = append(out, e[0], e[1])
		}
	}
	msg := fmt.Sprintf("library step %q written into this %s: a %s does not take its %s (the reference ignored them there)", u.Value, target, target, strings.Join(extra, ", "))
	f.add(u, Converted, "use", msg, "")
	b.Content = out
	if b.Style == yaml.FlowStyle {
		b.Style = 0
	}
	comment(b, "stepline import: "+msg)
}
