package local

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSameContent(t *testing.T) {
	dir := t.TempDir()
	const chunk = 32 << 10
	data := func(n int) []byte { return bytes.Repeat([]byte("abcdefg"), n/7+1)[:n] }
	changed := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	cases := []struct {
		name string
		file []byte // nil: no file
		data []byte
		want bool
	}{
		{"empty", []byte{}, []byte{}, true},
		{"equal", data(100), data(100), true},
		{"a chunk", data(chunk), data(chunk), true},
		{"a chunk and a byte", data(chunk + 1), data(chunk + 1), true},
		{"two chunks", data(2 * chunk), data(2 * chunk), true},
		{"first byte differs", data(100), changed(data(100), 0), false},
		{"last byte differs", data(100), changed(data(100), 99), false},
		{"differs in the second chunk", data(chunk + 10), changed(data(chunk+10), chunk+3), false},
		{"last byte of a chunk differs", data(chunk), changed(data(chunk), chunk-1), false},
		{"file a byte shorter", data(99), data(100), false},
		{"file a byte longer", data(101), data(100), false},
		{"file a chunk longer", data(2 * chunk), data(chunk), false},
		{"no file", nil, data(10), false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "f"+string(rune('a'+i)))
			if tc.file != nil {
				if err := os.WriteFile(path, tc.file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := sameContent(path, tc.data); got != tc.want {
				t.Errorf("sameContent = %v, want %v", got, tc.want)
			}
		})
	}
}
