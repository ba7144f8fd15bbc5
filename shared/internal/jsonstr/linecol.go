package jsonstr

import (
	"strings"
	"unicode/utf8"
)

// LineCol says where byte offset pos of text is, 1-based: its line and
// its column in characters. An offset past the end is the end; a negative
// one is the start.
func LineCol(text string, pos int) (line, col int) {
	pos = min(max(pos, 0), len(text))
	before := text[:pos]
	lineStart := strings.LastIndexByte(before, '\n') + 1
	return 1 + strings.Count(before, "\n"), utf8.RuneCountInString(before[lineStart:]) + 1
}
