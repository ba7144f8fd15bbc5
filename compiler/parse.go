package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/yamldoc"
)

// File is a parsed pipeline file: the model and what the later phases need
// to know of its source text.
type File struct {
	Pipeline *pipeline.Pipeline
	name     string
	lines    [][]byte              // the source, split into lines
	scalars  map[pipeline.Pos]span // text fields, by the position of their value
	// keys are where the keys of free-form mappings (executor_config)
	// wrote their values, by the mapping's position.
	keys map[pipeline.Pos]pipeline.Fields
	// values are where every value inside a free-form mapping was
	// written, by the mapping's position and the value's path in it
	// ("headers.X", "payload.items[1]"), so that a template at any
	// depth is positioned in its own string.
	values map[pipeline.Pos]pipeline.Fields

	// The step library (library.go): foreign maps the nodes a library
	// step brought into the file to the library file they are written
	// in; unresolved holds the entries whose use: failed, which the
	// model leaves out; uses and usedAt are the uses, in order and by
	// library file.
	foreign    map[*yaml.Node]*File
	unresolved map[*yaml.Node]bool
	uses       []Use
	usedAt     map[string]*libraryUse

	// info is what Check parsed, for Lower; nil before Check.
	info *checkInfo
}

// span is how a scalar's text sits in the file, so that an offset into the
// text can be turned into a file position.
type span struct {
	style  yaml.Style
	indent int // block scalars: the indentation of the content lines
}

// Parse reads one pipeline file. It checks the document against the
// pipeline JSON Schema and every numeric field against its range, then
// builds the model with defaults applied. Every problem found is returned,
// positioned; the model is nil only when the file is not YAML at all, or
// a document out of yamldoc's bounds (size, aliases expanded, depth).
// Parse has no step library, so a use: is an error there; BuildIn and
// BuildFileIn resolve it against their project's.
func Parse(name string, src []byte) (*File, Diagnostics) {
	return parse(name, src, nil)
}

// parse is Parse with the step library lib (nil: none), whose steps the
// file's use: entries are resolved against before the schema and the
// decoder see them.
func parse(name string, src []byte, lib *Library) (*File, Diagnostics) {
	var ds Diagnostics
	filePos := pipeline.Pos{File: name, Line: 1, Col: 1}
	if len(src) > yamldoc.MaxBytes {
		ds.errorf(filePos, "file is larger than %d MiB", yamldoc.MaxBytes>>20)
		return nil, ds
	}
	if !utf8.Valid(src) {
		ds.errorf(filePos, "file is not valid UTF-8")
		return nil, ds
	}
	doc, err := yamldoc.ParseSingle(src) // a second document would go unread
	if err != nil {
		var be *yamldoc.Error
		if errors.As(err, &be) {
			ds.errorf(pipeline.Pos{File: name, Line: be.Line, Col: be.Column}, "%s", be.Msg)
			return nil, ds
		}
		ds = append(ds, yamlError(name, src, err))
		return nil, ds
	}
	if len(doc.Content) == 0 {
		ds.errorf(filePos, "file is empty: a pipeline needs at least a name and steps")
		return nil, ds
	}
	root := doc.Content[0]
	f := &File{name: name, lines: bytes.Split(src, []byte("\n")), scalars: map[pipeline.Pos]span{}, keys: map[pipeline.Pos]pipeline.Fields{}, values: map[pipeline.Pos]pipeline.Fields{}}
	if root.Kind != yaml.MappingNode {
		ds.errorf(f.pos(root), "a pipeline file must be a mapping with name and steps, not a %s", kindName(root))
		return nil, ds
	}
	ds = append(ds, duplicateKeys(f, root)...)
	ds = append(ds, f.resolveUses(root, lib)...)
	d := &decoder{f: f, reported: map[*yaml.Node]bool{}}
	f.Pipeline = d.pipeline(root)
	ds = append(ds, validateSchema(f, root, d.reported)...)
	ds = append(ds, d.ds...)
	return f, ds
}

// yamlError turns a YAML syntax error in src into a positioned
// diagnostic, at the text that breaks the document (yamldoc.SyntaxError).
func yamlError(name string, src []byte, err error) Diagnostic {
	e := yamldoc.SyntaxError(src, err)
	return Diagnostic{Pos: pipeline.Pos{File: name, Line: e.Line, Col: e.Column}, Msg: "invalid YAML: " + e.Msg}
}

func (f *File) pos(n *yaml.Node) pipeline.Pos {
	if lf := f.foreign[n]; lf != nil {
		return lf.pos(n) // brought in by a library step
	}
	return pipeline.Pos{File: f.name, Line: n.Line, Col: n.Column}
}

// TextPos returns the file position of byte offset off inside the text
// field whose value starts at at. Offsets in block scalars map to their
// line and column; in folded or multi-line flow scalars, to the value.
func (f *File) TextPos(at pipeline.Pos, text string, off int) pipeline.Pos {
	sp, ok := f.scalars[at]
	if !ok || off < 0 || off > len(text) {
		return at
	}
	lineStart := strings.LastIndexByte(text[:off], '\n') + 1
	k := strings.Count(text[:off], "\n")
	col := utf8.RuneCountInString(text[lineStart:off])
	switch sp.style {
	case yaml.LiteralStyle:
		return pipeline.Pos{File: at.File, Line: at.Line + 1 + k, Col: sp.indent + 1 + col}
	case 0, yaml.TaggedStyle:
		if k == 0 {
			return pipeline.Pos{File: at.File, Line: at.Line, Col: at.Col + col}
		}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if k == 0 && !strings.ContainsAny(text[:off], `\'`) {
			return pipeline.Pos{File: at.File, Line: at.Line, Col: at.Col + 1 + col}
		}
	}
	return at
}

