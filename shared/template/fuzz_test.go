package template

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fragments are the pieces FuzzRender builds templates from: loops that
// would run forever, values that double, filters that grow, and every way
// a template could try to reach a file, with paths the event chooses.
var fragments = []string{
	"{% for i in (1..2000000000) %}", "{% endfor %}", "{% for x in xs %}", "{% for p in labels %}",
	"{{ summary }}", "{{ x }}", "{{ i }}", "{{ p[0] }}", "{{ labels.service }}", "{{ steps.triage.summary }}",
	"{% assign s = s | append: s %}", "{% assign s = summary %}", "{% capture s %}{{ s }}{{ s }}{% endcapture %}",
	"{{ s | replace: '', s }}", "{{ summary | split: '' | join: summary }}", "{{ xs | concat: xs | uniq }}",
	"{{ (1..2000000000) | join }}", "{% include summary %}", "{% include 'canary.txt' %}", "{% render summary %}",
	"{% if summary contains '$' %}", "{% else %}", "{% endif %}", "{% break %}", "{% continue %}",
	"{% cycle 'a', 'b' %}", "${STEPLINE_FUZZ_SECRET}", "{{ '${STEPLINE_FUZZ_SECRET}' }}", " text ", "\n",
}

// FuzzRender renders random templates over random events and checks what
// the engine guarantees: no file or environment value reaches the output,
// no panic, the output within its cap, the render within its time.
func FuzzRender(f *testing.F) {
	dir := f.TempDir()
	canary := randomHex(f)
	if err := os.WriteFile(filepath.Join(dir, "canary.txt"), []byte("FILE-"+canary), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Chdir(dir)
	f.Setenv("STEPLINE_FUZZ_SECRET", "ENV-"+canary)

	f.Add([]byte{0, 4, 1}, `{"summary": "canary.txt"}`)
	f.Add([]byte{17, 18, 19}, `{"summary": "../../../../proc/self/environ"}`)
	f.Add([]byte{11, 0, 10, 1, 4}, `{"summary": "x"}`)
	f.Add([]byte{11, 0, 12, 1, 13}, `{"summary": "ab"}`)
	f.Add([]byte{14, 15, 16}, `{"summary": "$"}`)
	f.Add([]byte{20, 26, 21, 27, 22}, `{"summary": "cost $"}`)
	f.Add([]byte{2, 4, 24, 1, 3, 8, 1}, `{"summary": "{% include 'canary.txt' %}"}`)
	f.Add([]byte("!{{ summary | nope }}"), `"plain"`)
	f.Add([]byte("!{% for a in (1..100) %}{% for b in (1..100) %}{{ summary }}{% endfor %}{% endfor %}"), `{"summary": "0123456789abcdef"}`)

	e := New(Limits{Iterations: 2000, Output: 64 << 10, Value: 64 << 10, Time: 2 * time.Second})
	f.Fuzz(func(t *testing.T, program []byte, event string) {
		src := build(program)
		tpl, err := e.Parse(src)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("parse error of the wrong type: %T %v", err, err)
			}
			return
		}
		if strings.Contains(src, "{% include") || strings.Contains(src, "{% render") {
			t.Fatalf("parsed a template that includes: %q", src)
		}
		start := time.Now()
		out, _ := tpl.Render(context.Background(), eventBindings(event))
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("render took %v: %q", d, src)
		}
		if len(out) > 64<<10 {
			t.Fatalf("output %d bytes over the cap", len(out))
		}
		if strings.Contains(out, canary) {
			t.Fatalf("a file or environment value reached the output: %q over %q", src, event)
		}
	})
}

// build turns fuzz bytes into a template: "!" starts a literal template,
// anything else picks fragments.
func build(program []byte) string {
	if len(program) > 0 && program[0] == '!' {
		return string(program[1:])
	}
	var b strings.Builder
	for _, c := range program {
		b.WriteString(fragments[int(c)%len(fragments)])
	}
	return b.String()
}

// eventBindings is a step's view of an event: the event's JSON (or its
// text as the summary) with the names templates use.
func eventBindings(event string) map[string]any {
	b := map[string]any{"summary": event, "labels": map[string]any{"service": event}, "xs": []any{event, 1, nil}}
	var v map[string]any
	if json.Unmarshal([]byte(event), &v) == nil {
		for k, x := range v {
			b[k] = x
		}
	}
	b["steps"] = map[string]any{"triage": map[string]any{"summary": b["summary"]}}
	return b
}

func randomHex(tb testing.TB) string {
	var buf [16]byte
	if _, err := rand.Read(buf[:]); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(buf[:])
}

// TestAttackMemory is the attack with the default caps: a loop
// over (1..2000000000) and a doubling value stop with a limit error, in
// well under a second each, without taking 100 MB from the system.
func TestAttackMemory(t *testing.T) {
	e := New(Limits{})
	for _, src := range []string{
		"{% for i in (1..2000000000) %}{{ i }}{% endfor %}",
		"{% assign s = 'x' %}{% for i in (1..2000000000) %}{% assign s = s | append: s %}{% endfor %}",
		"{% assign s = 'x' %}{% for i in (1..2000000000) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}",
		"{{ (1..2000000000) | join }}",
	} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := renderT(t, e, src, nil)
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		if limitOf(err) == nil {
			t.Errorf("%q: err = %v, want a limit error", src, err)
		}
		if d > time.Second {
			t.Errorf("%q: took %v", src, d)
		}
		if grew := int64(after.Sys) - int64(before.Sys); grew > 100<<20 {
			t.Errorf("%q: the process took %d MB more", src, grew>>20)
		}
	}
}
