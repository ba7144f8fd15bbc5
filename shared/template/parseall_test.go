package template

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/osteele/liquid/render"
)

// parseAllCorpus holds templates of every kind ParseAll must take apart
// exactly: text only, objects, blocks, trims, raw and comments, several
// lines, errors of parse, of filters and of render on later lines, and
// constructs left open that would run into the next template.
var parseAllCorpus = []string{
	"",
	"plain text",
	"{{ s }}",
	"  {{ s }}  ",
	"{{ steps.s0.summary }}",
	"line 1\nline 2 {{ s | upcase }}\n{{ n | plus: 1 }} end\n",
	"\n\n{{ s }}\n",
	"{% if t %}T{% else %}E{% endif %}",
	"{% for x in xs %}\n[{{ x }}]\n{% endfor %}",
	"  {{- s -}}  |{%- if t -%}  x  {%- endif -%}|",
	"{{- s }}",
	"{{ s -}}",
	"text then {{- s -}}",
	"{% comment %}{{ s }}{% endcomment %}{% raw %}{{ s }}{% endraw %}",
	"{% assign y = xs | join: '+' %}\n{{ y }}",
	"{% capture c %}{{ s }}-{{ n }}{% endcapture %}{{ c | upcase }}",
	"a\nb\n{% break %}",          // a render error on line 3
	"x\n{{ 1 | divided_by: 0 }}", // a filter error on line 2
	"x\n{% for x in xs offset: s %}{% endfor %}",
	"a\n\n  {{ x | nope }}",     // an unknown filter on line 3
	"a\nb {% frobnicate %}",     // an unknown tag on line 2
	"{% if a %}x",               // a block left open
	"{% endif %}",               // a block closed that is not open
	"{% if t %}",                // open, and closed by nothing
	"{{ s",                      // an object left open
	"}} and %}",                 // what would close one
	"{% if t",                   // a tag left open
	"{% include 'f' %}",         // refused
	"nul \x00 inside {{ s }}",   // parsed on its own
	"{% raw %}{{ s }}",          // raw left open
	"{% comment %}never closed", // a comment left open
	"{% for x in xs %}{{ x }}{% else %}empty{% endfor %}\n{{ xs | size }}",
	"{% case n %}{% when 0 %}zero{% when 1, 2 %}small{% else %}big{% endcase %}",
	"trailing newline\n",
}

// runsOn are the templates of parseAllCorpus that parse alone but run
// into the template after them: a tag, an object, a raw or a comment
// they open and do not close.
var runsOn = map[string]bool{"{{ s": true, "{% if t": true, "{% raw %}{{ s }}": true, "{% comment %}never closed": true}

// outcome is what Parse or ParseAll made of one template: its error, or
// its renders under each bindings.
func outcome(t *testing.T, tm *Template, err error) string {
	t.Helper()
	if err != nil {
		var te *Error
		if !errors.As(err, &te) {
			return "not an *Error: " + err.Error()
		}
		return fmt.Sprintf("error line %d offset %d: %s", te.Line, te.Offset, te.Msg)
	}
	var b strings.Builder
	for _, vars := range []map[string]any{
		{},
		{"s": "Hello", "n": 2, "t": true, "xs": []any{"a", "b"}, "steps": map[string]any{"s0": map[string]any{"summary": "sum"}}},
		{"s": "", "n": 0, "t": false, "xs": []any{}},
	} {
		out, err := tm.Render(context.Background(), vars)
		fmt.Fprintf(&b, "%q %v\n", out, err)
	}
	return b.String()
}