func (f *File) noteScalar(n *yaml.Node) {
	sp := span{style: n.Style}
	lines := f.lines
	if lf := f.foreign[n]; lf != nil {
		lines = lf.lines
	}
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		for i := n.Line; i < len(lines); i++ { // n.Line is 1-based: the line after the indicator
			l := lines[i]
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			sp.indent = len(l) - len(bytes.TrimLeft(l, " "))
			break
		}
	}
	f.scalars[f.pos(n)] = sp
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "string"
		case "!!int", "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return "scalar"
	}
	return "value"
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// pairs returns the key/value pairs of a mapping, merge keys (<<) expanded:
// keys written in the mapping itself win over merged ones.
func pairs(m *yaml.Node) [][2]*yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	out := make([][2]*yaml.Node, 0, len(m.Content)/2)
	var merged [][2]*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			src := resolve(v)
			var sources []*yaml.Node
			if src != nil && src.Kind == yaml.SequenceNode {
				sources = src.Content
			} else {
				sources = []*yaml.Node{src}
			}
			for _, s := range sources {
				merged = append(merged, pairs(s)...)
			}
			continue
		}
		out = append(out, [2]*yaml.Node{k, v})
	}
	for _, mp := range merged {
		if lookupKey(out, mp[0].Value) == nil {
			out = append(out, mp)
		}
	}
	return out
}

func lookupKey(ps [][2]*yaml.Node, key string) *yaml.Node {
	for _, p := range ps {
		if p[0].Value == key {
			return p[1]
		}
	}
	return nil
}

// toValue converts a YAML node to the plain Go value JSON would give:
// map[string]any, []any, string, float64/int64, bool or nil. yamldoc has
// bounded the document's size and depth, aliases expanded, so the
// recursion is bounded too. A number that is not finite stays the text it
// was written as (JSON has no NaN or infinity).
func toValue(n *yaml.Node) any {
	n = resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		ps := pairs(n)
		m := make(map[string]any, len(ps))
		for _, p := range ps {
			m[p[0].Value] = toValue(p[1])
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = toValue(c)
		}
		return s
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil
}

func scalarValue(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}

// numRange is the range of values a numeric field accepts.
type numRange struct {
	lo, hi float64
	loOpen bool // lo itself is out of range
	whole  bool // the field takes whole numbers only
}

func (r numRange) contains(v float64) bool {
	if r.loOpen {
		return v > r.lo && v <= r.hi
	}
	return v >= r.lo && v <= r.hi
}

// String writes the range as messages give it: "1..100", or "above 0, up
// to 1000000" when the low end is excluded.
func (r numRange) String() string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if r.loOpen {
		return "above " + num(r.lo) + ", up to " + num(r.hi)
	}
	return num(r.lo) + ".." + num(r.hi)
}

// Limits behind the ranges of numRanges.
const (
	// maxTaskSeconds is the largest TimeoutSeconds and IntervalSeconds
	// Step Functions accepts.
	maxTaskSeconds = 99999999
	// maxRunSeconds is a year, the longest a Standard workflow runs: a
	// resume age or a dedup window beyond it means nothing more.
	maxRunSeconds = 365 * 24 * 3600
	// maxExactInteger is the largest integer a JSON number (a float64, as
	// JSONata and the runtime read it) holds exactly.
	maxExactInteger = 1<<53 - 1
	// maxWebhookTimeoutSeconds leaves the failure Task, which has
	// bookkeepingTimeoutSeconds in all, 15 s to record the failure after
	// the webhook.
	maxWebhookTimeoutSeconds = bookkeepingTimeoutSeconds - 15
)

// anyFinite is the range of a number with no other bound.
var anyFinite = numRange{lo: -math.MaxFloat64, hi: math.MaxFloat64}

// numRanges is the range of every numeric field of the format, by its
// name as messages write it. The schema states the same bounds
// (TestNumberRangesMatchSchema) so that editors show them; the package
// documentation lists them with their reasons.
var numRanges = map[string]numRange{
	"version":                            {lo: 1, hi: math.MaxInt32, whole: true},
	"trigger.dedup.window_seconds":       {lo: 0, hi: maxRunSeconds, whole: true},
	"durable.max_resume_age_seconds":     {lo: 1, hi: maxRunSeconds, whole: true},
	"budget.max_tokens":                  {lo: 1, hi: maxExactInteger, whole: true},
	"budget.max_usd":                     {lo: 0, loOpen: true, hi: 1e6},
	"budget.max_cost":                    {lo: 0, loOpen: true, hi: 1e6},
	"confidence_threshold":               {lo: 0, hi: 1},
	"timeout_seconds":                    {lo: 1, hi: maxTaskSeconds, whole: true},
	"on_failure.webhook.timeout_seconds": {lo: 1, hi: maxWebhookTimeoutSeconds, whole: true},
	"retry.attempts":                     {lo: 1, hi: 100, whole: true},
	"retry.delay_seconds":                {lo: 0, hi: maxTaskSeconds},
	"loop_until.confidence":              {lo: 0, hi: 1},
	"loop_until.max_iterations":          {lo: 1, hi: 100, whole: true},
	"verifier.veto_floor":                {lo: 0, hi: 1},
	"verifier.trigger.confidence_below":  {lo: 0, hi: 1},
	"verifier.trigger.confidence_above":  {lo: 0, hi: 1},
	"weight":                             {lo: 0, loOpen: true, hi: 1e6},
	"max_items":                          {lo: 1, hi: 1000, whole: true},
	// The judge and the webhook and shell checks run in the step's own
	// Task, after its answer, within one Lambda invocation (their sum is
	// checked too: checkTrust); a human check waits in a Task of its own,
	// as a human step does.
	"grounding.timeout_seconds":            {lo: 1, hi: maxSettleSeconds, whole: true},
	"grounding.max_trace_chars":            {lo: 1, hi: 1000000, whole: true},
	"deterministic_checks.timeout_seconds": {lo: 1, hi: maxTaskSeconds, whole: true},
	// Readiness reads at most store.MaxRunLimit runs of a pipeline: a bar
	// above it could never be met.
	"readiness.operational.min_runs":       {lo: 1, hi: maxReadinessRuns, whole: true},
	"readiness.operational.max_age_days":   {lo: 1, hi: 36500, whole: true},
	"readiness.confidence.min_confidence":  {lo: 0, hi: 1},
	"readiness.confidence.min_runs":        {lo: 1, hi: maxReadinessRuns, whole: true},
	"readiness.accuracy.min_accuracy":      {lo: 0, hi: 1},
	"readiness.accuracy.min_marked":        {lo: 1, hi: maxReadinessRuns, whole: true},
	"readiness.accuracy.min_human_marked":  {lo: 0, hi: maxReadinessRuns, whole: true},
	"readiness.calibration.n_min":          {lo: 1, hi: maxReadinessRuns, whole: true},
	"readiness.calibration.max_divergence": {lo: 0, hi: 1},
	// A bin must hold samples (above 0) and 1/bin_width bins must tile
	// 0..1 (checked too: checkCalibration); a bucket read keeps its newest
	// store.MaxBucketSamples samples, so a bin never holds more than that.
	"calibration.bin_width": {lo: 0, loOpen: true, hi: 1},
	"calibration.n_min":     {lo: 1, hi: 5000, whole: true},
}

