package jsonstr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

var cases = []string{
	"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\b\f\x00\x1f\x7f",
	"<a href='x'>&amp;</a>", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf8", "\xed\xa0\x80",
}

// With html set, the output is encoding/json's, byte for byte.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := Append(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("Append(%q, html) = %s, want %s", s, got, want)
		}
	}
}

// Without html, '<', '>' and '&' stay as they are and the text still
// decodes to the same string encoding/json reads.
func TestAppendPlain(t *testing.T) {
	for _, s := range cases {
		got := Append([]byte("x"), s, false)
		if got[0] != 'x' {
			t.Fatalf("dst prefix lost: %s", got)
		}
		var back, ref string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatalf("Append(%q) = %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		_ = json.Unmarshal(want, &ref)
		if back != ref {
			t.Errorf("Append(%q) decodes to %q, want %q", s, back, ref)
		}
		if bytes.Contains(got, []byte(`\u003c`)) || bytes.Contains(got, []byte(`\u0026`)) {
			t.Errorf("Append(%q, plain) escapes HTML: %s", s, got)
		}
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := Append(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q, html) = %s, want %s", s, got, want)
		}
		var back, ref string
		if err := json.Unmarshal(Append(nil, s, false), &back); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(want, &ref)
		if back != ref {
			t.Fatalf("Append(%q, plain) decodes to %q, want %q", s, back, ref)
		}
	})
}

// TestAppendFloatAsEncodingJSON compares AppendFloat with json.Marshal
// on both sides of each boundary of its format: 1e-6, 1e21, a one- and a
// two-digit negative exponent, zero and its sign, the extremes.
func TestAppendFloatAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 123456.789,
		1e-6, math.Nextafter(1e-6, 0), 1e-7, 9.99e-10, 1e-10, 1.5e-300, 5e-324,
		1e20, math.Nextafter(1e21, 0), 1e21, 1.25e22, -1e21, math.MaxFloat64, -math.SmallestNonzeroFloat64} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat([]byte("x"), f); string(got) != "x"+string(want) {
			t.Errorf("AppendFloat(%v) = %s, encoding/json %s", f, got[1:], want)
		}
	}
}

// TestAppendValueAsEncodingJSON compares AppendValue with encoding/json
// (HTML escaping on and off) on every kind of decoded value, nested, with
// nil maps and slices; and checks that other types and non-finite numbers
// go to other, whose error ends the encoding.
func TestAppendValueAsEncodingJSON(t *testing.T) {
	v := map[string]any{"z": []any{1.5, "a<b>&", nil, true, map[string]any{}, []any{}},
		"a": map[string]any{"k": 1e-7, "nil-map": map[string]any(nil), "nil-slice": []any(nil)}, "m": "\u2028"}
	for _, html := range []bool{false, true} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		got, err := AppendValue(nil, v, html, func([]byte, any) ([]byte, error) { return nil, errors.New("called") })
		if err != nil || string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("html %v: %s (%v), encoding/json %s", html, got, err, want.String())
		}
	}
	for _, odd := range []any{math.NaN(), math.Inf(-1), 3, struct{}{}} {
		var seen any
		_, err := AppendValue([]byte("x"), []any{"a", odd}, false, func(b []byte, v any) ([]byte, error) {
			seen = v
			return nil, errors.New("refused")
		})
		if err == nil || err.Error() != "refused" || fmt.Sprint(seen) != fmt.Sprint(odd) {
			t.Errorf("%#v: other saw %#v, error %v", odd, seen, err)
		}
	}
}

// BenchmarkAppend writes a string with nothing to escape, as most of an
// event's strings are.
func BenchmarkAppend(b *testing.B) {
	s := "step 23: the service answered with a summary of what it saw, and nothing needs escaping here at all"
	dst := make([]byte, 0, 256)
	for b.Loop() {
		dst = Append(dst[:0], s, true)
	}
}
