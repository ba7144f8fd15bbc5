package llmoutput

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestStacksPoolable pins the bound on the stacks a parse hands back:
// each may hold up to maxPooledStack entries.
func TestStacksPoolable(t *testing.T) {
	for _, c := range []struct {
		name                  string
		members, items, paths int
		want                  bool
	}{
		{"below", maxPooledStack - 1, maxPooledStack - 1, maxPooledStack - 1, true},
		{"at", maxPooledStack, maxPooledStack, maxPooledStack, true},
		{"members above", maxPooledStack + 1, 0, 0, false},
		{"items above", 0, maxPooledStack + 1, 0, false},
		{"path above", 0, 0, maxPooledStack + 1, false},
	} {
		p := lenient{members: make([]member, 0, c.members), items: make([]value, 0, c.items), path: make([]pathElem, 0, c.paths)}
		if got := p.poolable(); got != c.want {
			t.Errorf("%s: poolable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReleaseClears pins that stacks go back to the pool empty: nothing of
// the reply they held stays reachable from them.
func TestReleaseClears(t *testing.T) {
	p := lenient{members: make([]member, 3, 16), items: make([]value, 2, 16), path: make([]pathElem, 1, 16)}
	for i := range p.members {
		p.members[i] = member{key: "k", val: value{kind: kindString, str: "secret"}}
	}
	p.items[0], p.items[1] = value{kind: kindString, str: "x"}, value{kind: kindObject, members: p.members[:1]}
	p.path[0] = pathElem{key: "k"}
	members, items, path := p.members[:cap(p.members)], p.items[:cap(p.items)], p.path[:cap(p.path)]
	p.members = p.members[:0] // as the parse leaves them: emptied, grown
	s := &stacks{}
	p.release(s)
	if len(s.members) != 0 || cap(s.members) != 16 || len(s.items) != 0 || cap(s.items) != 16 || cap(s.path) != 16 {
		t.Errorf("released stacks %d/%d, %d/%d, %d/%d", len(s.members), cap(s.members), len(s.items), cap(s.items), len(s.path), cap(s.path))
	}
	for i, m := range members {
		if !reflect.DeepEqual(m, member{}) {
			t.Errorf("member %d kept %+v", i, m)
		}
	}
	for i, v := range items {
		if !reflect.DeepEqual(v, value{}) {
			t.Errorf("item %d kept %+v", i, v)
		}
	}
	for i, e := range path {
		if e != (pathElem{}) {
			t.Errorf("path %d kept %+v", i, e)
		}
	}
}

// TestParseAfterLargeReply checks that parses reusing the pool's stacks,
// after a reply whose stacks outgrew the bound and one that failed half
// way, read what a parse with fresh stacks reads.
func TestParseAfterLargeReply(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"confidence": 0.9, "summary": "s", "next_step_context": "", "list": [`)
	for i := range 3 * maxPooledStack {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `{"k%d": %d}`, i, i)
	}
	big.WriteString("]}")
	replies := []string{
		`{"confidence": 0.8, "summary": "first", "next_step_context": "a", "x": {"y": [1, 2, {"z": null}]}}`,
		big.String(),
		`{"confidence": 0.7, "summary": "cut", "next_step_context": "b", "x": {"y": [1, 2`,
		`{'confidence': 0.6, summary: "repaired", "next_step_context": "c",}`,
	}
	want := make([]Result, len(replies))
	for i, r := range replies {
		want[i] = Parse(r, ParseOptions{})
	}
	for round := range 3 {
		for i, r := range replies {
			if got := Parse(r, ParseOptions{}); !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("round %d, reply %d: %+v, want %+v", round, i, got, want[i])
			}
		}
	}
	if !want[1].OK || want[1].Output.Summary != "s" {
		t.Errorf("the large reply: %+v", want[1])
	}
}