// maxReadinessRuns is the most runs of a pipeline readiness reads
// (store.MaxRunLimit).
const maxReadinessRuns = 1000

// decoder builds the model. Values of the wrong type are the schema's to
// report and are skipped here; numbers of the right type are checked
// against their field's range (numRanges) here, and the nodes reported
// are noted so that the schema does not report them again.
type decoder struct {
	f        *File
	ds       Diagnostics
	where    string              // the node being decoded, for messages: `step "a"`
	reported map[*yaml.Node]bool // values this decoder reported
}

// within sets where for the fields of the node being decoded and returns
// the function that restores the outer one.
func (d *decoder) within(where string) func() {
	outer := d.where
	d.where = where
	return func() { d.where = outer }
}

// report adds an error at n, prefixed with where.
func (d *decoder) report(n *yaml.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if d.where != "" {
		msg = d.where + ": " + msg
	}
	d.ds.errorf(d.f.pos(n), "%s", msg)
	d.reported[n] = true
}

func (d *decoder) fields(n *yaml.Node) (pipeline.Fields, [][2]*yaml.Node) {
	ps := pairs(n)
	fs := make(pipeline.Fields, len(ps))
	for _, p := range ps {
		fs[p[0].Value] = d.f.pos(resolve(p[1]))
	}
	return fs, ps
}

func (d *decoder) str(n *yaml.Node) (string, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", false
	}
	d.f.noteScalar(n)
	return n.Value, true
}

func (d *decoder) text(n *yaml.Node) string {
	s, _ := d.str(n)
	return s
}

// number reads the numeric field whose value is n; field is its name as
// messages and numRanges write it ("retry.attempts"). A value that is no
// number is the schema's to report: number answers false. A number that is
// not finite, or outside the field's range, is reported here, naming the
// value as written and the range, and number answers false: the field
// keeps its default. A fraction in a whole-number field is the schema's.
func (d *decoder) number(n *yaml.Node, field string) (float64, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return 0, false
	}
	v, ok := numberValue(n)
	if !ok {
		return 0, false
	}
	r, ok := numRanges[field]
	if !ok {
		r = anyFinite // every field has a range: TestNumberRangesMatchSchema
	}
	switch {
	case math.IsNaN(v) || (math.IsInf(v, 0) && n.ShortTag() == "!!float"):
		d.report(n, "%s must be a finite number, not %s", field, n.Value)
	case !r.contains(v):
		d.report(n, "%s: %s is out of range: %s", field, n.Value, r)
	case r.whole && v != math.Trunc(v):
		return 0, false
	default:
		return v, true
	}
	return 0, false
}

// whole is number for the fields that take whole numbers into an int:
// their ranges fit one on every platform (budget.max_tokens, which needs
// an int64, reads number).
func (d *decoder) whole(n *yaml.Node, field string) (int, bool) {
	v, ok := d.number(n, field)
	return int(v), ok
}

// numberValue is the number a scalar holds: an int or a float as YAML
// resolves them (NaN and infinities included), or a plain scalar written
// as a number too large for a float (YAML resolves 1e400 to a string),
// as an infinity.
func numberValue(n *yaml.Node) (float64, bool) {
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return float64(i), true
		}
		var f float64
		if n.Decode(&f) == nil {
			return f, true
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return f, true
		}
	case "!!str":
		if n.Style == 0 {
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
				return f, true
			}
		}
	}
	return 0, false
}

// finiteOperands reports the numbers of a trigger.match operand (a scalar,
// or the list of in and not_in) that are not finite: they would never
// compare as meant.
func (d *decoder) finiteOperands(n *yaml.Node, field string) {
	n = resolve(n)
	if n == nil {
		return
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for _, it := range items {
		it = resolve(it)
		if it == nil || it.Kind != yaml.ScalarNode {
			continue
		}
		if v, ok := numberValue(it); ok && it.ShortTag() == "!!float" && (math.IsNaN(v) || math.IsInf(v, 0)) {
			d.report(it, "%s must be a finite number, not %s", field, it.Value)
		}
	}
}

func (d *decoder) boolean(n *yaml.Node) (bool, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return false, false
	}
	b, ok := scalarValue(n).(bool)
	return b, ok
}

func (d *decoder) strList(n *yaml.Node) []string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if s, ok := d.str(c); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) strMap(n *yaml.Node) map[string]string {
	ps := pairs(n)
	if ps == nil {
		return nil
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		if s, ok := d.str(p[1]); ok {
			out[p[0].Value] = s
		}
	}
	return out
}

func (d *decoder) object(n *yaml.Node) map[string]any {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	d.noteAll(n)
	d.f.keys[d.f.pos(n)], _ = d.fields(n)
	vals := pipeline.Fields{}
	d.valuePaths(n, "", vals)
	d.f.values[d.f.pos(n)] = vals
	m, _ := toValue(n).(map[string]any)
	return m
}

