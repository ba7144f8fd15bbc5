package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// compactCases are texts AppendCompact must read as encoding/json does.
var compactCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `true`, `false`, `null`,
	" {\n\t\"a\" : [ 1 , 2.0 , \"x y\" ] ,\r\n \"b\":{ } } ",
	`{"confidence":0.9,"summary":"done","next_step_context":"go on"}`,
	`"<a href='x'>&amp;</a>"`, "\"\u2028\u2029\"", "\"\xe2\x80\xa8x\xe2\x80\"", "\"\xff\xfe\"",
	`"\u00e9\n\"\\\/\b\f\r\t"`, `{"a":"\u12"}`, `"\x"`, "\"\x01\"", `"abc`, `{"a" 1}`, `{"a":1,}`, `[1,]`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `tru`, `nul`, `[1 2]`, `{1:2}`, ``, ` `, `1 2`, `[`, `{"a":`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
}

// checkCompact compares AppendCompact with encoding/json on src: with
// html, with what json.Marshal writes for src as a json.RawMessage;
// without, with json.Compact. Both refuse the same texts.
func checkCompact(t *testing.T, src string) {
	t.Helper()
	prefix := []byte("pre:")
	want, err := json.Marshal(json.RawMessage(src))
	got, ok := AppendCompact(bytes.Clone(prefix), []byte(src), true)
	if ok != (err == nil) || !bytes.HasPrefix(got, prefix) || (ok && !bytes.Equal(got[len(prefix):], want)) || (!ok && len(got) != len(prefix)) {
		t.Fatalf("html %q: got %q, %v; json.Marshal %q, %v", src, got, ok, want, err)
	}
	var buf bytes.Buffer
	err = json.Compact(&buf, []byte(src))
	got, ok = AppendCompact(nil, []byte(src), false)
	if ok != (err == nil) || (ok && !bytes.Equal(got, buf.Bytes())) {
		t.Fatalf("plain %q: got %q, %v; json.Compact %q, %v", src, got, ok, buf.Bytes(), err)
	}
}

func TestAppendCompactAsEncodingJSON(t *testing.T) {
	for _, src := range compactCases {
		checkCompact(t, src)
	}
}

// FuzzAppendCompact checks AppendCompact against encoding/json for any
// text.
//
//	go test ./shared/internal/jsonstr -run '^$' -fuzz FuzzAppendCompact -fuzztime 60s
func FuzzAppendCompact(f *testing.F) {
	for _, src := range compactCases {
		if len(src) < 1000 {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src string) { checkCompact(t, src) })
}

func BenchmarkAppendCompact(b *testing.B) {
	src := []byte(`{"confidence":0.9,"next_step_context":"go on","summary":"done with <b>it</b>"}`)
	b.Run("AppendCompact", func(b *testing.B) {
		var dst []byte
		for b.Loop() {
			dst, _ = AppendCompact(dst[:0], src, true)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(json.RawMessage(src))
		}
	})
}
