package yamldoc

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The bounds of a document (see the package documentation).
const (
	MaxBytes = 8 << 20
	MaxNodes = 1_000_000
	MaxDepth = 100
)

// Error is a document refused for crossing a bound. Line and Column
// (1-based) are where it crosses: the alias whose expansion goes past the
// bound, or the node that does.
type Error struct {
	Line, Column int
	Msg          string
}

// Error returns "line:col: message"; loaders prefix the file name.
func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg) }

// Parse parses the first YAML document of data into a node tree and checks
// it against the bounds. It returns the document node: Kind DocumentNode,
// or the zero Node when data holds no document. Text that is not YAML
// gets the parser's own error, unchanged ("yaml: line N: ..."); a
// document out of bounds gets an *Error.
func Parse(data []byte) (*yaml.Node, error) {
	if len(data) > MaxBytes {
		return nil, &Error{Line: 1, Column: 1, Msg: fmt.Sprintf("the document is larger than %d MiB", MaxBytes>>20)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if err := check(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// Unmarshal is yaml.Unmarshal within the bounds: it parses data with
// Parse, then decodes the document into v. Empty data leaves v as it is.
func Unmarshal(data []byte, v any) error {
	doc, err := Parse(data)
	if err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil
	}
	return doc.Decode(v)
}

// check measures the document as if every alias were expanded.
func check(doc *yaml.Node) error {
	m := measure{memo: map[*yaml.Node]extent{}, open: map[*yaml.Node]bool{}}
	for _, n := range doc.Content {
		if _, err := m.walk(n, 1); err != nil {
			return err
		}
	}
	return nil
}

// extent is the size of a value with its aliases expanded: its nodes and
// its height (a scalar is 1, a list of scalars 2).
type extent struct{ nodes, height int }

// measure walks the tree as written, in document order, and counts each
// alias as the extent of the value it names. An alias's target is either
// already walked (anchors come before their aliases), so its extent is in
// memo, or one of the values being walked, which is a cycle.
type measure struct {
	nodes int                   // the running total, aliases expanded
	memo  map[*yaml.Node]extent // extents of the anchored values walked
	open  map[*yaml.Node]bool   // anchored values being walked
}

// walk measures n, found at depth (the top-level value is at 1), and
// returns its extent. It fails at the first node that crosses a bound;
// every extent it returns is within MaxNodes, so sums cannot overflow.
func (m *measure) walk(n *yaml.Node, depth int) (extent, error) {
	if n.Kind == yaml.AliasNode {
		return m.alias(n, depth)
	}
	m.nodes++
	if m.nodes > MaxNodes {
		return extent{}, refuse(n, "the document has more than %d nodes", MaxNodes)
	}
	if depth > MaxDepth {
		return extent{}, refuse(n, "the document nests deeper than %d levels", MaxDepth)
	}
	if n.Anchor != "" {
		m.open[n] = true
	}
	e := extent{nodes: 1, height: 1}
	for _, c := range n.Content {
		ce, err := m.walk(c, depth+1)
		if err != nil {
			return extent{}, err
		}
		e.nodes += ce.nodes
		e.height = max(e.height, ce.height+1)
	}
	if n.Anchor != "" {
		delete(m.open, n)
		m.memo[n] = e
	}
	return e, nil
}

func (m *measure) alias(n *yaml.Node, depth int) (extent, error) {
	name := "*" + n.Value
	t := n.Alias
	if t == nil {
		return extent{}, refuse(n, "alias %q names no anchor", name)
	}
	if m.open[t] {
		return extent{}, refuse(n, "alias %q is inside the value it names: it would expand forever", name)
	}
	e, ok := m.memo[t]
	if !ok {
		// The parser only links an alias to an anchor it has read, which
		// walk has measured or is measuring: this is not a parsed tree.
		return extent{}, refuse(n, "alias %q names an anchor outside the document", name)
	}
	m.nodes += e.nodes
	if m.nodes > MaxNodes {
		return extent{}, refuse(n, "alias %q expands the document past %d nodes (an alias counts as a copy of the value it names)", name, MaxNodes)
	}
	if depth-1+e.height > MaxDepth {
		return extent{}, refuse(n, "alias %q nests the document deeper than %d levels", name, MaxDepth)
	}
	return e, nil
}

func refuse(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)}
}
