package yamldoc

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

func wantError(t *testing.T, err error, line, col int, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *Error %d:%d: %s", err, err, line, col, msg)
	}
	if e.Line != line || e.Column != col || !strings.Contains(e.Msg, msg) {
		t.Fatalf("error %q, want %d:%d: …%s…", e.Error(), line, col, msg)
	}
}

func TestBillionLaughs(t *testing.T) {
	src := yamldoctest.Laughs(9, 9)
	if len(src) > 500 {
		t.Fatalf("the document is %d bytes, want a small one", len(src))
	}
	var err error
	yamldoctest.Cheap(t, func() { _, err = Parse(src) })
	// Lines 1-6 come to 672,610 nodes (the mapping, six keys, lists of
	// 10, 91, 820, 7,381, 66,430 and 597,871 nodes); on line 7 the key,
	// the list and the first *l5 (597,871 more) cross 1,000,000.
	wantError(t, err, 7, 8, `alias "*f" expands the document past 1000000 nodes`)
	var v any
	yamldoctest.Cheap(t, func() { err = Unmarshal(src, &v) })
	wantError(t, err, 7, 8, `alias "*f" expands the document past 1000000 nodes`)
}

// nodes builds a document of exactly total nodes, aliases expanded, most
// of them from aliases: an anchored list of 1,000 nodes, a list of k
// aliases to it and a list of padding scalars, before the aliases or
// after them.
func nodes(total int, padFirst bool) (src []byte, aliasLine int) {
	const fixed = 1 + (1 + 1000) + (1 + 1) + (1 + 1) // mapping; key a, its list; key b, its list; key c, its list
	k := (total - fixed) / 1000
	pad := total - fixed - 1000*k
	if pad < 1 {
		k--
		pad += 1000
	}
	a := "a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 999), ",") + "]\n"
	b := "b: [" + strings.TrimSuffix(strings.Repeat("*a,", k), ",") + "]\n"
	c := "c: [" + strings.TrimSuffix(strings.Repeat("y,", pad), ",") + "]\n"
	if padFirst {
		return []byte(a + c + b), 3
	}
	return []byte(a + b + c), 2
}

func TestNodeBudget(t *testing.T) {
	tests := []struct {
		name     string
		total    int
		padFirst bool // the crossing happens at an alias, else at a padding scalar
		wantErr  string
	}{
		{"alias: just below the budget", MaxNodes - 1, true, ""},
		{"alias: at the budget", MaxNodes, true, ""},
		{"alias: just above the budget", MaxNodes + 1, true, `alias "*a" expands the document past 1000000 nodes`},
		{"written: just below the budget", MaxNodes - 1, false, ""},
		{"written: at the budget", MaxNodes, false, ""},
		{"written: just above the budget", MaxNodes + 1, false, "the document has more than 1000000 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, aliasLine := nodes(tt.total, tt.padFirst)
			doc, err := Parse(src)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := expandedCount(doc.Content[0]); got != tt.total {
					t.Fatalf("the document has %d nodes, want %d", got, tt.total)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			// The last node of the last line crosses: the last alias of
			// b when the padding comes first, else the last padding scalar.
			last, mark := 3, "y"
			if tt.padFirst {
				last, mark = aliasLine, "*a"
			}
			line := strings.Split(string(src), "\n")[last-1]
			if col := strings.LastIndex(line, mark) + 1; e.Line != last || e.Column != col {
				t.Errorf("error at %d:%d, want %d:%d", e.Line, e.Column, last, col)
			}
		})
	}
}

// expandedCount counts n's nodes the slow way, following every alias.
func expandedCount(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode {
		return expandedCount(n.Alias)
	}
	c := 1
	for _, k := range n.Content {
		c += expandedCount(k)
	}
	return c
}

func TestDepth(t *testing.T) {
	nest := func(depth int, inner string) string {
		return strings.Repeat("[", depth) + inner + strings.Repeat("]", depth)
	}
	tests := []struct {
		name      string
		src       string
		line, col int // of the error; 0: none
		wantErr   string
	}{
		// The top-level list is at depth 1, so n brackets put x at n+1.
		{"written: just below", nest(98, "x"), 0, 0, ""},
		{"written: at the bound", nest(99, "x"), 0, 0, ""},
		{"written: just above", nest(100, "x"), 1, 101, "the document nests deeper than 100 levels"},
		// a's value has height 51 (50 lists and x) at depth 2; an alias at
		// depth 2+m reaches 2+m-1+51 = m+52.
		{"alias: just below", "a: &a " + nest(50, "x") + "\nb: " + nest(47, "*a") + "\n", 0, 0, ""},
		{"alias: at the bound", "a: &a " + nest(50, "x") + "\nb: " + nest(48, "*a") + "\n", 0, 0, ""},
		{"alias: just above", "a: &a " + nest(50, "x") + "\nb: " + nest(49, "*a") + "\n", 2, 53, `alias "*a" nests the document deeper than 100 levels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tt.line, tt.col, tt.wantErr)
		})
	}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		wantErr   string
	}{
		{"alias inside its own anchor", "a: &x [1, *x]\n", 1, 11, `alias "*x" is inside the value it names: it would expand forever`},
		{"merge of its own mapping", "a: &m\n  k: v\n  <<: *m\n", 3, 7, `alias "*m" is inside the value it names`},
		{"alias in a nested anchor", "a: &outer\n  b: &inner [*outer]\n", 2, 14, `alias "*outer" is inside the value it names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			wantError(t, err, tt.line, tt.col, tt.wantErr)
		})
	}
}

