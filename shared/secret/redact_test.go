package secret

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// escapeAll writes every character of s as a \uXXXX escape (surrogate
// pairs beyond the BMP), as a JSON encoder that escapes everything would.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// jsonRounds encodes s as the inside of a JSON string n times over, as a
// reply inside a reply inside a response body is.
func jsonRounds(s string, n int) string {
	for i := 0; i < n; i++ {
		b, _ := json.Marshal(s)
		s = string(b[1 : len(b)-1])
	}
	return s
}

// TestRedactEscaped: a value written with JSON escapes, at any depth up to
// MaxEscapeDepth, is scrubbed together with its escapes; JSON text stays
// valid; text without the value is returned as it is.
func TestRedactEscaped(t *testing.T) {
	const key = "sk-live-0123456789"
	const odd = `pä/ss"wörd😀`
	red := NewRedactor(nil)
	red.Add(key, odd)
	oneEscape := `sk-\u006cive-0123456789`
	cases := []struct {
		name  string
		in    string
		want  string // "" when only the absence of the values is checked
		keep  bool   // the text must come back unchanged
		valid bool   // the input is JSON and must stay JSON
	}{
		{name: "plain", in: "key=" + key, want: "key=[REDACTED]"},
		{name: "in a JSON string", in: `{"a":"x ` + key + ` y"}`, want: `{"a":"x [REDACTED] y"}`, valid: true},
		{name: "one letter escaped", in: `{"a":"` + oneEscape + `"}`, want: `{"a":"[REDACTED]"}`, valid: true},
		{name: "upper-case hex", in: `{"a":"sk-\u006Cive-0123456789!"}`, want: `{"a":"[REDACTED]!"}`, valid: true},
		{name: "every character escaped", in: `{"a":"` + escapeAll(key) + `"}`, want: `{"a":"[REDACTED]"}`, valid: true},
		{name: "odd value JSON-escaped", in: `{"a":` + mustMarshal(odd) + `}`, want: `{"a":"[REDACTED]"}`, valid: true},
		{name: "odd value fully escaped", in: `{"a":"` + escapeAll(odd) + `"}`, want: `{"a":"[REDACTED]"}`, valid: true},
		{name: "odd value with escaped slash", in: `{"a":"p\u00e4\/ss\"w\u00f6rd\ud83d\ude00"}`, want: `{"a":"[REDACTED]"}`, valid: true},
		{name: "escaped twice", in: `{"content":"{\"s\":\"` + jsonRounds(oneEscape, 1) + `\"}"}`, want: `{"content":"{\"s\":\"[REDACTED]\"}"}`, valid: true},
		{name: "three rounds", in: jsonRounds(oneEscape, 2)},
		{name: "at the depth bound", in: jsonRounds(oneEscape, MaxEscapeDepth-1)},
		{name: "beyond the depth bound", in: jsonRounds(oneEscape, MaxEscapeDepth), keep: true},
		{name: "two values and text", in: `a ` + key + ` b "` + escapeAll(odd) + `" c \n`, want: `a [REDACTED] b "[REDACTED]" c \n`},
		{name: "repeated", in: key + key + ` ` + oneEscape + oneEscape, want: `[REDACTED][REDACTED] [REDACTED][REDACTED]`},
		{name: "escapes without a value", in: `{"a":"line\nnext \u00e9 \\ \/ \x41 \u12 \ud800 end\"}`, keep: true},
		{name: "a prefix is not the value", in: `sk-\u006cive-012345678`, keep: true},
		{name: "trailing backslash", in: key + `\`, want: `[REDACTED]\`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := red.Redact(c.in)
			switch {
			case c.keep:
				if got != c.in {
					t.Fatalf("Redact(%q) = %q, want it unchanged", c.in, got)
				}
				return
			case c.want != "" && got != c.want:
				t.Errorf("Redact(%q)\n = %q\nwant %q", c.in, got, c.want)
			case !strings.Contains(got, Redacted):
				t.Errorf("Redact(%q) = %q: nothing scrubbed", c.in, got)
			}
			assertScrubbed(t, got, key, odd)
			if c.valid {
				if !json.Valid([]byte(got)) {
					t.Errorf("not JSON any more: %s", got)
				}
				if j := red.RedactJSON(json.RawMessage(c.in)); string(j) != got {
					t.Errorf("RedactJSON = %s, want %s", j, got)
				}
			}
		})
	}
}

// TestRedactOverlapping: values that overlap in a text are replaced as one,
// so no part of either is left.
func TestRedactOverlapping(t *testing.T) {
	red := NewRedactor(nil)
	red.Add("abcdef", "defghi")
	for _, in := range []string{"xabcdefghiy", `xabcdefghiy
`, `xabcdefghiy`} {
		got := red.Redact(in)
		if !strings.HasPrefix(got, "x[REDACTED]y") {
			t.Errorf("Redact(%q) = %q, want x[REDACTED]y...", in, got)
		}
	}
}

// assertScrubbed decodes s up to MaxEscapeDepth rounds and checks that no
// value appears at any of them.
func assertScrubbed(t *testing.T, s string, values ...string) {
	t.Helper()
	for round := 0; round <= MaxEscapeDepth; round++ {
		for _, v := range values {
			if strings.Contains(s, v) {
				t.Fatalf("after %d rounds of decoding, %q still holds a value", round, s)
			}
		}
		s, _ = unescape(s)
	}
}

func mustMarshal(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRedactErrorEscaped: an error quoting an escaped value is scrubbed too.
func TestRedactErrorEscaped(t *testing.T) {
	red := NewRedactor(nil)
	red.Add("tok-9876543210")
	err := red.Error(fmt.Errorf(`HTTP 401: {"error":"bad token tok-98765432\u0031\u0030"}`))
	if strings.Contains(err.Error(), `98765432\u0031`) || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("Error() = %v", err)
	}
}

func BenchmarkRedact(b *testing.B) {
	red := NewRedactor(nil)
	red.Add("sk-live-0123456789", "tok-9876543210")
	reply := strings.Repeat(`{"confidence": 0.9, "summary": "line\nline \u00e9", "next_step_context": "x"} `, 50)
	plain := strings.ReplaceAll(reply, `\`, "/")
	for _, c := range []struct{ name, text string }{{"4KB-escapes", reply}, {"4KB-plain", plain}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = red.Redact(c.text)
			}
		})
	}
}
