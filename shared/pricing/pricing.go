package pricing

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/yamldoc"
)

// Usage is the token count of one call. It has the fields of
// llmoutput.Usage, so a Completion's usage converts with Usage(c.Usage).
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Entry is one row of a price table.
type Entry struct {
	Provider      string  `json:"provider,omitempty" yaml:"provider,omitempty"`
	ModelPrefix   string  `json:"model_prefix,omitempty" yaml:"model_prefix,omitempty"`
	InputPerMTok  float64 `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok" yaml:"output_per_mtok"`
}

// Table prices model calls. The zero value prices nothing. A Table is
// immutable and safe for concurrent use.
type Table struct {
	entries []Entry // normalised: lower-case provider and prefix
	lazy    *lazy   // set by Lazy: the table is the one it loads
}

// lazy is the table Lazy loads on first use.
type lazy struct {
	once sync.Once
	load func() (*Table, error)
	t    *Table
	err  error
}

// Lazy returns a table that calls load when it is first used (by Cost,
// Match, Entries or Err) and from then on prices as the table load
// returned. It lets a process start without parsing a table it may never
// need, or need only after its first request. When load fails or returns
// nil, the table prices nothing and Err returns the failure.
func Lazy(load func() (*Table, error)) *Table {
	return &Table{lazy: &lazy{load: load}}
}

// loaded returns the table that prices for t: t itself, or for a table
// from Lazy the one it loads (nil when loading failed).
func (t *Table) loaded() *Table {
	if t == nil || t.lazy == nil {
		return t
	}
	l := t.lazy
	l.once.Do(func() {
		got, err := l.load()
		l.load = nil
		switch {
		case err != nil:
			l.err = err
		case got == nil:
			l.err = fmt.Errorf("price table: the loader returned no table")
		default:
			l.t, l.err = got.loaded(), got.Err()
		}
	})
	return l.t
}

// Err returns why a table from Lazy prices nothing: its loader's error.
// It loads the table if that has not happened yet. It is nil for every
// other table.
func (t *Table) Err() error {
	if t == nil || t.lazy == nil {
		return nil
	}
	t.loaded()
	return t.lazy.err
}

// New returns a table of entries. An entry needs a provider or a model
// prefix, and finite, non-negative prices; two entries may not match the
// same calls.
func New(entries []Entry) (*Table, error) {
	t := &Table{entries: make([]Entry, 0, len(entries))}
	seen := map[[2]string]int{}
	for i, e := range entries {
		if err := check(e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		e.Provider = strings.ToLower(strings.TrimSpace(e.Provider))
		e.ModelPrefix = strings.ToLower(strings.TrimSpace(e.ModelPrefix))
		k := [2]string{e.Provider, e.ModelPrefix}
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("entry %d: same provider and model_prefix as entry %d", i+1, j)
		}
		seen[k] = i + 1
		t.entries = append(t.entries, e)
	}
	return t, nil
}

func check(e Entry) error {
	if strings.TrimSpace(e.Provider) == "" && strings.TrimSpace(e.ModelPrefix) == "" {
		return fmt.Errorf("needs a provider or a model_prefix (an entry matching every model would hide unknown costs)")
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"input_per_mtok", e.InputPerMTok}, {"output_per_mtok", e.OutputPerMTok}} {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) || p.v < 0 {
			return fmt.Errorf("%s must be a finite, non-negative number, got %v", p.name, p.v)
		}
	}
	return nil
}

