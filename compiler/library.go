package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/compiler/when"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/yamldoc"
)

// Library is a project's step library: the steps of its steps directory
// (project.Project.StepFiles), by name. A pipeline names one with use:
// (see the package documentation, "The step library").
type Library struct {
	dir   string // the steps directory, for messages
	steps map[string]*LibraryStep
	ds    Diagnostics // every file's problems on its own, sorted
}

// LibraryStep is one step of the library, read from its file.
type LibraryStep struct {
	Name        string
	Description string
	Tags        []string
	Path        string       // its file
	Pos         pipeline.Pos // where its name is written
	// Step is the step as its file defines it, defaults applied; nil
	// when the file is not a step at all.
	Step *pipeline.Step

	file   *File
	body   *yaml.Node // the step's mapping, without description and tags
	nodes  int        // the nodes of body, aliases expanded
	broken bool       // it has an error on its own
}

// Use is a step, parallel branch or fan_out of a pipeline that names a
// library step.
type Use struct {
	Step string       // the library step's name, as use: writes it
	Pos  pipeline.Pos // where use: names it
	Kind string       // "step", "branch" or "fan_out"
	// As is the name the resolved step has in the pipeline (the library
	// step's, or the name written beside use:); "" when the use did not
	// resolve.
	As string
}

// Uses lists the uses of library steps in the file, in the order they
// are written.
func (f *File) Uses() []Use {
	if f == nil {
		return nil
	}
	return slices.Clone(f.uses)
}

// LoadLibrary reads the step library of env.Project: each of its step
// files is parsed and checked on its own (with env.CheckExecutor), and
// two files that define the same name are an error. It returns nil when
// env.Project is nil (no project, so no library).
func LoadLibrary(env Env) *Library {
	p := env.Project
	if p == nil {
		return nil
	}
	lib := &Library{dir: p.Steps, steps: map[string]*LibraryStep{}}
	for _, sf := range p.StepFiles {
		ls, ds := loadStep(sf.Path, sf.Src, env)
		lib.ds = append(lib.ds, ds...)
		if ls.Name == "" {
			continue
		}
		if first, ok := lib.steps[ls.Name]; ok {
			lib.ds.errorf(ls.Pos, "library step %q is defined twice: first in %s", ls.Name, first.Pos)
			continue
		}
		lib.steps[ls.Name] = ls
	}
	lib.ds = lib.ds.Sort()
	return lib
}

// Steps returns the library's steps, by name.
func (l *Library) Steps() []*LibraryStep {
	if l == nil {
		return nil
	}
	out := make([]*LibraryStep, 0, len(l.steps))
	for _, name := range l.names() {
		out = append(out, l.steps[name])
	}
	return out
}

// Diagnostics returns the problems of the library's files on their own
// (errors and warnings), sorted.
func (l *Library) Diagnostics() Diagnostics {
	if l == nil {
		return nil
	}
	return slices.Clone(l.ds)
}

