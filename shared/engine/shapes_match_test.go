package engine

import (
	"regexp"
	"testing"
)

// The regexps objMember and plusInt read by hand.
var (
	objMemberRE = regexp.MustCompile(`^\s*'([A-Za-z0-9_.\-]+)'\s*:\s*\$([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	plusIntRE   = regexp.MustCompile(`^\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\+\s*([0-9]{1,9})\s*$`)
)

// checkShapeMatchers asserts that objMember and plusInt accept s exactly
// when their regexps match it, with the same groups.
func checkShapeMatchers(t *testing.T, s string) {
	t.Helper()
	key, name, ok := objMember(s)
	if m := objMemberRE.FindStringSubmatch(s); (m != nil) != ok || ok && (m[1] != key || m[2] != name) {
		t.Errorf("objMember(%q) = %q, %q, %v; the regexp: %q", s, key, name, ok, m)
	}
	pname, fields, digits, pok := plusInt(s)
	if m := plusIntRE.FindStringSubmatch(s); (m != nil) != pok || pok && (m[1] != pname || m[2] != fields || m[3] != digits) {
		t.Errorf("plusInt(%q) = %q, %q, %q, %v; the regexp: %q", s, pname, fields, digits, pok, m)
	}
}

// TestShapeMatchers: the hand-written readers of the two shapes agree
// with the regexps they stand for, on named cases (the digit count below,
// at and above nine; each kind of space; bytes either side of each
// character class) and on every string of up to five bytes over an
// alphabet of the patterns' pieces, and of up to six over a smaller one.
func TestShapeMatchers(t *testing.T) {
	for _, s := range []string{
		"'s1': $step_s1", " 's1' : $step_s1 ", "\t'a.b-c_1'\n:\r$x\f", "'': $x", "'s1': $", "'s1': $1",
		"'s1' $x", "'s1': x", "s1: $x", "'s1: $x", "'s1': $x y", "'s1': $x.y", "'é': $x", "'s1': $é",
		"\v's1': $x", "'s1': $x\v", "'a/b': $x", "'a b': $x", "'s1': $_", "'s1': $a$b",
		"$states.context.State.RetryCount + 1", "$a+1", " $a . b + 1", "$a.b +\t12\n", "$a.1b + 1",
		"$a.b. + 1", "$a..b + 1", "$a + ", "$a + -1", "$a + 1.5", "$a + 1 1", "$a - 1", "a + 1", "$ + 1",
		"$a + 12345678", "$a + 123456789", "$a + 1234567890", "$a + 000000000", "$a + 0000000000",
		"$a\v+ 1", "$a + 1\v", "$a.b.c_3 + 9", "$a[0] + 1",
	} {
		checkShapeMatchers(t, s)
	}
	var walk func(alphabet []string, prefix string, n int)
	walk = func(alphabet []string, prefix string, n int) {
		checkShapeMatchers(t, prefix)
		if n == 0 || t.Failed() {
			return
		}
		for _, c := range alphabet {
			walk(alphabet, prefix+c, n-1)
		}
	}
	walk([]string{" ", "\t", "\v", "'", "a", "_", "1", ".", "-", ":", "$", "+", "é"}, "", 5)
	walk([]string{" ", "'", "a", "1", ".", ":", "$", "+"}, "", 6)
}