func TestMaxBytes(t *testing.T) {
	doc := func(size int) []byte { return []byte("a: " + strings.Repeat("x", size-len("a: "))) }
	for _, tt := range []struct {
		name string
		size int
		ok   bool
	}{
		{"just below", MaxBytes - 1, true},
		{"at the bound", MaxBytes, true},
		{"just above", MaxBytes + 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(doc(tt.size))
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, 1, 1, "the document is larger than 8 MiB")
		})
	}
}

func TestAnchorsWithinBoundsWork(t *testing.T) {
	src := []byte(`
base: &base {model: m, temperature: 0.1}
steps:
  - {<<: *base, name: a}
  - {<<: [*base], name: b, model: n}
`)
	var v struct {
		Steps []map[string]any `yaml:"steps"`
	}
	if err := Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Steps) != 2 || v.Steps[0]["model"] != "m" || v.Steps[1]["model"] != "n" || v.Steps[1]["temperature"] != 0.1 {
		t.Errorf("decoded %v", v.Steps)
	}
}

func TestParsePassesSyntaxErrorsThrough(t *testing.T) {
	_, err := Parse([]byte("a: [\n"))
	var e *Error
	if err == nil || errors.As(err, &e) || !strings.HasPrefix(err.Error(), "yaml: line ") {
		t.Fatalf("error %v, want the parser's own", err)
	}
}

func TestUnmarshalEmpty(t *testing.T) {
	v := map[string]any{"kept": true}
	for _, src := range []string{"", "# only a comment\n"} {
		if err := Unmarshal([]byte(src), &v); err != nil || v["kept"] != true {
			t.Errorf("Unmarshal(%q): %v, %v", src, err, v)
		}
	}
}

// TestLibraryAliasGuard pins what go.yaml.in/yaml/v3 does on its own, and
// so why every loader goes through Parse.
func TestLibraryAliasGuard(t *testing.T) {
	// Decoding into Go values, the library refuses the classic attack...
	var v any
	var err error
	yamldoctest.Cheap(t, func() { err = yaml.Unmarshal(yamldoctest.Laughs(9, 9), &v) })
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("yaml.Unmarshal into any: %v, want excessive aliasing", err)
	}
	// ...but into a yaml.Node it expands nothing and refuses nothing: the
	// tree is small, every walker that follows its aliases is not.
	var n yaml.Node
	if err := yaml.Unmarshal(yamldoctest.Laughs(9, 9), &n); err != nil {
		t.Errorf("yaml.Unmarshal into a Node: %v", err)
	}
	// Its guard is a ratio of aliased to decoded nodes (99% for documents
	// under 400,000 decodes), checked per Decode call. Four mappings
	// whose 2,700 written scalars keep each call under the ratio decode
	// 4 × 260,261 aliased nodes from a 25 KB file: the scripted responses
	// loader decodes each reply on its own, so the library would let it
	// expand past MaxNodes.
	var b strings.Builder
	b.WriteString("a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 1000), ",") + "]\n")
	b.WriteString("big: &big [" + strings.TrimSuffix(strings.Repeat("*a,", 260), ",") + "]\n")
	for i := range 4 {
		fmt.Fprintf(&b, "r%d: {pad: [%s], x: *big}\n", i, strings.TrimSuffix(strings.Repeat("y,", 2700), ","))
	}
	src := []byte(b.String())
	if err := yaml.Unmarshal(src, &n); err != nil {
		t.Fatal(err)
	}
	root := n.Content[0]
	decoded := 0
	for i := 4; i < len(root.Content); i += 2 {
		var reply map[string]any
		if err := root.Content[i+1].Decode(&reply); err != nil {
			t.Fatalf("reply %d: the library refused it: %v", i/2-1, err)
		}
		decoded += len(reply["x"].([]any)) * 1001
	}
	if decoded <= MaxNodes || len(src) > 30_000 {
		t.Fatalf("decoded %d aliased nodes from %d bytes; the example should cross MaxNodes from a small file", decoded, len(src))
	}
	if _, err := Parse(src); err == nil {
		t.Errorf("Parse accepted %d aliased nodes", decoded)
	}
}
