// Package lazyregexp is a regular expression compiled when it is first
// used, for package-level patterns. A Lambda function runs every package
// initialiser of its binary on each cold start, so a pattern compiled at
// package level costs every cold start its compile time, used or not;
// some ({0,79} repetitions) take a tenth of a millisecond each. Go's own
// cmd/go does the same with its internal/lazyregexp.
//
// Under a test binary the pattern is compiled at once, so that a bad
// pattern still fails every test of its package.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use; it is safe for
// concurrent use. A pattern that does not compile panics on first use,
// as regexp.MustCompile does at start-up.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns the pattern str, compiled when it is first used.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// inTest is whether this is a test binary (its name ends in .test).
var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindString is regexp.Regexp.FindString.
func (r *Regexp) FindString(s string) string { return r.re().FindString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// FindAllStringSubmatchIndex is regexp.Regexp.FindAllStringSubmatchIndex.
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.re().FindAllStringSubmatchIndex(s, n)
}

// String is the pattern's source text.
func (r *Regexp) String() string { return r.str }

// ReplaceAllLiteralString is regexp.Regexp.ReplaceAllLiteralString.
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.re().ReplaceAllLiteralString(src, repl)
}