// valuePaths records in out where each value inside n was written, by
// its path below prefix: a mapping's values by key (joined with "."), a
// list's by index ("[i]").
func (d *decoder) valuePaths(n *yaml.Node, prefix string, out pipeline.Fields) {
	n = resolve(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for _, p := range pairs(n) {
			path := p[0].Value
			if prefix != "" {
				path = prefix + "." + path
			}
			out[path] = d.f.pos(resolve(p[1]))
			d.valuePaths(p[1], path, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := prefix + "[" + strconv.Itoa(i) + "]"
			out[path] = d.f.pos(resolve(c))
			d.valuePaths(c, path, out)
		}
	}
}

// noteAll records the spans of every string inside a free-form value, so
// template references in executor_config can be positioned too.
func (d *decoder) noteAll(n *yaml.Node) {
	n = resolve(n)
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode {
		d.f.noteScalar(n)
		return
	}
	for _, c := range n.Content {
		d.noteAll(c)
	}
}

func (d *decoder) pipeline(root *yaml.Node) *pipeline.Pipeline {
	fs, ps := d.fields(root)
	p := &pipeline.Pipeline{
		Pos:      d.f.pos(root),
		Fields:   fs,
		Version:  1,
		Stage:    pipeline.StageTesting,
		Workflow: pipeline.WorkflowAuto,
	}
	for _, kv := range ps {
		k, v := kv[0].Value, kv[1]
		switch k {
		case "name":
			p.Name = d.text(v)
		case "description":
			p.Description = d.text(v)
		case "tags":
			p.Tags = d.strList(v)
		case "version":
			if i, ok := d.whole(v, "version"); ok {
				p.Version = i
			}
		case "stage":
			if s, ok := d.str(v); ok {
				p.Stage = pipeline.Stage(s)
			}
		case "workflow":
			if s, ok := d.str(v); ok {
				p.Workflow = pipeline.Workflow(s)
			}
		case "vars":
			for _, vp := range pairs(v) {
				if s, ok := d.str(vp[1]); ok {
					p.Vars = append(p.Vars, pipeline.Var{Pos: d.f.pos(vp[0]), Name: vp[0].Value, Value: s})
				}
			}
		case "trigger":
			p.Trigger = d.trigger(v)
		case "context_template":
			if inc := lookupKey(pairs(v), "include"); inc != nil {
				if seq := resolve(inc); seq.Kind == yaml.SequenceNode {
					for _, c := range seq.Content {
						if s, ok := d.str(c); ok {
							p.ContextInclude = append(p.ContextInclude, pipeline.Include{Pos: d.f.pos(c), Path: s})
						}
					}
				}
			}
		case "steps":
			if seq := resolve(v); seq.Kind == yaml.SequenceNode {
				for i, c := range seq.Content {
					if node := d.stepEntry(c, i); node != nil {
						p.Steps = append(p.Steps, node)
					}
				}
			}
		case "notifications":
			for _, ap := range pairs(v) {
				a := pipeline.Action{Pos: d.f.pos(ap[0]), Name: ap[0].Value}
				val := resolve(ap[1])
				items := []*yaml.Node{val}
				if val.Kind == yaml.SequenceNode {
					items = val.Content
				}
				for _, it := range items {
					if resolve(it).Kind != yaml.MappingNode {
						continue
					}
					_, nps := d.fields(it)
					n := pipeline.Notification{Pos: d.f.pos(resolve(it))}
					for _, np := range nps {
						switch np[0].Value {
						case "channel":
							n.Channel = d.text(np[1])
						case "template":
							n.Template = d.text(np[1])
						case "config":
							n.Config = d.object(np[1])
						}
					}
					a.Notices = append(a.Notices, n)
				}
				p.Notifications = append(p.Notifications, a)
			}
		case "durable":
			p.Durable = d.durable(v)
		case "budget":
			p.Budget = d.budget(v)
		case "schedule":
			p.Schedule = d.schedule(v)
		case "readiness":
			p.Readiness = d.readiness(v)
		}
	}
	return p
}

// readiness decodes the readiness block with its defaults; a tier written
// as null (or left out) is not configured.
func (d *decoder) readiness(n *yaml.Node) *pipeline.Readiness {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	r := &pipeline.Readiness{Pos: d.f.pos(n), Fields: fs}
	for _, kv := range ps {
		v := resolve(kv[1])
		if v.Kind != yaml.MappingNode {
			continue
		}
		tfs, tps := d.fields(v)
		pos := d.f.pos(v)
		num := func(key string) (float64, bool) {
			for _, t := range tps {
				if t[0].Value == key {
					return d.number(t[1], "readiness."+kv[0].Value+"."+key)
				}
			}
			return 0, false
		}
		whole := func(key string) (int, bool) { f, ok := num(key); return int(f), ok }
		flag := func(key string, def bool) bool {
			for _, t := range tps {
				if t[0].Value == key {
					if b, ok := d.boolean(t[1]); ok {
						return b
					}
				}
			}
			return def
		}
		switch kv[0].Value {
		case "operational":
			o := &pipeline.ReadinessOperational{Pos: pos, Fields: tfs, RequireCurrentConfig: flag("require_current_config", false),
				AcceptableStatuses: append([]string(nil), pipeline.DefaultAcceptableStatuses()...)}
			o.MinRuns, _ = whole("min_runs")
			o.MaxAgeDays, _ = whole("max_age_days")
			for _, t := range tps {
				if t[0].Value == "acceptable_statuses" && resolve(t[1]).Kind == yaml.SequenceNode {
					o.AcceptableStatuses = d.strList(t[1])
				}
			}
			r.Operational = o
		case "confidence":
			c := &pipeline.ReadinessConfidence{Pos: pos, Fields: tfs, RequireCurrentConfig: flag("require_current_config", false)}
			c.MinConfidence, _ = num("min_confidence")
			c.MinRuns, _ = whole("min_runs")
			r.Confidence = c
		case "accuracy":
			a := &pipeline.ReadinessAccuracy{Pos: pos, Fields: tfs, RequireCurrentConfig: flag("require_current_config", true)}
			if f, ok := num("min_accuracy"); ok {
				a.MinAccuracy = &f
			}
			a.MinMarked, _ = whole("min_marked")
			a.MinHumanMarked, _ = whole("min_human_marked")
			r.Accuracy = a
		case "calibration":
			c := &pipeline.ReadinessCalibration{Pos: pos, Fields: tfs, NMin: pipeline.DefaultCalibrationNMin,
				BinWidth: pipeline.DefaultCalibrationBinWidth, MaxDivergence: pipeline.DefaultCalibrationMaxDivergence,
				RequireOwnEvidence: flag("require_own_evidence", false), RequireCurrentConfig: flag("require_current_config", true)}
			if i, ok := whole("n_min"); ok {
				c.NMin = i
			}
			if f, ok := num("bin_width"); ok {
				c.BinWidth = f
			}
			if f, ok := num("max_divergence"); ok {
				c.MaxDivergence = f
			}
			r.Calibration = c
		}
	}
	return r
}

func (d *decoder) trigger(n *yaml.Node) *pipeline.Trigger {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	t := &pipeline.Trigger{Pos: d.f.pos(n)}
	for _, kv := range pairs(n) {
		switch kv[0].Value {
		case "match":
			for _, mp := range pairs(kv[1]) {
				m := pipeline.Match{Pos: d.f.pos(mp[0]), Field: mp[0].Value, Op: "eq"}
				val := resolve(mp[1])
				if val.Kind == yaml.MappingNode {
					ops := pairs(val)
					if len(ops) != 1 {
						continue
					}
					m.Op = ops[0][0].Value
					m.Pos = d.f.pos(resolve(ops[0][1]))
					d.finiteOperands(ops[0][1], "trigger.match."+m.Field+"."+m.Op)
					m.Value = toValue(ops[0][1])
					d.f.noteScalar(resolve(ops[0][1]))
				} else {
					d.finiteOperands(val, "trigger.match."+m.Field)
					m.Value = toValue(val)
				}
				t.Match = append(t.Match, m)
			}
		case "dedup":
			dd := &pipeline.Dedup{Pos: d.f.pos(resolve(kv[1]))}
			for _, dp := range pairs(kv[1]) {
				switch dp[0].Value {
				case "enabled":
					if b, ok := d.boolean(dp[1]); ok {
						dd.Enabled = &b
					}
				case "window_seconds":
					if i, ok := d.whole(dp[1], "trigger.dedup.window_seconds"); ok {
						dd.WindowSeconds = &i
					}
				}
			}
			t.Dedup = dd
		}
	}
	return t
}

func (d *decoder) durable(n *yaml.Node) *pipeline.Durable {
	n = resolve(n)
	if b, ok := d.boolean(n); ok {
		if !b {
			return nil
		}
		return &pipeline.Durable{Pos: d.f.pos(n), OnInterrupted: "rerun"}
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	du := &pipeline.Durable{Pos: d.f.pos(n), OnInterrupted: "rerun"}
	for _, kv := range pairs(n) {
		switch kv[0].Value {
		case "on_interrupted":
			if s, ok := d.str(kv[1]); ok {
				du.OnInterrupted = s
			}
		case "max_resume_age_seconds":
			if i, ok := d.whole(kv[1], "durable.max_resume_age_seconds"); ok {
				du.MaxResumeAgeSeconds = &i
			}
		}
	}
	return du
}

func (d *decoder) budget(n *yaml.Node) *pipeline.Budget {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	b := &pipeline.Budget{Pos: d.f.pos(n)}
	for _, kv := range pairs(n) {
		switch kv[0].Value {
		case "max_tokens":
			if f, ok := d.number(kv[1], "budget.max_tokens"); ok {
				i := int64(f) // exact: the range ends at 2^53-1
				b.MaxTokens = &i
			}
		case "max_usd", "max_cost":
			if f, ok := d.number(kv[1], "budget."+kv[0].Value); ok {
				b.MaxUSD = &f
			}
		case "include_approx_cost":
			b.IncludeApproxCost, _ = d.boolean(kv[1])
		}
	}
	return b
}

func (d *decoder) schedule(n *yaml.Node) *pipeline.Schedule {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	s := &pipeline.Schedule{Pos: d.f.pos(n), Fields: fs, Severity: pipeline.DefaultScheduleSeverity}
	for _, kv := range ps {
		switch kv[0].Value {
		case "cron":
			s.Cron = d.text(kv[1])
		case "timezone":
			s.TimeZone = d.text(kv[1])
		case "summary":
			s.Summary = d.text(kv[1])
		case "severity":
			s.Severity = d.text(kv[1])
		case "labels":
			s.Labels = d.strMap(kv[1])
		case "team":
			s.Team = d.text(kv[1])
		}
	}
	return s
}

// stepEntry decodes entry i of steps. Messages name it as the schema's
// do (describe): `step "a"`, `parallel "g"`, `fan_out "f"`, or by its
// place in steps when it has no name (`step #2`).
func (d *decoder) stepEntry(n *yaml.Node, i int) pipeline.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode || d.f.unresolved[n] {
		return nil // not a step, or a use: that failed
	}
	ps := pairs(n)
	place := fmt.Sprintf("#%d", i+1)
	if v := lookupKey(ps, "parallel"); v != nil {
		where := "parallel " + nameOr(v, place)
		defer d.within(where)()
		return d.parallel(v, where)
	}
	if v := lookupKey(ps, "fan_out"); v != nil {
		if d.f.unresolved[resolve(v)] {
			return nil
		}
		defer d.within("fan_out " + nameOr(v, place))()
		return d.fanOut(v)
	}
	defer d.within("step " + nameOr(n, place))()
	return d.step(n)
}

func defaultGate() pipeline.Gate {
	return pipeline.Gate{
		ConfidenceThreshold: pipeline.DefaultConfidenceThreshold,
		OnLowConfidence:     pipeline.DefaultOnLowConfidence,
		OnAbort:             pipeline.DefaultOnAbort,
	}
}

// gateField decodes a field the gate shares between steps and groups.
func (d *decoder) gateField(g *pipeline.Gate, key string, v *yaml.Node) bool {
	switch key {
	case "confidence_threshold":
		if f, ok := d.number(v, "confidence_threshold"); ok {
			g.ConfidenceThreshold = f
		}
	case "on_low_confidence":
		if s, ok := d.str(v); ok {
			g.OnLowConfidence = pipeline.LowConfidence(s)
		}
	case "on_abort":
		if s, ok := d.str(v); ok {
			g.OnAbort = s
		}
	default:
		return false
	}
	return true
}

func (d *decoder) step(n *yaml.Node) *pipeline.Step {
	fs, ps := d.fields(n)
	s := &pipeline.Step{Pos: d.f.pos(n), Fields: fs, Gate: defaultGate(), OnFailure: pipeline.OnFailure{Policy: pipeline.FailureAbort}}
	for _, kv := range ps {
		k, v := kv[0].Value, kv[1]
		if d.gateField(&s.Gate, k, v) {
			continue
		}
		switch k {
		case "name":
			s.Name = d.text(v)
		case "executor":
			s.Executor = d.text(v)
		case "executor_config":
			s.ExecutorConfig = d.object(v)
		case "prompt_template":
			s.PromptTemplate = d.text(v)
		case "timeout_seconds":
			s.TimeoutSeconds, _ = d.whole(v, "timeout_seconds")
		case "when":
			s.When = d.text(v)
		case "on_failure":
			s.OnFailure = d.onFailure(v)
		case "retry":
			s.Retry = d.retry(v)
		case "verifier":
			s.Verifier = d.verifier(v)
		case "loop_until":
			lu := &pipeline.LoopUntil{Pos: d.f.pos(resolve(v)), MaxIterations: pipeline.DefaultLoopMaxIterations}
			for _, lp := range pairs(v) {
				switch lp[0].Value {
				case "confidence":
					lu.Confidence, _ = d.number(lp[1], "loop_until.confidence")
				case "max_iterations":
					if i, ok := d.whole(lp[1], "loop_until.max_iterations"); ok {
						lu.MaxIterations = i
					}
				}
			}
			s.LoopUntil = lu
		case "grounding":
			s.Grounding = d.grounding(v)
		case "deterministic_checks":
			s.Checks = d.checks(v)
		case "calibration":
			s.Calibration = d.calibration(v)
		}
	}
	return s
}

// grounding decodes a step's grounding: block, with the reference's
// defaults (agent grounding-judge on the gateway executor, 120 s, traces
// cut at 1500 characters per event, not enforced).
func (d *decoder) grounding(n *yaml.Node) *pipeline.Grounding {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	g := &pipeline.Grounding{Pos: d.f.pos(n), Fields: fs, Agent: pipeline.DefaultGroundingAgent, Executor: pipeline.DefaultGroundingExecutor,
		TimeoutSeconds: pipeline.DefaultGroundingTimeout, MaxTraceChars: pipeline.DefaultGroundingMaxTraceChars}
	for _, kv := range ps {
		switch kv[0].Value {
		case "agent":
			if s, ok := d.str(kv[1]); ok {
				g.Agent = s
			}
		case "executor":
			if s, ok := d.str(kv[1]); ok {
				g.Executor = s
			}
		case "executor_config":
			g.ExecutorConfig = d.object(kv[1])
		case "timeout_seconds":
			if i, ok := d.whole(kv[1], "grounding.timeout_seconds"); ok {
				g.TimeoutSeconds = i
			}
		case "enforce":
			g.Enforce, _ = d.boolean(kv[1])
		case "max_trace_chars":
			if i, ok := d.whole(kv[1], "grounding.max_trace_chars"); ok {
				g.MaxTraceChars = i
			}
		}
	}
	return g
}

// calibration decodes a step's calibration: block, with the reference's
// defaults (not enforced, bins of 0.1, 20 labelled executions to
// validate a bin, proceed when uncalibrated).
func (d *decoder) calibration(n *yaml.Node) *pipeline.Calibration {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	c := &pipeline.Calibration{Pos: d.f.pos(n), Fields: fs, BinWidth: pipeline.DefaultCalibrationBinWidth,
		NMin: pipeline.DefaultCalibrationNMin, OnUncalibrated: pipeline.DefaultCalibrationOnUncalibrated}
	for _, kv := range ps {
		switch kv[0].Value {
		case "enforce":
			c.Enforce, _ = d.boolean(kv[1])
		case "bin_width":
			if v, ok := d.number(kv[1], "calibration.bin_width"); ok {
				c.BinWidth = v
			}
		case "n_min":
			if i, ok := d.whole(kv[1], "calibration.n_min"); ok {
				c.NMin = i
			}
		case "on_uncalibrated":
			if s, ok := d.str(kv[1]); ok {
				c.OnUncalibrated = s
			}
		}
	}
	return c
}

// checks decodes a step's deterministic_checks: list. expect takes the
// kind's default when it is not written; the timeout, the kind's default
// (30 s, a human check 300 s).
func (d *decoder) checks(n *yaml.Node) []*pipeline.Check {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*pipeline.Check, 0, len(n.Content))
	for _, item := range n.Content {
		item = resolve(item)
		if item == nil || item.Kind != yaml.MappingNode {
			continue
		}
		fs, ps := d.fields(item)
		c := &pipeline.Check{Pos: d.f.pos(item), Fields: fs}
		for _, kv := range ps {
			switch kv[0].Value {
			case "name":
				c.Name = d.text(kv[1])
			case "type":
				c.Type = d.text(kv[1])
			case "url":
				c.URL = d.text(kv[1])
			case "method":
				c.Method = d.text(kv[1])
			case "headers":
				c.Headers = d.strMap(kv[1])
			case "payload":
				if v := resolve(kv[1]); v != nil && v.Kind == yaml.SequenceNode {
					d.noteAll(v)
					c.Payload = toValue(v)
				} else if m := d.object(kv[1]); m != nil {
					c.Payload = m
				}
			case "run":
				c.Run = d.text(kv[1])
			case "message":
				c.Message = d.text(kv[1])
			case "expect":
				c.Expect = d.text(kv[1])
			case "timeout_seconds":
				c.TimeoutSeconds, _ = d.whole(kv[1], "deterministic_checks.timeout_seconds")
			}
		}
		switch c.Type {
		case pipeline.CheckWebhook:
			if c.Method == "" {
				c.Method = "POST"
			}
			if !fs.Has("expect") {
				c.Expect = pipeline.DefaultWebhookCheckExpect
			}
		case pipeline.CheckShell:
			if !fs.Has("expect") {
				c.Expect = pipeline.DefaultShellCheckExpect
			}
		}
		if c.TimeoutSeconds == 0 {
			c.TimeoutSeconds = pipeline.DefaultCheckTimeout
			if c.Type == pipeline.CheckHuman {
				c.TimeoutSeconds = pipeline.DefaultHumanCheckTimeout
			}
		}
		out = append(out, c)
	}
	return out
}