func (l *Library) names() []string {
	out := make([]string, 0, len(l.steps))
	for name := range l.steps {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// LoadStepFile parses and checks one library step file on its own, in
// env (its project's agents and executor defaults), as LoadLibrary
// checks each: a name that another file of env.Project's library also
// defines is an error too.
func LoadStepFile(path string, src []byte, env Env) (*LibraryStep, Diagnostics) {
	ls, ds := loadStep(path, src, env)
	if env.Project != nil && ls.Name != "" {
		self, _ := filepath.Abs(path)
		for _, sf := range env.Project.StepFiles {
			if other, _ := filepath.Abs(sf.Path); other == self {
				continue
			}
			other, _ := loadStep(sf.Path, sf.Src, Env{})
			if other.Name == ls.Name {
				ds.errorf(ls.Pos, "library step %q is defined twice: also in %s", ls.Name, other.Pos)
			}
		}
	}
	return ls, ds.Sort()
}

// loadStep parses one library file and checks the step on its own: the
// schema and ranges of a sequential step, and Check as in a pipeline that
// defines every step, var and name the step refers to (so what depends on
// the pipeline is checked where the step is used). The step is broken
// when that finds an error.
func loadStep(path string, src []byte, env Env) (*LibraryStep, Diagnostics) {
	ls := &LibraryStep{Path: path, Pos: pipeline.Pos{File: path, Line: 1, Col: 1}, broken: true}
	var ds Diagnostics
	switch {
	case len(src) > yamldoc.MaxBytes:
		ds.errorf(ls.Pos, "file is larger than %d MiB", yamldoc.MaxBytes>>20)
		return ls, ds
	case !utf8.Valid(src):
		ds.errorf(ls.Pos, "file is not valid UTF-8")
		return ls, ds
	}
	doc, err := yamldoc.ParseSingle(src) // a second document would go unread
	if err != nil {
		var be *yamldoc.Error
		if errors.As(err, &be) {
			ds.errorf(pipeline.Pos{File: path, Line: be.Line, Col: be.Column}, "%s", be.Msg)
		} else {
			ds = append(ds, yamlError(path, src, err))
		}
		return ls, ds
	}
	if len(doc.Content) == 0 {
		ds.errorf(ls.Pos, "file is empty: a library step needs at least a name and an executor")
		return ls, ds
	}
	root := doc.Content[0]
	f := &File{name: path, lines: bytes.Split(src, []byte("\n")), scalars: map[pipeline.Pos]span{}, keys: map[pipeline.Pos]pipeline.Fields{}, values: map[pipeline.Pos]pipeline.Fields{}}
	ls.file = f
	if root.Kind != yaml.MappingNode {
		ds.errorf(f.pos(root), "a library step file must be a mapping: a step with a name and an executor, and a description and tags, not a %s", kindName(root))
		return ls, ds
	}
	ds = append(ds, duplicateKeys(f, root)...)

	// The body is the step: the file's mapping without the library's own
	// keys, and without what would make it something other than one step.
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Column: root.Column}
	for _, kv := range pairs(root) {
		switch k, v := kv[0].Value, resolve(kv[1]); k {
		case "description":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				ds.errorf(f.pos(v), "library step: description must be a string, not %s", kindName(v))
				continue
			}
			ls.Description = v.Value
			continue
		case "tags":
			if v.Kind != yaml.SequenceNode {
				ds.errorf(f.pos(v), "library step: tags must be a list of strings, not %s", kindName(v))
				continue
			}
			for _, t := range v.Content {
				if t = resolve(t); t.Kind != yaml.ScalarNode || t.ShortTag() != "!!str" {
					ds.errorf(f.pos(t), "library step: each tag must be a string, not %s", kindName(t))
					continue
				}
				ls.Tags = append(ls.Tags, t.Value)
			}
			continue
		case "use":
			ds.errorf(f.pos(kv[0]), "library step: a library step cannot use another: write its fields here")
			continue
		case "parallel", "fan_out":
			ds.errorf(f.pos(kv[0]), "library step: a library step is one step, not a %s group: write the group in the pipeline, where its branches (or the fan_out) may use library steps", k)
			continue
		}
		body.Content = append(body.Content, kv[0], kv[1])
	}
	ls.body = body
	if v := lookupKey(pairs(body), "name"); v != nil {
		ls.Pos = f.pos(resolve(v))
	}

	// Parse the step as the only step of a pipeline, for the schema, the
	// ranges and the model.
	synthetic := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Column: root.Column, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: "library"},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "steps"}, {Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{body}},
	}}
	d := &decoder{f: f, reported: map[*yaml.Node]bool{}}
	p := d.pipeline(synthetic)
	sds := append(validateSchema(f, synthetic, d.reported), d.ds...)
	for i := range sds {
		// A step without a name is described by its place in the
		// synthetic pipeline; in a library file it is the library step.
		if rest, ok := strings.CutPrefix(sds[i].Msg, "step #1: "); ok {
			sds[i].Msg = "library step: " + rest
		}
	}
	ds = append(ds, sds...)
	if len(p.Steps) == 1 {
		ls.Step, _ = p.Steps[0].(*pipeline.Step)
	}
	if ls.Step != nil {
		ls.Name = ls.Step.Name
	}
	ls.nodes = expandedNodes(body, map[*yaml.Node]int{})
	if ds.HasErrors() || ls.Step == nil {
		return ls, ds
	}

	// Check it in a pipeline that defines whatever it refers to.
	p.Pos = ls.Pos
	refs := referencedNames(toValue(body))
	var steps []pipeline.Node
	for _, name := range refs.steps {
		if pipeline.TemplateName(name) != pipeline.TemplateName(ls.Name) { // a reference to itself is an error, as in a pipeline
			steps = append(steps, &pipeline.Step{Name: name, Executor: pipeline.ExecHuman, Gate: defaultGate(), OnFailure: pipeline.OnFailure{Policy: pipeline.FailureAbort}})
		}
	}
	p.Steps = append(steps, ls.Step)
	base := whenScope(&pipeline.Pipeline{})
	for _, name := range refs.vars {
		if _, bound := base[name]; !bound && name != "steps" && !slices.Contains(builtinNames, name) {
			p.Vars = append(p.Vars, pipeline.Var{Name: name})
		}
	}
	f.Pipeline = p
	if env.Project != nil {
		applyExecutorDefaults(f, env.Project)
	}
	for _, dg := range checkIn(f, env) {
		if dg.Pos.File == path { // not about the steps and vars made up for it
			ds = append(ds, dg)
		}
	}
	f.Pipeline = nil
	ls.broken = ds.HasErrors()
	return ls, ds
}

