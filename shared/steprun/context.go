package steprun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/osteele/liquid/values"

	"github.com/stepline/stepline/shared/internal/jsonstr"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/task"
)

// stepsValue is the Liquid value of `steps`: the compact outputs of the
// earlier steps the Request carries. A step is decoded the first time a
// template reads it; hyphenated names are also reachable with underscores,
// an alias table built only when a lookup misses.
type stepsValue struct {
	raw map[string]json.RawMessage

	mu      sync.Mutex
	decoded map[string]any
	alias   map[string]string // resolved underscore forms → real names
}

// newStepsValue reads the Request's steps. An entry that is JSON null (a
// variable the state machine holds as null: a group's branch that gave no
// output) is a step that did not run, as an absent one.
func newStepsValue(raw map[string]json.RawMessage) *stepsValue {
	for _, v := range raw {
		if isNull(v) {
			kept := make(map[string]json.RawMessage, len(raw))
			for k, e := range raw {
				if !isNull(e) {
					kept[k] = e
				}
			}
			return &stepsValue{raw: kept}
		}
	}
	return &stepsValue{raw: raw}
}

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// maxAliasUnderscores bounds the underscore positions tried as hyphens
// directly (2^n lookups); names with more are matched by a scan.
const maxAliasUnderscores = 8

// lookup returns the decoded output of step name (or its alias).
func (s *stepsValue) lookup(name string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	real, ok := s.resolve(name)
	if !ok {
		return nil, false
	}
	if v, ok := s.decoded[real]; ok {
		return v, true
	}
	v := decodeOutput(s.raw[real])
	if s.decoded == nil {
		s.decoded = make(map[string]any)
	}
	s.decoded[real] = v
	return v, true
}

// resolve finds the step a name refers to: the name itself, or a step
// whose hyphens the name writes as underscores. The cost depends on the
// name, not on the number of steps.
func (s *stepsValue) resolve(name string) (string, bool) {
	if _, ok := s.raw[name]; ok {
		return name, true
	}
	if real, ok := s.alias[name]; ok {
		return real, true
	}
	var pos []int
	for i := 0; i < len(name); i++ {
		if name[i] == '_' {
			pos = append(pos, i)
		}
	}
	if len(pos) == 0 {
		return "", false
	}
	found, real := false, ""
	if len(pos) <= maxAliasUnderscores {
		b := []byte(name)
		for mask := 1; mask < 1<<len(pos) && !found; mask++ {
			for j, p := range pos {
				if mask&(1<<j) != 0 {
					b[p] = '-'
				} else {
					b[p] = '_'
				}
			}
			if _, ok := s.raw[string(b)]; ok {
				found, real = true, string(b)
			}
		}
	} else {
		for k := range s.raw {
			if len(k) == len(name) && strings.ReplaceAll(k, "-", "_") == name {
				found, real = true, k
				break
			}
		}
	}
	if !found {
		return "", false
	}
	if s.alias == nil {
		s.alias = make(map[string]string)
	}
	s.alias[name] = real
	return real, true
}

// decodeOutput decodes a compact output for templates, without
// raw_response. A value that is not JSON is kept as its text.
func decodeOutput(raw json.RawMessage) any {
	v, err := jsonstr.Decode(raw)
	if err != nil {
		return string(raw)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "raw_response")
	}
	return v
}

func (s *stepsValue) get(k values.Value) values.Value {
	name, ok := k.Interface().(string)
	if !ok {
		return values.ValueOf(nil)
	}
	if v, ok := s.lookup(name); ok {
		return values.ValueOf(v)
	}
	if name == "size" {
		return values.ValueOf(len(s.raw))
	}
	return missingStep{name: name}
}

func (s *stepsValue) Interface() any {
	m := make(map[string]any, len(s.raw))
	for k := range s.raw {
		v, _ := s.lookup(k)
		m[k] = v
	}
	return m
}
func (s *stepsValue) Int() int                                  { return 0 }
func (s *stepsValue) Equal(values.Value) bool                   { return false }
func (s *stepsValue) Less(values.Value) bool                    { return false }
func (s *stepsValue) Test() bool                                { return true }
func (s *stepsValue) IndexValue(k values.Value) values.Value    { return s.get(k) }
func (s *stepsValue) PropertyValue(k values.Value) values.Value { return s.get(k) }
func (s *stepsValue) Contains(k values.Value) bool {
	name, ok := k.Interface().(string)
	if !ok {
		return false
	}
	_, ok = s.lookup(name)
	return ok
}

// missingStep is a step not in the context. It renders empty and tests
// false, but reading one of its fields is an error: the template asks for
// the output of a step that did not run.
type missingStep struct{ name string }

func (m missingStep) Interface() any                         { return nil }
func (m missingStep) Int() int                               { return 0 }
func (m missingStep) Equal(o values.Value) bool              { return o.Interface() == nil }
func (m missingStep) Less(values.Value) bool                 { return false }
func (m missingStep) Test() bool                             { return false }
func (m missingStep) Contains(values.Value) bool             { return false }
func (m missingStep) IndexValue(k values.Value) values.Value { return m.PropertyValue(k) }
func (m missingStep) PropertyValue(k values.Value) values.Value {
	panic(values.TypeError(fmt.Sprintf("steps.%s.%v: step %q is not in the context (it was skipped, has not run yet, or is misspelt)", m.name, k.Interface(), m.name)))
}

