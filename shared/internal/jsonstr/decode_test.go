package jsonstr

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// sameAsUnmarshal checks Decode against json.Unmarshal into an any: the
// same value, or an error with the same text.
func sameAsUnmarshal(t *testing.T, b []byte) {
	t.Helper()
	var want any
	werr := json.Unmarshal(b, &want)
	got, err := Decode(b)
	if werr != nil || err != nil {
		if werr == nil || err == nil || werr.Error() != err.Error() {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", b, err, werr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, json.Unmarshal's %#v", b, got, want)
	}
}

// decodeCases are texts Decode reads itself and texts it leaves to
// encoding/json.
var decodeCases = []string{
	`{"output":{"confidence":0.9,"summary":"step 1","proceed":true,"next":null},"steps":[1,-2.5,3e2,0,-0,1E-7]}`,
	` { "a" : [ ] , "b" : { } , "a" : "last" } `,
	`"tab\tquote\" slash\/ back\\ \b\f\n\r"`, `"héllo ✓"`, `""`, `[]`, `{}`, `null`, `true`, `false`, `0`, `-0.0`,
	`123456789012345678901234567890`, `1e308`,
	// left to encoding/json
	`"\u00e9\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", "\"a\xc3\"", `1e400`, `-1e400`,
	// errors
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `tru`, `nul`, `[1 2]`,
	`{"a":1}x`, `"unterminated`, "\"ctl\x01\"", `"\x"`, `"\`, `{"a":[}`, `[1]]`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestDecode(t *testing.T) {
	for _, c := range decodeCases {
		sameAsUnmarshal(t, []byte(c))
	}
}

// TestDecodeReadsItself pins what Decode reads without encoding/json:
// nesting up to maxDepth and short escapes, not deeper nesting or a \u
// escape.
func TestDecodeReadsItself(t *testing.T) {
	for _, tc := range []struct {
		text string
		own  bool
	}{
		{strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1), true},
		{strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), false},
		{`"a\nb"`, true},
		{`"a\u0041"`, false},
		{"\"\xff\"", false},
	} {
		d := decoder{b: []byte(tc.text)}
		_, ok := d.value(0)
		if ok != tc.own {
			t.Errorf("%.40q: read itself %v, want %v", tc.text, ok, tc.own)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsUnmarshal(t, b) })
}

// BenchmarkDecode decodes a step's Task result, by Decode and by
// json.Unmarshal.
func BenchmarkDecode(b *testing.B) {
	text := []byte(`{"ExecutedVersion":"$LATEST","Payload":{"output":{"confidence":0.9,"model":"scripted","next_step_context":"","proceed":true,"provider":"scripted","summary":"step 23"},"status":"completed","step":"s23","steps":{"s23":{"confidence":0.9,"model":"scripted","next_step_context":"","proceed":true,"provider":"scripted","summary":"step 23"}},"usage":{"cost_usd":0,"input_tokens":0,"output_tokens":0}},"StatusCode":200}`)
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(text, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
