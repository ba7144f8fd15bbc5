package jsonstr

import "testing"

// TestOutside reads the bytes outside strings: escaped quotes and
// backslashes keep a string open, an escaped backslash before a quote
// does not, and the caller may stop early.
func TestOutside(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a": [1, "b"]}`, `{: [1, ]}`},
		{`"x\"y" 2`, ` 2`},
		{`"x\\" 3`, ` 3`},
		{`["\\\"]"]`, `[]`},
		{`[1, "open`, `[1, `},
		{``, ``},
	} {
		var got []byte
		last := -1
		for i, b := range Outside([]byte(c.in)) {
			if i <= last || c.in[i] != b {
				t.Errorf("%q: byte %q at %d after %d", c.in, b, i, last)
			}
			last = i
			got = append(got, b)
		}
		if string(got) != c.want {
			t.Errorf("Outside(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	n := 0
	for range Outside([]byte(`[1,2,3]`)) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("stopped after %d bytes, want 2", n)
	}
}
