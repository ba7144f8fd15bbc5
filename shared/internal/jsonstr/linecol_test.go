package jsonstr

import "testing"

// TestLineCol places offsets at a line's start, inside it after a
// character of several bytes, on a newline, and below and above the text.
func TestLineCol(t *testing.T) {
	text := "ab\nçd\n"
	for _, c := range []struct{ pos, line, col int }{
		{-1, 1, 1}, {0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {6, 2, 3}, {7, 3, 1}, {8, 3, 1},
	} {
		if line, col := LineCol(text, c.pos); line != c.line || col != c.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", c.pos, line, col, c.line, c.col)
		}
	}
}
