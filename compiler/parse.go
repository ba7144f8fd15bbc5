package compiler

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/pipeline"
)

// File is a parsed pipeline file: the model and what the later phases need
// to know of its source text.
type File struct {
	Pipeline *pipeline.Pipeline
	name     string
	lines    [][]byte              // the source, split into lines
	scalars  map[pipeline.Pos]span // text fields, by the position of their value
}

// span is how a scalar's text sits in the file, so that an offset into the
// text can be turned into a file position.
type span struct {
	style  yaml.Style
	indent int // block scalars: the indentation of the content lines
}

// maxFileSize bounds the pipeline files the parser reads.
const maxFileSize = 8 << 20

// Parse reads one pipeline file. It checks the document against the
// pipeline JSON Schema, then builds the model with defaults applied. Every
// problem found is returned, positioned; the model is nil only when the
// file is not YAML at all.
func Parse(name string, src []byte) (*File, Diagnostics) {
	var ds Diagnostics
	filePos := pipeline.Pos{File: name, Line: 1, Col: 1}
	if len(src) > maxFileSize {
		ds.errorf(filePos, "file is larger than %d MiB", maxFileSize>>20)
		return nil, ds
	}
	if !utf8.Valid(src) {
		ds.errorf(filePos, "file is not valid UTF-8")
		return nil, ds
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		ds = append(ds, yamlError(name, err))
		return nil, ds
	}
	if len(doc.Content) == 0 {
		ds.errorf(filePos, "file is empty: a pipeline needs at least a name and steps")
		return nil, ds
	}
	root := doc.Content[0]
	f := &File{name: name, lines: bytes.Split(src, []byte("\n")), scalars: map[pipeline.Pos]span{}}
	if root.Kind != yaml.MappingNode {
		ds.errorf(f.pos(root), "a pipeline file must be a mapping with name and steps, not a %s", kindName(root))
		return nil, ds
	}
	ds = append(ds, duplicateKeys(f, root, 0)...)
	ds = append(ds, validateSchema(f, root)...)
	d := &decoder{f: f}
	f.Pipeline = d.pipeline(root)
	ds = append(ds, d.ds...)
	return f, ds
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlError turns a YAML syntax error into a positioned diagnostic.
func yamlError(name string, err error) Diagnostic {
	msg := err.Error()
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 1
	if m := yamlLineRE.FindStringSubmatch(strings.SplitN(msg, "\n", 2)[0]); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	return Diagnostic{Pos: pipeline.Pos{File: name, Line: line, Col: 1}, Msg: "invalid YAML: " + msg}
}

func (f *File) pos(n *yaml.Node) pipeline.Pos {
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
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		for i := n.Line; i < len(f.lines); i++ { // n.Line is 1-based: the line after the indicator
			l := f.lines[i]
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
// map[string]any, []any, string, float64/int64, bool or nil.
func toValue(n *yaml.Node, depth int) any {
	n = resolve(n)
	if n == nil || depth > 200 {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		ps := pairs(n)
		m := make(map[string]any, len(ps))
		for _, p := range ps {
			m[p[0].Value] = toValue(p[1], depth+1)
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = toValue(c, depth+1)
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

// decoder builds the model from a document the schema has already judged:
// values of the wrong type were reported there and are skipped here.
type decoder struct {
	f  *File
	ds Diagnostics
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

func (d *decoder) num(n *yaml.Node) (float64, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch v := scalarValue(n).(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func (d *decoder) integer(n *yaml.Node) (int, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return 0, false
	}
	if v, ok := scalarValue(n).(int64); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
		return int(v), true
	}
	return 0, false
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
	m, _ := toValue(n, 0).(map[string]any)
	return m
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
		Pos:     d.f.pos(root),
		Fields:  fs,
		Version: 1,
		Stage:   pipeline.StageTesting,
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
			if i, ok := d.integer(v); ok {
				p.Version = i
			}
		case "stage":
			if s, ok := d.str(v); ok {
				p.Stage = pipeline.Stage(s)
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
				for _, c := range seq.Content {
					if node := d.stepEntry(c); node != nil {
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
					nfs, nps := d.fields(it)
					n := pipeline.Notification{Pos: d.f.pos(resolve(it))}
					_ = nfs
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
		}
	}
	return p
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
					m.Value = toValue(ops[0][1], 0)
					d.f.noteScalar(resolve(ops[0][1]))
				} else {
					m.Value = toValue(val, 0)
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
					if i, ok := d.integer(dp[1]); ok {
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
			if i, ok := d.integer(kv[1]); ok {
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
			if f, ok := d.num(kv[1]); ok {
				i := int64(f)
				b.MaxTokens = &i
			}
		case "max_usd", "max_cost":
			if f, ok := d.num(kv[1]); ok {
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

func (d *decoder) stepEntry(n *yaml.Node) pipeline.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	ps := pairs(n)
	if v := lookupKey(ps, "parallel"); v != nil {
		return d.parallel(v)
	}
	if v := lookupKey(ps, "fan_out"); v != nil {
		return d.fanOut(v)
	}
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
		if f, ok := d.num(v); ok {
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
			s.TimeoutSeconds, _ = d.integer(v)
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
					lu.Confidence, _ = d.num(lp[1])
				case "max_iterations":
					if i, ok := d.integer(lp[1]); ok {
						lu.MaxIterations = i
					}
				}
			}
			s.LoopUntil = lu
		}
	}
	return s
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
					if i, ok := d.integer(wp[1]); ok {
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
			if i, ok := d.integer(kv[1]); ok {
				r.Attempts = i
			}
		case "backoff":
			if s, ok := d.str(kv[1]); ok {
				r.Backoff = pipeline.Backoff(s)
			}
		case "delay_seconds":
			if f, ok := d.num(kv[1]); ok {
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
			if f, ok := d.num(kv[1]); ok {
				v.VetoFloor = f
			}
		case "trigger":
			for _, tp := range pairs(kv[1]) {
				switch tp[0].Value {
				case "always":
					v.Trigger.Always, _ = d.boolean(tp[1])
				case "confidence_below":
					if f, ok := d.num(tp[1]); ok {
						v.Trigger.ConfidenceBelow = f
					}
				case "confidence_above":
					if f, ok := d.num(tp[1]); ok {
						v.Trigger.ConfidenceAbove = f
					}
				}
			}
		}
	}
	return v
}

func (d *decoder) parallel(n *yaml.Node) *pipeline.Parallel {
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
			g.TimeoutSeconds, _ = d.integer(v)
		case "when":
			g.When = d.text(v)
		case "steps":
			if seq := resolve(v); seq.Kind == yaml.SequenceNode {
				for _, c := range seq.Content {
					if b := d.branch(c); b != nil {
						g.Branches = append(g.Branches, b)
					}
				}
			}
		}
	}
	return g
}

func (d *decoder) branch(n *yaml.Node) *pipeline.Branch {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
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
			b.TimeoutSeconds, _ = d.integer(v)
		case "weight":
			if f, ok := d.num(v); ok {
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
			g.TimeoutSeconds, _ = d.integer(v)
		case "join":
			if s, ok := d.str(v); ok {
				g.Join = pipeline.Join(s)
			}
		case "max_items":
			if i, ok := d.integer(v); ok {
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
// them, and silently keeping either value would guess.
func duplicateKeys(f *File, n *yaml.Node, depth int) Diagnostics {
	var ds Diagnostics
	if n == nil || depth > 200 {
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
		ds = append(ds, duplicateKeys(f, c, depth+1)...)
	}
	return ds
}