func (d *decoder) onFailure(n *yaml.Node) pipeline.OnFailure {
	n = resolve(n)
	of := pipeline.OnFailure{Pos: d.f.pos(n), Policy: pipeline.FailureAbort}
	if s, ok := d.str(n); ok {
		of.Policy = s
		return of
	}
	for _, kv := range pairs(n) {
		switch kv[0].Value {
		case "policy":
			if s, ok := d.str(kv[1]); ok {
				of.Policy = s
			}
		case "webhook":
			w := &pipeline.FailureWebhook{Pos: d.f.pos(resolve(kv[1])), Method: "POST", TimeoutSeconds: pipeline.DefaultWebhookTimeout}
			w.Fields, _ = d.fields(resolve(kv[1]))
			for _, wp := range pairs(kv[1]) {
				switch wp[0].Value {
				case "url":
					w.URL = d.text(wp[1])
				case "method":
					if s, ok := d.str(wp[1]); ok {
						w.Method = s
					}
				case "headers":
					w.Headers = d.strMap(wp[1])
				case "payload":
					w.Payload = d.object(wp[1])
				case "timeout_seconds":
					if i, ok := d.whole(wp[1], "on_failure.webhook.timeout_seconds"); ok {
						w.TimeoutSeconds = i
					}
				}
			}
			of.Webhook = w
		}
	}
	return of
}