// names are what a library step refers to outside itself.
type names struct {
	steps []string // step names, as written
	vars  []string // vars and the other names when: reads
}

// referencedNames collects the steps every string of v refers to in its
// Liquid tags, and the steps, vars and names its when: expression reads.
func referencedNames(v any) names {
	var out names
	add := func(list *[]string, name string) {
		if name, _, _ = strings.Cut(name, "/"); name != "" && !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			for _, r := range templateRefs(v) {
				add(&out.steps, r.name)
			}
		}
	}
	walk(v)
	m, _ := v.(map[string]any)
	if src, ok := m["when"].(string); ok {
		if expr, err := when.Parse(src); err == nil {
			for _, p := range when.Paths(expr) {
				switch {
				case p.Root == "steps" && len(p.Segments) > 0:
					add(&out.steps, p.Segments[0])
				case p.Root == "vars" && len(p.Segments) > 0:
					add(&out.vars, p.Segments[0])
				default:
					add(&out.vars, p.Root)
				}
			}
		}
	}
	return out
}

// expandedNodes counts the nodes of n as if its aliases were expanded,
// each anchored value counted once (memo) and reused; yamldoc has bounded
// the total.
func expandedNodes(n *yaml.Node, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if c, ok := memo[n]; ok {
		return c
	}
	c := 1
	if n.Kind == yaml.AliasNode {
		c = expandedNodes(n.Alias, memo)
	}
	for _, ch := range n.Content {
		c += expandedNodes(ch, memo)
	}
	memo[n] = c
	return c
}

// libraryErrors are the errors of the library's files on their own: a
// pipeline of the project has them (as it has the project's), so a
// library file with an error compiles no pipeline.
func (l *Library) errors() Diagnostics {
	if l == nil {
		return nil
	}
	return l.ds.Errors()
}

// maxUseNodes bounds the nodes the library steps one pipeline uses add
// to it, counting each use (aliases expanded): the budget of a document
// (yamldoc.MaxNodes), so that what the later phases walk stays within
// twice what one file may hold. A variable for the tests of its boundary.
var maxUseNodes = yamldoc.MaxNodes

// resolver replaces the steps entries that use a library step with the
// resolved step, in the YAML tree, before the file is decoded and checked
// against the schema: every later phase sees the resolved step, each of
// its values at the position it is written in, in the pipeline or in the
// library file.
type resolver struct {
	f     *File
	lib   *Library
	nodes int // nodes the library steps used so far add to the document
	ds    Diagnostics
}