// artifactsValue is the Liquid value of `artifacts`: artifacts.<step>.<key>
// reads the artifact a step's output references, fetched when read.
type artifactsValue struct {
	ctx   context.Context
	steps *stepsValue
	store ArtifactStore
}

func (a *artifactsValue) get(k values.Value) values.Value {
	name, ok := k.Interface().(string)
	if !ok {
		return values.ValueOf(nil)
	}
	out, ok := a.steps.lookup(name)
	if !ok {
		return values.ValueOf(nil)
	}
	m, _ := out.(map[string]any)
	refs, _ := m["artifacts"].(map[string]any)
	return &stepArtifacts{parent: a, refs: refs}
}

func (a *artifactsValue) Interface() any                            { return nil }
func (a *artifactsValue) Int() int                                  { return 0 }
func (a *artifactsValue) Equal(values.Value) bool                   { return false }
func (a *artifactsValue) Less(values.Value) bool                    { return false }
func (a *artifactsValue) Test() bool                                { return true }
func (a *artifactsValue) Contains(values.Value) bool                { return false }
func (a *artifactsValue) IndexValue(k values.Value) values.Value    { return a.get(k) }
func (a *artifactsValue) PropertyValue(k values.Value) values.Value { return a.get(k) }

type stepArtifacts struct {
	parent *artifactsValue
	refs   map[string]any
}

func (s *stepArtifacts) get(k values.Value) values.Value {
	key, ok := k.Interface().(string)
	if !ok {
		return values.ValueOf(nil)
	}
	ref, ok := s.refs[key].(string)
	if !ok {
		return values.ValueOf(nil)
	}
	if s.parent.store == nil || !isArtifactRef(ref) {
		return values.ValueOf(ref) // no artifact store: the content is inline
	}
	content, err := s.parent.store.Get(s.parent.ctx, ref)
	if err != nil {
		return values.ValueOf("[artifact unavailable: " + key + "]")
	}
	return values.ValueOf(content)
}

func (s *stepArtifacts) Interface() any                            { return s.refs }
func (s *stepArtifacts) Int() int                                  { return 0 }
func (s *stepArtifacts) Equal(values.Value) bool                   { return false }
func (s *stepArtifacts) Less(values.Value) bool                    { return false }
func (s *stepArtifacts) Test() bool                                { return s.refs != nil }
func (s *stepArtifacts) Contains(values.Value) bool                { return false }
func (s *stepArtifacts) IndexValue(k values.Value) values.Value    { return s.get(k) }
func (s *stepArtifacts) PropertyValue(k values.Value) values.Value { return s.get(k) }

var (
	_ values.Value = (*stepsValue)(nil)
	_ values.Value = missingStep{}
	_ values.Value = (*artifactsValue)(nil)
	_ values.Value = (*stepArtifacts)(nil)
)

// scope is what a step's templates see besides the Request: the step's
// name and the mode-specific variables.
type scope struct {
	current string
	loop    map[string]any // loop_until
	item    *fanItem       // fan-out branch
	failure map[string]any // failure webhook
}

type fanItem struct {
	as           string
	value        any
	index, total int
}

// bindingsSize is the most entries bindings can make for req and sc: the
// run's seven (run_id, pipeline_name, current_step, testing, labels,
// steps, artifacts), team, an include path's leaf and root, the vars,
// then the scope's. A map made for eight entries or fewer is one group,
// a fifth of the 16-entry table it was made as before.
func bindingsSize(req *task.Request, sc scope) int {
	n := 8 + 2*len(req.Pipeline.Include) + len(req.Pipeline.Vars)
	if sc.loop != nil {
		n++
	}
	if sc.item != nil {
		n += 4
	}
	if sc.failure != nil {
		n++
	}
	return n
}

// bindings builds the Liquid variables of a step. Its cost does not grow
// with the number of earlier steps: they are read through stepsValue.
func (h *Handler) bindings(ctx context.Context, req *task.Request, trig map[string]any, sc scope) map[string]any {
	b := make(map[string]any, bindingsSize(req, sc))
	req.Pipeline.RunBindings(b, req.Run.ID, sc.current, trig)
	steps := newStepsValue(req.Steps)
	b[pipeline.BindSteps] = steps
	b[pipeline.BindArtifacts] = &artifactsValue{ctx: ctx, steps: steps, store: h.Artifacts}
	if sc.loop != nil {
		b[pipeline.BindLoop] = sc.loop
	}
	if it := sc.item; it != nil {
		b[pipeline.BindItem] = it.value
		if it.as != "" {
			b[it.as] = it.value
		}
		b[pipeline.BindFanOutIndex] = it.index
		b[pipeline.BindFanOutTotal] = it.total
	}
	if sc.failure != nil {
		b[pipeline.BindStepFailure] = sc.failure
	}
	return b
}
