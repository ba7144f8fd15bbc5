package template

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func renderT(t *testing.T, e *Engine, src string, b map[string]any) (string, error) {
	t.Helper()
	tpl, err := e.Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return tpl.Render(context.Background(), b)
}

func TestParseRefuses(t *testing.T) {
	e := New(Limits{})
	cases := []struct {
		name, src string
		line      int
		offset    int
		msg       string
	}{
		{name: "include a path", src: `{% include "../../../../proc/self/environ" %}`, line: 1, offset: 0,
			msg: "{% include %} is not allowed: templates cannot read files"},
		{name: "include a path the event names", src: "Alert:\n  {% include summary %}", line: 2, offset: 9,
			msg: "{% include %} is not allowed: templates cannot read files"},
		{name: "render", src: `x {% render "snippet" %}`, line: 1, offset: 2,
			msg: "{% render %} is not allowed: templates cannot read files"},
		{name: "include in a branch", src: "{% if a %}\n{% else %}{% include 'f' %}{% endif %}", line: 2, offset: 21,
			msg: "{% include %} is not allowed: templates cannot read files"},
		{name: "tablerow", src: `{% tablerow x in xs %}{{x}}{% endtablerow %}`, line: 1, offset: 0,
			msg: "{% tablerow %} is not available: it writes HTML tables"},
		{name: "unknown tag", src: "a\nb {% frobnicate %}", line: 2, offset: 4, msg: `undefined tag "frobnicate"`},
		{name: "unknown filter", src: "Hello {{ name | upper }}", line: 1, offset: 16, msg: `undefined filter "upper"`},
		{name: "unknown filter after a known one", src: "{{ name | downcase | shout: 2 }}", line: 1, offset: 21, msg: `undefined filter "shout"`},
		{name: "unknown filter on a later line", src: "a\n\n  {{ x | nope }}", line: 3, offset: 12, msg: `undefined filter "nope"`},
		{name: "unknown filter in assign", src: "{% assign y = x | nope %}", line: 1, offset: 18, msg: `undefined filter "nope"`},
		{name: "unknown filter in a loop", src: "{% for i in xs | nope %}{% endfor %}", line: 1, offset: 17, msg: `undefined filter "nope"`},
		{name: "unknown filter in a loop body", src: "{% for i in xs %}\n{{ i | nope }}{% endfor %}", line: 2, offset: 25, msg: `undefined filter "nope"`},
		{name: "unterminated", src: "{% if a %}x", line: 1, offset: 0, msg: `unterminated "if" block`},
		{name: "cols on for", src: "{% for x in xs cols:2 %}{% endfor %}", line: 1, offset: 0, msg: "cols is a tablerow parameter, not one of for"},
		{name: "two elses on for", src: "{% for x in xs %}{% else %}{% else %}{% endfor %}", line: 1, offset: 0, msg: "a for loop takes at most one else"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.Parse(c.src)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Parse: %v, want *Error", err)
			}
			if te.Msg != c.msg || te.Line != c.line || te.Offset != c.offset {
				t.Errorf("got line %d offset %d %q, want line %d offset %d %q", te.Line, te.Offset, te.Msg, c.line, c.offset, c.msg)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	e := New(Limits{})
	for _, src := range []string{
		"plain text",
		"a | b {{ x }} c || d",                 // a pipe outside markup is text
		`{{ "a | nope" | upcase }}`,            // a pipe inside a string is not a filter
		`{{ 'x|nope' }}{{ x | append: "|y" }}`, // both quote kinds
		"{{ steps.triage.services | join: \", \" }}",
		"{% raw %}{{ x | nope }}{% include 'f' %}{% endraw %}", // raw is text
		"{% comment %}{% include 'f' %}{{ x | nope }}{% endcomment %}",
		"{{ x | default: 'n/a' | truncate: 20 | escape }}",
	} {
		if _, err := e.Parse(src); err != nil {
			t.Errorf("Parse(%q): %v", src, err)
		}
	}
}

func TestTags(t *testing.T) {
	e := New(Limits{})
	b := map[string]any{
		"xs":    []any{"a", "b", "c", "d"},
		"m":     map[string]any{"z": 1, "a": 2, "m": 3},
		"empty": []any{},
		"n":     3,
		"t":     true,
		"s":     "str",
	}
	cases := []struct{ name, src, want string }{
		{"for", "{% for x in xs %}{{ x }}{% endfor %}", "abcd"},
		{"for over a range", "{% for i in (2..5) %}{{ i }}{% endfor %}", "2345"},
		{"for over a backward range", "{% for i in (5..2) %}{{ i }}{% else %}e{% endfor %}", ""},
		{"for else on empty", "{% for x in empty %}{{ x }}{% else %}none{% endfor %}", "none"},
		{"for else not taken", "{% for x in xs %}{{ x }}{% else %}none{% endfor %}", "abcd"},
		{"for over nothing", "{% for x in missing %}{{ x }}{% else %}none{% endfor %}", ""},
		{"for over a string", "{% for x in s %}{{ x }}{% endfor %}", ""},
		{"for over a map in key order", "{% for p in m %}{{ p[0] }}={{ p[1] }};{% endfor %}", "a=2;m=3;z=1;"},
		{"limit", "{% for x in xs limit:2 %}{{ x }}{% endfor %}", "ab"},
		{"limit 0", "{% for x in xs limit:0 %}{{ x }}{% endfor %}", ""},
		{"offset", "{% for x in xs offset:3 %}{{ x }}{% endfor %}", "d"},
		{"offset past the end", "{% for x in xs offset:9 %}{{ x }}{% else %}e{% endfor %}", "e"},
		{"reversed", "{% for x in xs reversed %}{{ x }}{% endfor %}", "dcba"},
		{"reversed offset limit", "{% for x in xs reversed offset:1 limit:2 %}{{ x }}{% endfor %}", "cb"},
		{"forloop", "{% for x in xs %}{{ forloop.index }}{{ forloop.index0 }}{{ forloop.rindex }}{{ forloop.rindex0 }}{% if forloop.first %}F{% endif %}{% if forloop.last %}L{% endif %}{{ forloop.length }},{% endfor %}", "1043F4,21324,32214,4310L4,"},
		{"break", "{% for x in xs %}{% if x == 'c' %}{% break %}{% endif %}{{ x }}{% endfor %}", "ab"},
		{"continue", "{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", "acd"},
		{"break in the inner loop only", "{% for i in (1..2) %}{% for x in xs %}{% break %}{% endfor %}{{ i }}{% endfor %}", "12"},
		{"loop variables restored", "{% assign x = 'outer' %}{% for x in xs %}{% endfor %}{{ x }}", "outer"},
		{"cycle", "{% for x in xs %}{% cycle 'o', 'e' %}{% endfor %}", "oeoe"},
		{"cycle groups", "{% for x in xs %}{% cycle 'g1': 'a', 'b', 'c' %}{% endfor %}", "abca"},
		{"if", "{% if t %}y{% endif %}{% if missing %}n{% endif %}", "y"},
		{"if false", "{% if false %}y{% else %}n{% endif %}", "n"},
		{"if zero is true", "{% if 0 %}y{% endif %}", "y"},
		{"if empty string is true", "{% if '' %}y{% endif %}", "y"},
		{"elsif", "{% if n == 1 %}one{% elsif n == 3 %}three{% else %}other{% endif %}", "three"},
		{"unless", "{% unless t %}y{% else %}n{% endunless %}{% unless missing %}u{% endunless %}", "nu"},
		{"case", "{% case n %}{% when 1 %}one{% when 2, 3 %}two or three{% else %}other{% endcase %}", "two or three"},
		{"case else", "{% case s %}{% when 'x' %}x{% else %}other{% endcase %}", "other"},
		{"case without match", "{% case s %}{% when 'x' %}x{% endcase %}", ""},
		{"assign", "{% assign y = s | upcase %}{{ y }}", "STR"},
		{"capture", "{% capture c %}<{{ s }}>{% endcapture %}{{ c }}{{ c }}", "<str><str>"},
		{"comment", "a{% comment %}{{ s }}{% endcomment %}b", "ab"},
		{"raw", "{% raw %}{{ s }}{% endraw %}", "{{ s }}"},
		{"trim", "a  {{- s -}}  b", "astrb"},
		{"filters", "{{ xs | join: '-' }} {{ xs | size }} {{ s | replace: 't', 'T' }} {{ 'a,b' | split: ',' | last }}", "a-b-c-d 4 sTr b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := renderT(t, e, c.src, b)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	e := New(Limits{})
	cases := []struct{ name, src, want string }{
		{"cycle outside a loop", "{% cycle 'a' %}", "line 1: cycle must be within a for loop"},
		{"break outside a loop", "x\n{% break %}", "line 2: break outside a loop"},
		{"offset not a number", "{% for x in xs offset: s %}{% endfor %}", "line 1: loop offset must be an integer"},
		{"limit not a number", "{% for x in xs limit: s %}{% endfor %}", "line 1: loop limit must be an integer"},
		{"filter error", "{{ 1 | divided_by: 0 }}", `line 1: filter "divided_by": division by zero`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderT(t, e, c.src, map[string]any{"xs": []any{1}, "s": "x"})
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestBindingsUnchanged: a render sees a copy; assign and loops do not
// leak into the caller's map, and the budget is not visible.
func TestBindingsUnchanged(t *testing.T) {
	e := New(Limits{})
	b := map[string]any{"x": "1"}
	got, err := renderT(t, e, "{% assign x = '2' %}{% assign y = 3 %}{% for i in (1..2) %}{% endfor %}{{ x }}", b)
	if err != nil || got != "2" {
		t.Fatalf("got %q, %v", got, err)
	}
	if len(b) != 1 || b["x"] != "1" {
		t.Errorf("bindings changed: %v", b)
	}
}

func limitOf(err error) *LimitError {
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

func TestIterationLimit(t *testing.T) {
	e := New(Limits{Iterations: 10})
	cases := []struct {
		name  string
		src   string
		limit bool
	}{
		{"below", "{% for i in (1..9) %}{% endfor %}", false},
		{"at", "{% for i in (1..10) %}{% endfor %}", false},
		{"above", "{% for i in (1..11) %}{% endfor %}", true},
		{"loops together at", "{% for i in (1..5) %}{% endfor %}{% for i in (1..5) %}{% endfor %}", false},
		{"loops together above", "{% for i in (1..5) %}{% endfor %}{% for i in (1..6) %}{% endfor %}", true},
		{"nested at", "{% for i in (1..2) %}{% for j in (1..4) %}{% endfor %}{% endfor %}", false},   // 2 + 8
		{"nested above", "{% for i in (1..3) %}{% for j in (1..3) %}{% endfor %}{% endfor %}", true}, // 3 + 9
		{"huge range", "{% for i in (1..2000000000) %}{% endfor %}", true},
		{"huge range with break", "{% for i in (1..2000000000) %}{% break %}{% endfor %}", false},
		{"continue counts", "{% for i in (1..11) %}{% continue %}{% endfor %}", true},
		{"limit modifier keeps within", "{% for i in (1..2000000000) limit: 10 %}{% endfor %}", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderT(t, e, c.src, nil)
			le := limitOf(err)
			if c.limit != (le != nil) {
				t.Fatalf("err = %v, want limit error: %v", err, c.limit)
			}
			if le != nil && (le.What != "loop iterations" || le.Limit != 10 || err.Error() != "line 1: loops run more than 10 iterations (the template limit)") {
				t.Errorf("err = %q (%+v)", err, le)
			}
		})
	}
}

// TestDefaultIterationLimitStopsQuickly is the attack of the issue: a loop
// over (1..2000000000) stops at the default cap, well within a second, and
// without growing memory.
func TestDefaultIterationLimitStopsQuickly(t *testing.T) {
	e := New(Limits{})
	start := time.Now()
	_, err := renderT(t, e, "{% for i in (1..2000000000) %}x{% endfor %}", nil)
	if le := limitOf(err); le == nil {
		t.Fatalf("err = %v, want a limit error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestOutputLimit(t *testing.T) {
	e := New(Limits{Output: 10})
	cases := []struct {
		name  string
		src   string
		limit bool
	}{
		{"below", "123456789", false},
		{"at", "1234567890", false},
		{"above", "12345678901", true},
		{"value at", "{{ s }}{{ s }}", false},
		{"value above", "{{ s }}{{ s }}x", true},
		{"loop above", "{% for i in (1..2000000000) %}x{% endfor %}", true},
		{"list output above", "{{ xs }}", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := renderT(t, e, c.src, map[string]any{"s": "12345", "xs": []any{"123456", "123456"}})
			le := limitOf(err)
			if c.limit != (le != nil) {
				t.Fatalf("out %q err = %v, want limit error: %v", out, err, c.limit)
			}
			if le != nil && le.What != "output" {
				t.Errorf("err = %v", err)
			}
			if len(out) > 10 {
				t.Errorf("output %d bytes", len(out))
			}
		})
	}
}

func TestValueLimit(t *testing.T) {
	e := New(Limits{Value: 100, Output: 1 << 20})
	s50 := strings.Repeat("x", 50)
	cases := []struct {
		name  string
		src   string
		limit bool
	}{
		{"append at", "{{ s | append: s }}", false},
		{"append above", "{{ s | append: s | append: 'x' }}", true},
		{"assign at", "{% assign y = s | append: s %}", false},
		{"capture at", "{% capture c %}{{ s }}{{ s }}{% endcapture %}", false},
		{"capture above", "{% capture c %}{{ s }}{{ s }}x{% endcapture %}", true},
		{"doubling capture", "{% assign c = 'x' %}{% for i in (1..40) %}{% capture c %}{{ c }}{{ c }}{% endcapture %}{% endfor %}", true},
		{"doubling assign", "{% assign c = 'x' %}{% for i in (1..40) %}{% assign c = c | append: c %}{% endfor %}", true},
		{"range into a filter", "{{ (1..2000000000) | join }}", true},
		{"small range into a filter", "{{ (1..5) | join: '' }}", false},
		{"range assigned", "{% assign r = (1..2000000000) %}", true},
		{"replace that grows", "{{ s | replace: '', s }}", true},
		{"replace within", "{{ s | replace: 'x', 'y' }}", false},
		{"split into many", "{{ s | split: '' | size }}", true},
		{"split into few", "{{ 'a,b' | split: ',' | size }}", false},
		{"join with a long separator", "{{ xs | join: s }}", true},
		{"concat that grows", "{% assign a = xs %}{% for i in (1..10) %}{% assign a = a | concat: a %}{% endfor %}", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderT(t, e, c.src, map[string]any{"s": s50, "xs": []any{"a", "b", "c"}})
			le := limitOf(err)
			if c.limit != (le != nil) {
				t.Fatalf("err = %v, want limit error: %v", err, c.limit)
			}
			if le != nil && (le.What != "value" || le.Limit != 100) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestUniqOverManyLists(t *testing.T) {
	e := New(Limits{})
	xs := make([]any, 10000)
	for i := range xs {
		xs[i] = []any{i}
	}
	start := time.Now()
	_, err := renderT(t, e, "{{ xs | uniq | size }}", map[string]any{"xs": xs})
	if limitOf(err) == nil {
		t.Fatalf("err = %v, want a limit error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	got, err := renderT(t, e, "{{ xs | uniq | size }}", map[string]any{"xs": xs[:100]})
	if err != nil || got != "100" {
		t.Errorf("100 lists: %q, %v", got, err)
	}
}

func TestDeadline(t *testing.T) {
	e := New(Limits{Iterations: 1 << 40})
	tpl, err := e.Parse("{% for i in (1..2000000000) %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tpl.Render(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped after %v", d)
	}
	if !strings.Contains(err.Error(), "rendering stopped") {
		t.Errorf("err = %q", err)
	}

	// Without a context deadline, Limits.Time stops it.
	e = New(Limits{Iterations: 1 << 40, Time: 50 * time.Millisecond})
	tpl, _ = e.Parse("{% for i in (1..2000000000) %}{% endfor %}")
	if _, err = tpl.Render(context.Background(), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the time limit", err)
	}
}

func TestDefaults(t *testing.T) {
	l := New(Limits{}).Limits()
	if l != DefaultLimits() || l.Iterations != 100_000 || l.Output != 2<<20 || l.Value != 2<<20 || l.Time != 10*time.Second {
		t.Errorf("limits = %+v", l)
	}
	if !New(Limits{}).HasFilter("upcase") || New(Limits{}).HasFilter("upper") {
		t.Error("HasFilter")
	}
}

// TestBudgetExpired pins the time cap's comparison: a render may go on
// before its deadline and stops at it and after; a budget without a
// deadline (a tag rendering outside Render) never stops for time.
func TestBudgetExpired(t *testing.T) {
	dl := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	b := &budget{deadline: dl}
	for _, c := range []struct {
		name string
		now  time.Time
		want bool
	}{
		{"below", dl.Add(-time.Nanosecond), false},
		{"at", dl, true},
		{"above", dl.Add(time.Nanosecond), true},
	} {
		if got := b.expired(c.now); got != c.want {
			t.Errorf("%s: expired = %v, want %v", c.name, got, c.want)
		}
	}
	if (&budget{}).expired(dl) {
		t.Error("a budget without a deadline expired")
	}
	// A deadline passed is reported as a context with that timeout would.
	past := &budget{ctx: context.Background(), deadline: time.Now().Add(-time.Second)}
	err := past.alive()
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "rendering stopped: context deadline exceeded" {
		t.Errorf("alive past the deadline = %v", err)
	}
	// The context's own error comes first.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	both := &budget{ctx: ctx, deadline: time.Now().Add(-time.Second)}
	if err := both.alive(); !errors.Is(err, context.Canceled) {
		t.Errorf("alive with a cancelled context = %v, want context.Canceled", err)
	}
	if err := (&budget{ctx: context.Background(), deadline: time.Now().Add(time.Hour)}).alive(); err != nil {
		t.Errorf("alive before the deadline = %v", err)
	}
}

// TestRenderKeepsBindings pins that a render changes none of the bindings
// it is given, with and without tags (a template of output markup only
// hands them to the library as they are), and that the budget is among
// the library's bindings exactly when the template has a tag.
func TestRenderKeepsBindings(t *testing.T) {
	e := New(Limits{})
	for _, c := range []struct {
		src, want string
		tags      bool
	}{
		{"{{ x }}-{{ y.z | upcase }}", "1-AB", false},
		{"{% assign x = 'new' %}{{ x }}", "new", true},
		{"{% capture y %}c{% endcapture %}{{ y }}", "c", true},
		{"{% for i in (1..2) %}{{ i }}{% endfor %}{{ x }}", "121", true},
		{"{%- if x -%}yes{%- endif -%}", "yes", true},
	} {
		tpl, err := e.Parse(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if tpl.tags != c.tags {
			t.Errorf("%s: tags = %v, want %v", c.src, tpl.tags, c.tags)
		}
		b := map[string]any{"x": 1, "y": map[string]any{"z": "ab"}}
		got, err := tpl.Render(context.Background(), b)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.src, got, err, c.want)
		}
		if !reflect.DeepEqual(b, map[string]any{"x": 1, "y": map[string]any{"z": "ab"}}) {
			t.Errorf("%s: bindings changed to %v", c.src, b)
		}
	}
	// ParseAll's templates are told the same.
	ts, _ := e.ParseAll([]string{"{{ x }}", "{% if x %}y{% endif %}"})
	if ts[0] == nil || ts[1] == nil || ts[0].tags || !ts[1].tags {
		t.Errorf("ParseAll tags: %+v", ts)
	}
}

// TestRenderWithoutTagsStops pins that a template of output markup only
// still stops at its caps and at its context's end: its writer holds the
// budget.
func TestRenderWithoutTagsStops(t *testing.T) {
	tpl, err := New(Limits{Output: 8}).Parse("{{ x }}{{ x }}")
	if err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, err := tpl.Render(context.Background(), map[string]any{"x": "12345"}); !errors.As(err, &le) || le.What != "output" {
		t.Errorf("past the output cap: %v", err)
	}
	if out, err := tpl.Render(context.Background(), map[string]any{"x": "1234"}); err != nil || out != "12341234" {
		t.Errorf("at the output cap: %q, %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tpl.Render(ctx, map[string]any{"x": "1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("with a cancelled context: %v", err)
	}
}