// resolveUses resolves every use: in the steps of root: top-level steps,
// parallel branches and fan_outs.
func (f *File) resolveUses(root *yaml.Node, lib *Library) Diagnostics {
	seq := resolve(lookupKey(pairs(root), "steps"))
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	r := &resolver{f: f, lib: lib}
	for i, c := range seq.Content {
		e := resolve(c)
		if e == nil || e.Kind != yaml.MappingNode {
			continue
		}
		place := fmt.Sprintf("#%d", i+1)
		ps := pairs(e)
		if g := resolve(lookupKey(ps, "parallel")); g != nil {
			group := "parallel " + nameOr(g, place)
			branches := resolve(lookupKey(pairs(g), "steps"))
			if g.Kind != yaml.MappingNode || branches == nil || branches.Kind != yaml.SequenceNode {
				continue
			}
			for j, b := range branches.Content {
				where := fmt.Sprintf("branch %s of %s", nameOr(b, fmt.Sprintf("#%d", j+1)), group)
				if m := r.use(b, "branch", where, " of "+group); m != nil {
					branches.Content[j] = m
				}
			}
			continue
		}
		if g := lookupKey(ps, "fan_out"); g != nil {
			if m := r.use(g, "fan_out", "fan_out "+nameOr(g, place), ""); m != nil {
				seq.Content[i] = withValue(e, "fan_out", m)
			}
			continue
		}
		if m := r.use(c, "step", "step "+nameOr(e, place), ""); m != nil {
			seq.Content[i] = m
		}
	}
	return r.ds
}

// use resolves the entry n when it names a library step: it returns the
// resolved mapping, or nil when n uses none or the use fails (reported,
// and the entry is left out of the model). where names the entry in
// messages; in is what follows the resolved step's name when Check names
// it (" of parallel \"g\"" for a branch).
func (r *resolver) use(n *yaml.Node, kind, where, in string) *yaml.Node {
	m := resolve(n)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	ps := pairs(m)
	u := resolve(lookupKey(ps, "use"))
	if u == nil {
		return nil
	}
	f := r.f
	if f.unresolved == nil {
		f.unresolved = map[*yaml.Node]bool{}
	}
	f.unresolved[m] = true
	if u.Kind != yaml.ScalarNode || u.ShortTag() != "!!str" {
		return nil // the schema says what use: must be
	}
	name := u.Value
	at := f.pos(u)
	var ls *LibraryStep
	switch {
	case r.lib == nil:
		r.ds.errorf(at, "%s: use: unknown library step %q: no %s above %s, so the pipeline has no step library (a library step is a file in steps/ beside %s; or give --config)", where, name, project.FileName, f.name, project.FileName)
		return nil
	case len(r.lib.steps) == 0:
		r.ds.errorf(at, "%s: use: unknown library step %q: the step library %s has no steps", where, name, r.lib.dir)
		return nil
	default:
		if ls = r.lib.steps[name]; ls == nil {
			hint := didYouMean(name, r.lib.names())
			if hint == "" {
				hint = " (library steps: " + listNames(r.lib.names(), 10) + ")"
			}
			r.ds.errorf(at, "%s: use: unknown library step %q%s", where, name, hint)
			return nil
		}
	}
	f.uses = append(f.uses, Use{Step: name, Pos: at, Kind: kind})
	use := &f.uses[len(f.uses)-1]
	if f.usedAt == nil {
		f.usedAt = map[string]*libraryUse{}
	}
	lu := f.usedAt[ls.Path]
	if lu == nil {
		lu = &libraryUse{step: name}
		f.usedAt[ls.Path] = lu
	}
	lu.at = append(lu.at, useSite{pos: at})
	site := &lu.at[len(lu.at)-1]
	if ls.broken {
		return nil // its errors are the pipeline's, noted with this use
	}
	if r.nodes += ls.nodes; r.nodes > maxUseNodes {
		r.ds.errorf(at, "%s: use: the library steps this pipeline uses hold more than %d YAML nodes together (aliases expanded), more than a pipeline file may hold", where, maxUseNodes)
		return nil
	}
	f.adopt(ls.file, ls.body)
	merged := mergeStep(ls.body, m)
	if v := resolve(lookupKey(pairs(merged), "name")); v != nil && v.Kind == yaml.ScalarNode {
		use.As = v.Value
		site.where = fmt.Sprintf("%s %q%s: ", kind, v.Value, in)
	}
	delete(f.unresolved, m)
	return merged
}