// Load reads a table from YAML or JSON: a list of entries. Errors name the
// line and column of the offending entry; name is the source's name in
// messages (a file path). The source is read within package yamldoc's
// bounds (size, aliases expanded, depth).
func Load(name string, r io.Reader) (*Table, error) {
	data, err := io.ReadAll(io.LimitReader(r, yamldoc.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	doc, err := yamldoc.Parse(data)
	if err != nil {
		if be := (*yamldoc.Error)(nil); errors.As(err, &be) {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return &Table{}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d:%d: want a list of price entries", name, root.Line, root.Column)
	}
	entries := make([]Entry, 0, len(root.Content))
	for _, n := range root.Content {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d:%d: want a mapping {provider, model_prefix, input_per_mtok, output_per_mtok}", name, n.Line, n.Column)
		}
		var e Entry
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var err error
			switch k.Value {
			case "provider":
				err = v.Decode(&e.Provider)
			case "model_prefix":
				err = v.Decode(&e.ModelPrefix)
			case "input_per_mtok":
				err = decodeNumber(v, &e.InputPerMTok)
			case "output_per_mtok":
				err = decodeNumber(v, &e.OutputPerMTok)
			default:
				return nil, fmt.Errorf("%s:%d:%d: unknown key %q", name, k.Line, k.Column, k.Value)
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d:%d: %s: want a %s", name, v.Line, v.Column, k.Value, kindOf(k.Value))
			}
		}
		if !has(n, "input_per_mtok") || !has(n, "output_per_mtok") {
			return nil, fmt.Errorf("%s:%d:%d: input_per_mtok and output_per_mtok are required", name, n.Line, n.Column)
		}
		if err := check(e); err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %w", name, n.Line, n.Column, err)
		}
		entries = append(entries, e)
	}
	t, err := New(entries)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

func decodeNumber(n *yaml.Node, out *float64) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		return fmt.Errorf("not a number")
	}
	return n.Decode(out)
}

func kindOf(key string) string {
	if strings.HasSuffix(key, "_mtok") {
		return "number"
	}
	return "string"
}

func has(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// Default returns the example table of default.yaml (defaultEntries).
// Its error is nil unless the entries were edited into an invalid table
// (a test pins it).
func Default() (*Table, error) {
	return New(defaultEntries[:])
}

// Entries returns a copy of the table's entries, normalised to lower case.
func (t *Table) Entries() []Entry {
	t = t.loaded()
	if t == nil {
		return nil
	}
	return append([]Entry(nil), t.entries...)
}

// Match returns the entry that prices calls to model from provider. A model
// that matches nothing as written is matched again without its routing
// prefix: "vendor/model" (OpenRouter, LiteLLM) without "vendor/", and a
// Bedrock cross-region inference profile ("us.anthropic.…") without its
// geography.
func (t *Table) Match(provider, model string) (Entry, bool) {
	t = t.loaded()
	if t == nil {
		return Entry{}, false
	}
	p := strings.ToLower(strings.TrimSpace(provider))
	m := strings.ToLower(strings.TrimSpace(model))
	if e, ok := t.match(p, m); ok {
		return e, true
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		if e, ok := t.match(p, m[i+1:]); ok {
			return e, true
		}
	}
	if geo, rest, ok := strings.Cut(m, "."); ok && geography(geo) && strings.Contains(rest, ".") {
		if e, ok := t.match(p, rest); ok {
			return e, true
		}
	}
	if p != "" {
		for _, e := range t.entries {
			if e.Provider == p && e.ModelPrefix == "" {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// geography reports whether s prefixes Bedrock cross-region inference
// profile ids.
func geography(s string) bool {
	switch s {
	case "us", "eu", "apac", "us-gov", "global", "jp", "au", "ca":
		return true
	}
	return false
}

func (t *Table) match(p, m string) (Entry, bool) {
	if m == "" {
		return Entry{}, false
	}
	cands := make([]Entry, 0, 4)
	for _, e := range t.entries {
		if e.ModelPrefix == "" || !strings.HasPrefix(m, e.ModelPrefix) {
			continue
		}
		if e.Provider != "" && e.Provider != p {
			continue
		}
		cands = append(cands, e)
	}
	if len(cands) == 0 {
		return Entry{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if len(cands[i].ModelPrefix) != len(cands[j].ModelPrefix) {
			return len(cands[i].ModelPrefix) > len(cands[j].ModelPrefix)
		}
		return cands[i].Provider != "" && cands[j].Provider == ""
	})
	return cands[0], true
}

// Cost returns the price in US dollars of a call with usage u to model from
// provider, and false when the table has no price for it.
func (t *Table) Cost(provider, model string, u Usage) (float64, bool) {
	e, ok := t.Match(provider, model)
	if !ok {
		return 0, false
	}
	return (float64(u.InputTokens)*e.InputPerMTok + float64(u.OutputTokens)*e.OutputPerMTok) / 1e6, true
}