func (d *decoder) retry(n *yaml.Node) *pipeline.Retry {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	r := &pipeline.Retry{Pos: d.f.pos(n), Fields: fs, Attempts: pipeline.DefaultRetryAttempts, Backoff: pipeline.DefaultRetryBackoff, DelaySeconds: pipeline.DefaultRetryDelaySeconds}
	for _, kv := range ps {
		switch kv[0].Value {
		case "attempts":
			if i, ok := d.whole(kv[1], "retry.attempts"); ok {
				r.Attempts = i
			}
		case "backoff":
			if s, ok := d.str(kv[1]); ok {
				r.Backoff = pipeline.Backoff(s)
			}
		case "delay_seconds":
			if f, ok := d.number(kv[1], "retry.delay_seconds"); ok {
				r.DelaySeconds = f
			}
		}
	}
	return r
}

func (d *decoder) verifier(n *yaml.Node) *pipeline.Verifier {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	v := &pipeline.Verifier{
		Pos: d.f.pos(n), Fields: fs,
		Mode: pipeline.ModeCritic, CombinationStrategy: pipeline.CombineMinimum, VetoFloor: pipeline.DefaultVetoFloor,
		Trigger: pipeline.VerifierTrigger{ConfidenceBelow: 1.0},
	}
	for _, kv := range ps {
		switch kv[0].Value {
		case "executor":
			v.Executor = d.text(kv[1])
		case "executor_config":
			v.ExecutorConfig = d.object(kv[1])
		case "mode":
			if s, ok := d.str(kv[1]); ok {
				v.Mode = s
			}
		case "combination_strategy":
			if s, ok := d.str(kv[1]); ok {
				v.CombinationStrategy = s
			}
		case "veto_floor":
			if f, ok := d.number(kv[1], "verifier.veto_floor"); ok {
				v.VetoFloor = f
			}
		case "trigger":
			for _, tp := range pairs(kv[1]) {
				switch tp[0].Value {
				case "always":
					v.Trigger.Always, _ = d.boolean(tp[1])
				case "confidence_below":
					if f, ok := d.number(tp[1], "verifier.trigger.confidence_below"); ok {
						v.Trigger.ConfidenceBelow = f
					}
				case "confidence_above":
					if f, ok := d.number(tp[1], "verifier.trigger.confidence_above"); ok {
						v.Trigger.ConfidenceAbove = f
					}
				}
			}
		}
	}
	return v
}