// libraryUse is where a pipeline uses the step of one library file.
type libraryUse struct {
	step string
	at   []useSite
}

// useSite is one use: where use: is written, and how Check's messages
// begin for the step it resolves to (`step "triage": `; "" when it did
// not resolve).
type useSite struct {
	pos   pipeline.Pos
	where string
}

// adopt makes the nodes of a library file's step positioned in that file.
func (f *File) adopt(lf *File, body *yaml.Node) {
	if f.foreign == nil {
		f.foreign = map[*yaml.Node]*File{}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || f.foreign[n] != nil {
			return
		}
		f.foreign[n] = lf
		walk(n.Alias)
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(body)
}

// mergeStep is the library step base with the local keys of entry over
// it: a local key replaces the library's, but executor_config mappings
// merge (mergeMappings); use is left out.
func mergeStep(base, entry *yaml.Node) *yaml.Node {
	local := pairs(entry)
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: entry.Line, Column: entry.Column}
	for _, bp := range pairs(base) {
		k := bp[0].Value
		lp := lookupPair(local, k)
		switch {
		case lp == nil:
			out.Content = append(out.Content, bp[0], bp[1])
		case k == "executor_config":
			out.Content = append(out.Content, lp[0], mergeMappings(bp[1], lp[1]))
		default:
			out.Content = append(out.Content, lp[0], lp[1])
		}
	}
	for _, lp := range local {
		if k := lp[0].Value; k != "use" && lookupPair(pairs(base), k) == nil {
			out.Content = append(out.Content, lp[0], lp[1])
		}
	}
	return out
}

// mergeMappings merges over into base at every depth: where both hold a
// mapping under a key the two merge, and any other value of over
// (scalar, list, null) replaces base's. When either is not a mapping,
// over wins whole.
func mergeMappings(base, over *yaml.Node) *yaml.Node {
	b, o := resolve(base), resolve(over)
	if b == nil || o == nil || b.Kind != yaml.MappingNode || o.Kind != yaml.MappingNode {
		return over
	}
	local := pairs(o)
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: o.Line, Column: o.Column, Style: o.Style}
	for _, bp := range pairs(b) {
		if lp := lookupPair(local, bp[0].Value); lp != nil {
			out.Content = append(out.Content, lp[0], mergeMappings(bp[1], lp[1]))
		} else {
			out.Content = append(out.Content, bp[0], bp[1])
		}
	}
	for _, lp := range local {
		if lookupPair(pairs(b), lp[0].Value) == nil {
			out.Content = append(out.Content, lp[0], lp[1])
		}
	}
	return out
}

// listNames writes names for a message, at most limit of them.
func listNames(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

func lookupPair(ps [][2]*yaml.Node, key string) []*yaml.Node {
	for _, p := range ps {
		if p[0].Value == key {
			return p[:]
		}
	}
	return nil
}

// withValue returns a copy of mapping m with key's value replaced by v.
func withValue(m *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: m.Line, Column: m.Column}
	for _, p := range pairs(m) {
		if p[0].Value == key {
			out.Content = append(out.Content, p[0], v)
		} else {
			out.Content = append(out.Content, p[0], p[1])
		}
	}
	return out
}

// noteUses adds to each diagnostic positioned in a library file where
// the pipeline uses its step: the use the message names the step of, or
// else every use (the library step's own errors are each use's).
func (f *File) noteUses(ds Diagnostics) Diagnostics {
	if f == nil || len(f.usedAt) == 0 {
		return ds
	}
	for i, d := range ds {
		lu := f.usedAt[d.Pos.File]
		if lu == nil {
			continue
		}
		var at []string
		for _, u := range lu.at {
			if u.where != "" && strings.HasPrefix(d.Msg, u.where) {
				at = append(at, u.pos.String())
			}
		}
		if len(at) == 0 {
			for _, u := range lu.at {
				at = append(at, u.pos.String())
			}
		}
		ds[i].Msg = fmt.Sprintf("%s (library step %q, used at %s)", d.Msg, lu.step, strings.Join(at, ", "))
	}
	return ds
}
