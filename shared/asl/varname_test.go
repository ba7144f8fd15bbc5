package asl

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidVarName: validVarName accepts what the regexp it stands for
// matches, up to 80 bytes (below, at and above), over named cases and
// every string of up to four bytes over the classes' edges.
func TestValidVarName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	check := func(s string) {
		t.Helper()
		if got, want := validVarName(s), re.MatchString(s) && len(s) <= 80; got != want {
			t.Errorf("validVarName(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"", "a", "_", "A9", "9a", "a-b", "a b", "é", "aé", "step_s1", "a\n", "\na",
		strings.Repeat("a", 79), strings.Repeat("a", 80), strings.Repeat("a", 81)} {
		check(s)
	}
	if !validVarName(strings.Repeat("a", 80)) || validVarName(strings.Repeat("a", 81)) {
		t.Error("the 80-byte bound is not at 80")
	}
	edges := []string{"/", "0", "9", ":", "@", "A", "Z", "[", "^", "_", "`", "a", "z", "{", "\xc3"}
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for _, c := range edges {
			walk(prefix+c, n-1)
		}
	}
	walk("", 4)
}
