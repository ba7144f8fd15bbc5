package lazyregexp

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

func TestLazyMatchesAsCompiled(t *testing.T) {
	const pattern = `^([A-Za-z0-9])[A-Za-z0-9_-]{0,79}$`
	lazy := &Regexp{str: pattern} // not compiled yet, as outside a test binary
	want := regexp.MustCompile(pattern)
	cases := []struct {
		name, in string
	}{
		{"short name", "a"},
		{"hyphenated", "triage-bot_2"},
		{"leading hyphen", "-bot"},
		{"too long", strings.Repeat("a", 81)},
		{"empty", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := lazy.MatchString(c.in); got != want.MatchString(c.in) {
				t.Errorf("MatchString(%q) = %v", c.in, got)
			}
			if got, w := lazy.FindStringSubmatch(c.in), want.FindStringSubmatch(c.in); len(got) != len(w) {
				t.Errorf("FindStringSubmatch(%q) = %q, want %q", c.in, got, w)
			}
		})
	}
	if lazy.String() != pattern {
		t.Errorf("String() = %q", lazy.String())
	}
}

func TestCompiledOnceUnderConcurrentUse(t *testing.T) {
	r := &Regexp{str: `b+`}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.FindString("abbbc") != "bbb" {
				t.Error("no match")
			}
		}()
	}
	wg.Wait()
	if got := r.FindAllStringSubmatchIndex("ab abb", -1); len(got) != 2 {
		t.Errorf("FindAllStringSubmatchIndex = %v", got)
	}
}

func TestCompiledAtOnceInTests(t *testing.T) {
	if !inTest {
		t.Fatal("a test binary is not recognised as one")
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern does not panic in New under a test binary")
		}
	}()
	New(`(`)
}