// TestParseAllSameAsParse: for every template of a batch, ParseAll gives
// what Parse gives for it alone (its error with line and offset, or a
// template that renders the same, render errors on the same lines),
// whatever the other templates of the batch and their order.
func TestParseAllSameAsParse(t *testing.T) {
	e := New(Limits{})
	want := map[string]string{}
	for _, src := range parseAllCorpus {
		tm, err := e.Parse(src)
		want[src] = outcome(t, tm, err)
	}
	check := func(t *testing.T, srcs []string) {
		t.Helper()
		ts, errs := e.ParseAll(srcs)
		if len(ts) != len(srcs) || len(errs) != len(srcs) {
			t.Fatalf("%d templates and %d errors for %d sources", len(ts), len(errs), len(srcs))
		}
		for i, src := range srcs {
			if (ts[i] == nil) == (errs[i] == nil) {
				t.Errorf("%q: template %v and error %v: want exactly one", src, ts[i], errs[i])
				continue
			}
			if _, ok := want[src]; !ok {
				tm, err := e.Parse(src)
				want[src] = outcome(t, tm, err)
			}
			if got := outcome(t, ts[i], errs[i]); got != want[src] {
				t.Errorf("%q in a batch of %d:\n got %s\nwant %s", src, len(srcs), got, want[src])
			}
		}
	}
	t.Run("whole corpus", func(t *testing.T) { check(t, parseAllCorpus) })
	t.Run("good ones only", func(t *testing.T) {
		var good []string
		for _, src := range parseAllCorpus {
			if !strings.HasPrefix(want[src], "error") && !strings.Contains(src, "\x00") && !runsOn[src] {
				good = append(good, src)
			}
		}
		if e.compileJoined(good) == nil {
			t.Fatal("the good templates were not parsed in one pass")
		}
		check(t, good)
	})
	t.Run("pairs", func(t *testing.T) {
		for _, a := range parseAllCorpus {
			for _, b := range parseAllCorpus {
				check(t, []string{a, b})
			}
		}
	})
	t.Run("shuffled", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			srcs := append([]string(nil), parseAllCorpus...)
			r.Shuffle(len(srcs), func(i, j int) { srcs[i], srcs[j] = srcs[j], srcs[i] })
			check(t, srcs[:1+r.IntN(len(srcs))])
		}
	})
	t.Run("left open", func(t *testing.T) {
		for src := range runsOn {
			if e.compileJoined([]string{src, "x }} %} {% endraw %} {% endcomment %}"}) != nil {
				t.Errorf("%q split from the template it runs into", src)
			}
			check(t, []string{src, "x }} %} {% endraw %} {% endcomment %}"})
		}
	})
	t.Run("none and one", func(t *testing.T) {
		check(t, nil)
		check(t, []string{"{{ s }}"})
	})
}

// TestParseAllOnePass: a batch of good templates is parsed in one
// library parse, taken apart into as many templates.
func TestParseAllOnePass(t *testing.T) {
	e := New(Limits{})
	srcs := []string{"a {{ s }}", "", "{% if t %}\nx{% endif %}", "b\n"}
	roots := e.compileJoined(srcs)
	if len(roots) != len(srcs) {
		t.Fatalf("%d roots for %d templates", len(roots), len(srcs))
	}
	// Each template's nodes are on its own lines: its first on line 1.
	for j, root := range roots {
		seq := root.(*render.SeqNode)
		if len(seq.Children) == 0 {
			continue
		}
		if loc := seq.Children[0].SourceLocation(); loc.LineNo != 1 {
			t.Errorf("template %d starts on line %d, want 1", j, loc.LineNo)
		}
	}
	// A block left open runs into the next template: no split.
	if roots := e.compileJoined([]string{"{% if t %}", "{% endif %}"}); roots != nil {
		t.Errorf("an if closed by the next template split into %d", len(roots))
	}
	if roots := e.compileJoined([]string{"{% if t", "%}{% endif %}"}); roots != nil {
		t.Errorf("a tag closed by the next template split into %d", len(roots))
	}
}

// BenchmarkParseAll parses the 100 prompt templates of the benchmarks'
// pipeline ({{ steps.sN.summary }}) one by one and in one ParseAll.
func BenchmarkParseAll(b *testing.B) {
	srcs := make([]string, 100)
	for i := range srcs {
		srcs[i] = fmt.Sprintf("{{ steps.s%d.summary }}", i)
	}
	e := New(Limits{})
	b.Run("Parse", func(b *testing.B) {
		for b.Loop() {
			for _, src := range srcs {
				if _, err := e.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("ParseAll", func(b *testing.B) {
		for b.Loop() {
			if _, errs := e.ParseAll(srcs); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
	})
}