// parallel decodes a parallel group; where names it in messages.
func (d *decoder) parallel(n *yaml.Node, where string) *pipeline.Parallel {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	g := &pipeline.Parallel{Pos: d.f.pos(n), Fields: fs, Join: pipeline.JoinAllMustPass, Gate: defaultGate()}
	for _, kv := range ps {
		k, v := kv[0].Value, kv[1]
		if d.gateField(&g.Gate, k, v) {
			continue
		}
		switch k {
		case "name":
			g.Name = d.text(v)
		case "join":
			if s, ok := d.str(v); ok {
				g.Join = pipeline.Join(s)
			}
		case "timeout_seconds":
			g.TimeoutSeconds, _ = d.whole(v, "timeout_seconds")
		case "when":
			g.When = d.text(v)
		case "steps":
			if seq := resolve(v); seq.Kind == yaml.SequenceNode {
				for i, c := range seq.Content {
					if b := d.branch(c, fmt.Sprintf("branch %s of %s", nameOr(c, fmt.Sprintf("#%d", i+1)), where)); b != nil {
						g.Branches = append(g.Branches, b)
					}
				}
			}
		}
	}
	return g
}

// branch decodes a branch of a parallel group; where names it in
// messages.
func (d *decoder) branch(n *yaml.Node, where string) *pipeline.Branch {
	n = resolve(n)
	if n.Kind != yaml.MappingNode || d.f.unresolved[n] {
		return nil // not a branch, or a use: that failed
	}
	defer d.within(where)()
	fs, ps := d.fields(n)
	b := &pipeline.Branch{Pos: d.f.pos(n), Fields: fs, Weight: pipeline.DefaultBranchWeight}
	for _, kv := range ps {
		k, v := kv[0].Value, kv[1]
		switch k {
		case "name":
			b.Name = d.text(v)
		case "executor":
			b.Executor = d.text(v)
		case "executor_config":
			b.ExecutorConfig = d.object(v)
		case "prompt_template":
			b.PromptTemplate = d.text(v)
		case "timeout_seconds":
			b.TimeoutSeconds, _ = d.whole(v, "timeout_seconds")
		case "weight":
			if f, ok := d.number(v, "weight"); ok {
				b.Weight = f
			}
		case "verifier":
			b.Verifier = d.verifier(v)
		}
	}
	return b
}

