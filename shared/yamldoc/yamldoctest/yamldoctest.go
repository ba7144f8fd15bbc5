// Package yamldoctest helps the tests of YAML loaders check that they read
// through package yamldoc: it builds the documents that would exhaust a
// loader that expands aliases, and asserts that refusing them is cheap.
package yamldoctest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Laughs returns a "billion laughs" document: levels anchored lists named
// a, b, c, …, the first of fanOut scalars, each next one of fanOut aliases
// to the one before. Laughs(9, 9), the document of the report that found
// the problem, is 306 bytes that expand to about 435 million nodes;
// yamldoc refuses it at line 7, column 8, the first "*f".
func Laughs(levels, fanOut int) []byte {
	var b strings.Builder
	name := func(i int) string { return string(rune('a' + i)) }
	fmt.Fprintf(&b, "a: &a [%s]\n", strings.TrimSuffix(strings.Repeat("x,", fanOut), ","))
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "%s: &%s [%s]\n", name(i), name(i), strings.TrimSuffix(strings.Repeat("*"+name(i-1)+",", fanOut), ","))
	}
	return []byte(b.String())
}

// Cheap runs f and fails the test when f takes a second or more, or
// allocates 100 MB or more (runtime.MemStats.TotalAlloc, so the test must
// not run in parallel with others).
func Cheap(t testing.TB, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if took >= time.Second {
		t.Errorf("took %v, want under 1 s", took)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= 100<<20 {
		t.Errorf("allocated %d MB, want under 100 MB", alloc>>20)
	}
}
