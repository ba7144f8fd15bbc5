// Package yamlread reads typed values out of a YAML node tree (parsed
// within bounds by package yamldoc) and reports each problem at the node
// it is about, so a loader can print file:line:col for every one. It
// serves the loaders of agent profiles (package agent) and the project
// file (package project).
package yamlread

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Reader reads values, calling Report for each problem.
type Reader struct {
	Report func(n *yaml.Node, warning bool, msg string)
}

func (r *Reader) fail(n *yaml.Node, format string, args ...any) {
	r.Report(n, false, fmt.Sprintf(format, args...))
}

// Warn reports a warning at n.
func (r *Reader) Warn(n *yaml.Node, format string, args ...any) {
	r.Report(n, true, fmt.Sprintf(format, args...))
}

// Fail reports an error at n.
func (r *Reader) Fail(n *yaml.Node, format string, args ...any) { r.fail(n, format, args...) }

// Resolve follows an alias to the value it names.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// IsNull reports whether n is absent or null.
func IsNull(n *yaml.Node) bool {
	n = Resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// Kind names what n is, for messages: "a string", "a list", ….
func Kind(n *yaml.Node) string {
	n = Resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
	}
	return "a value"
}

// Entry is one key and value of a mapping.
type Entry struct {
	Key   string
	KeyAt *yaml.Node
	Value *yaml.Node
}

// Mapping returns the entries of the mapping n, what being how messages
// name it. A value that is not a mapping, a key that is not a string and
// a key written twice are reported (the repeat is left out).
func (r *Reader) Mapping(n *yaml.Node, what string) ([]Entry, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		r.fail(n, "%s: want a mapping, got %s", what, Kind(n))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	var out []Entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			r.fail(k, "%s: a key must be a string, got %s", what, Kind(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			r.fail(k, "%s: key %q is written twice (first at %d:%d)", what, k.Value, prev.Line, prev.Column)
			continue
		}
		seen[k.Value] = k
		out = append(out, Entry{Key: k.Value, KeyAt: k, Value: v})
	}
	return out, true
}

// String reads a string. Numbers and booleans are refused: a model name
// written 4 would be read as a number by other tools.
func (r *Reader) String(n *yaml.Node, field string) (string, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.fail(n, "%s: want a string, got %s", field, Kind(n))
		return "", false
	}
	return n.Value, true
}

// NonEmpty reads a string that holds more than blanks.
func (r *Reader) NonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := r.String(n, field)
	if ok && strings.TrimSpace(s) == "" {
		r.fail(Resolve(n), "%s: must not be empty", field)
		return "", false
	}
	return s, ok
}

// Int reads a whole number within lo..hi.
func (r *Reader) Int(n *yaml.Node, field string, lo, hi int) (int, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		r.fail(n, "%s: want a whole number, got %s", field, Kind(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		r.fail(n, "%s: %s is out of range: %d..%d", field, n.Value, lo, hi)
		return 0, false
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		r.fail(n, "%s: must be a finite number, not %s", field, n.Value)
		return 0, false
	case f != math.Trunc(f):
		r.fail(n, "%s: want a whole number, got %s", field, n.Value)
		return 0, false
	case f < float64(lo) || f > float64(hi):
		r.fail(n, "%s: %s is out of range: %d..%d", field, n.Value, lo, hi)
		return 0, false
	}
	return int(f), true
}

// Float reads a finite number within lo..hi.
func (r *Reader) Float(n *yaml.Node, field string, lo, hi float64) (float64, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		r.fail(n, "%s: want a number, got %s", field, Kind(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(n, "%s: must be a finite number, not %s", field, n.Value)
		return 0, false
	}
	if f < lo || f > hi {
		r.fail(n, "%s: %s is out of range: %g..%g", field, n.Value, lo, hi)
		return 0, false
	}
	return f, true
}

// Bool reads true or false.
func (r *Reader) Bool(n *yaml.Node, field string) (bool, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		r.fail(n, "%s: want true or false, got %s", field, Kind(n))
		return false, false
	}
	var b bool
	_ = n.Decode(&b)
	return b, true
}

// List returns the items of the list n (aliases resolved).
func (r *Reader) List(n *yaml.Node, field string) ([]*yaml.Node, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		r.fail(n, "%s: want a list, got %s", field, Kind(n))
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = Resolve(c)
	}
	return out, true
}

// Strings reads a list of strings; each item's node is returned with it.
func (r *Reader) Strings(n *yaml.Node, field string) ([]string, []*yaml.Node, bool) {
	items, ok := r.List(n, field)
	if !ok {
		return nil, nil, false
	}
	var out []string
	var at []*yaml.Node
	for i, it := range items {
		if s, ok := r.String(it, fmt.Sprintf("%s[%d]", field, i)); ok {
			out = append(out, s)
			at = append(at, it)
		}
	}
	return out, at, true
}

// StringMap reads a mapping of strings to strings.
func (r *Reader) StringMap(n *yaml.Node, field string) (map[string]string, map[string]*yaml.Node, bool) {
	es, ok := r.Mapping(n, field)
	if !ok {
		return nil, nil, false
	}
	out := make(map[string]string, len(es))
	at := make(map[string]*yaml.Node, len(es))
	for _, e := range es {
		if s, ok := r.String(e.Value, field+"."+e.Key); ok {
			out[e.Key] = s
			at[e.Key] = Resolve(e.Value)
		}
	}
	return out, at, true
}