func (d *decoder) fanOut(n *yaml.Node) *pipeline.FanOut {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fs, ps := d.fields(n)
	g := &pipeline.FanOut{
		Pos: d.f.pos(n), Fields: fs, As: pipeline.DefaultFanOutAs, Join: pipeline.JoinAllMustPass,
		Gate: defaultGate(), MaxItems: pipeline.DefaultMaxItems, OnEmpty: pipeline.EmptyComplete,
	}
	for _, kv := range ps {
		k, v := kv[0].Value, kv[1]
		if d.gateField(&g.Gate, k, v) {
			continue
		}
		switch k {
		case "name":
			g.Name = d.text(v)
		case "over":
			g.Over = d.text(v)
		case "as":
			if s, ok := d.str(v); ok {
				g.As = s
			}
		case "executor":
			g.Executor = d.text(v)
		case "executor_config":
			g.ExecutorConfig = d.object(v)
		case "prompt_template":
			g.PromptTemplate = d.text(v)
		case "timeout_seconds":
			g.TimeoutSeconds, _ = d.whole(v, "timeout_seconds")
		case "join":
			if s, ok := d.str(v); ok {
				g.Join = pipeline.Join(s)
			}
		case "max_items":
			if i, ok := d.whole(v, "max_items"); ok {
				g.MaxItems = i
			}
		case "on_empty":
			if s, ok := d.str(v); ok {
				g.OnEmpty = s
			}
		case "when":
			g.When = d.text(v)
		case "verifier":
			g.Verifier = d.verifier(v)
		}
	}
	return g
}

// describe names the node at path for messages: `step "triage"`,
// `branch "logs" of parallel "evidence"`, or the top-level field.
func describe(root *yaml.Node, path []string) (where string, rest []string) {
	if len(path) >= 2 && path[0] == "steps" {
		entry := nodeAt(root, path[:2])
		idx, _ := strconv.Atoi(path[1])
		kind, body, rest := "step", entry, path[2:]
		if len(rest) > 0 && (rest[0] == "parallel" || rest[0] == "fan_out") {
			kind = map[string]string{"parallel": "parallel", "fan_out": "fan_out"}[rest[0]]
			body = nodeAt(entry, rest[:1])
			rest = rest[1:]
		}
		where = fmt.Sprintf("%s %s", kind, nameOr(body, fmt.Sprintf("#%d", idx+1)))
		if kind == "parallel" && len(rest) >= 2 && rest[0] == "steps" {
			bi, _ := strconv.Atoi(rest[1])
			where = fmt.Sprintf("branch %s of %s", nameOr(nodeAt(body, rest[:2]), fmt.Sprintf("#%d", bi+1)), where)
			rest = rest[2:]
		}
		return where, rest
	}
	return "", path
}

func nameOr(n *yaml.Node, fallback string) string {
	if v := lookupKey(pairs(n), "name"); v != nil {
		if r := resolve(v); r.Kind == yaml.ScalarNode && r.Value != "" {
			return strconv.Quote(r.Value)
		}
	}
	return fallback
}

// nodeAt walks a path of mapping keys and sequence indexes.
func nodeAt(n *yaml.Node, path []string) *yaml.Node {
	for _, seg := range path {
		n = resolve(n)
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			n = lookupKey(pairs(n), seg)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return resolve(n)
}

// keyNodeAt returns the key node of the last segment of path, when the
// parent is a mapping.
func keyNodeAt(root *yaml.Node, path []string) *yaml.Node {
	if len(path) == 0 {
		return nil
	}
	parent := nodeAt(root, path[:len(path)-1])
	if parent == nil || parent.Kind != yaml.MappingNode {
		return nil
	}
	for _, p := range pairs(parent) {
		if p[0].Value == path[len(path)-1] {
			return p[0]
		}
	}
	return nil
}

// duplicateKeys reports keys written twice in one mapping: YAML forbids
// them, and silently keeping either value would guess. It walks the tree
// as written (aliases are not followed), which yamldoc bounds in depth.
func duplicateKeys(f *File, n *yaml.Node) Diagnostics {
	var ds Diagnostics
	if n == nil {
		return ds
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				continue
			}
			if first, ok := seen[k.Value]; ok {
				ds.errorf(f.pos(k), "duplicate key %q (first written at %d:%d)", k.Value, first.Line, first.Column)
				continue
			}
			seen[k.Value] = k
		}
	}
	for _, c := range n.Content {
		ds = append(ds, duplicateKeys(f, c)...)
	}
	return ds
}
