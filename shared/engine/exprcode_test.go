package engine

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestSFNInitials: sfnInitials holds exactly the first letters of the
// functions Step Functions adds, which newExprCode looks for after a "$".
func TestSFNInitials(t *testing.T) {
	var want []byte
	for name := range sfnFunctions {
		if !slices.Contains(want, name[0]) {
			want = append(want, name[0])
		}
	}
	slices.Sort(want)
	if got := []byte(sfnInitials); !slices.Equal(got, want) {
		t.Errorf("sfnInitials = %q, want %q", got, want)
	}
}

// TestExprCodeFunctions: an expression's code binds each added function
// whose "$name" appears in its body, anywhere, and no other.
func TestExprCodeFunctions(t *testing.T) {
	for _, body := range []string{
		"$uuid()", "$hash($x, 'SHA-256')", "$parse($parse($states.errorOutput.Cause).errorMessage)",
		"$partition($x, 2) & $range(0, 3, 1)", "$x.partition", "partition($x)", "$parsed", "$$uuid",
		"$rangeX", "'$hash'", "$", "$states.input", "$p", "$h & $u & $r", "$uui", "x$range",
	} {
		code, err := newExprCode(body, nil, false)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		var want []string
		for name := range sfnFunctions {
			if strings.Contains(body, "$"+name) {
				want = append(want, name)
			}
		}
		slices.Sort(want)
		if got := slices.Sorted(maps.Keys(code.exts)); !slices.Equal(got, want) {
			t.Errorf("%q binds %q, want %q", body, got, want)
		}
	}
}

// TestBoundNames: a binding that keeps what it found returns it again
// for the same body, and each scope's bindings are its own: the same
// body binds what each scope can see.
func TestBoundNames(t *testing.T) {
	outer := binding{visible: map[string]bool{"a": true}, seen: map[string]bound{}}
	inner := binding{visible: map[string]bool{"a": true, "b": true}, seen: map[string]bound{}}
	body := "$b & $a & $states.input & $a & $c"
	for _, c := range []struct {
		b    binding
		want []string
	}{{outer, []string{"a", "states"}}, {inner, []string{"a", "b", "states"}}, {binding{visible: inner.visible}, []string{"a", "b", "states"}}} {
		first := c.b.boundNames(body)
		again := c.b.boundNames(body)
		if !slices.Equal(first.names, c.want) || !slices.Equal(again.names, c.want) {
			t.Errorf("%v: names %q then %q, want %q", c.b.visible, first.names, again.names, c.want)
		}
		if key := (exprKey{body: body, names: strings.Join(c.want, " ")}); first.key != key || again.key != key {
			t.Errorf("%v: key %q then %q, want %q", c.b.visible, first.key, again.key, key)
		}
		if _, kept := c.b.seen[body]; kept != (c.b.seen != nil) {
			t.Errorf("%v: kept %v", c.b.visible, kept)
		}
	}
}

// TestWrapped: the wrapped program binds each name from the input
// document, in order, around the body on lines of its own.
func TestWrapped(t *testing.T) {
	if got, want := wrapped("$a + $b", []string{"a", "b"}), "($a := $.`a`; $b := $.`b`; (\n$a + $b\n))"; got != want {
		t.Errorf("wrapped = %q, want %q", got, want)
	}
	if got, want := wrapped("1", nil), "((\n1\n))"; got != want {
		t.Errorf("wrapped = %q, want %q", got, want)
	}
}
