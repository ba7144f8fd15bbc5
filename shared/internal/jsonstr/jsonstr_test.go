package jsonstr

import (
	"bytes"
	"encoding/json"
	"math"
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
