package llmoutput

import (
	"strings"
	"unicode/utf8"
)

// stripEdges removes whitespace, byte-order marks, zero-width characters
// and ANSI escape sequences from both ends of s. It reports whether
// anything besides whitespace went.
func stripEdges(s string) (string, bool) {
	noise := false
	for {
		t := strings.TrimSpace(s)
		changed := len(t) != len(s)
		s = t
		if n := leadingNoise(s); n > 0 {
			s, noise, changed = s[n:], true, true
		}
		if n := trailingNoise(s); n > 0 {
			s, noise, changed = s[:len(s)-n], true, true
		}
		if !changed {
			return s, noise
		}
	}
}

func isInvisible(r rune) bool {
	switch r {
	case '\uFEFF', '\u200B', '\u200C', '\u200D', '\u2060':
		return true
	}
	return false
}

// leadingNoise returns the length of one invisible character or ANSI
// escape sequence at the start of s, 0 when there is none.
func leadingNoise(s string) int {
	if s == "" {
		return 0
	}
	if s[0] == 0x1b {
		return ansiLen(s)
	}
	r, n := utf8.DecodeRuneInString(s)
	if isInvisible(r) {
		return n
	}
	return 0
}

// trailingNoise is leadingNoise at the end of s. ANSI sequences end in a
// letter, so the tail is matched backwards from the last ESC.
func trailingNoise(s string) int {
	if s == "" {
		return 0
	}
	r, n := utf8.DecodeLastRuneInString(s)
	if isInvisible(r) {
		return n
	}
	tail := max(len(s)-32, 0)
	if esc := strings.LastIndexByte(s[tail:], 0x1b); esc >= 0 {
		esc += tail
		if ansiLen(s[esc:]) == len(s)-esc {
			return len(s) - esc
		}
	}
	return 0
}

// ansiLen returns the length of the ANSI escape sequence starting s
// (CSI "ESC [ params final", or ESC and one letter, digit, = or >), 1 for
// a lone ESC. JSON punctuation after an ESC is never taken with it.
func ansiLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	if c := s[1]; c != '[' {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '=' || c == '>' {
			return 2
		}
		return 1
	}
	for i := 2; i < len(s) && i < 64; i++ {
		if c := s[i]; c >= 0x40 && c <= 0x7e {
			return i + 1
		}
	}
	return 1
}

// stripThink removes the reasoning blocks some models put before their
// answer: leading <think>…</think> or <thinking>…</thinking> blocks, and
// everything up to a closing tag whose opening tag the chat template
// emitted (the reply then starts inside the block). unclosed reports a
// reply that ended inside a block.
func stripThink(s string) (rest string, stripped, unclosed bool) {
	for {
		open, close := thinkTags(s)
		if open == "" {
			break
		}
		end := indexFold(s[len(open):], close)
		if end < 0 {
			return "", true, true
		}
		s = strings.TrimSpace(s[len(open)+end+len(close):])
		stripped = true
	}
	if stripped {
		return s, true, false
	}
	// A closing tag with no opening tag: the block started in the prompt,
	// so the reply starts inside it. Only prose can precede the tag, and
	// the tag must stand apart (a tag inside a JSON string is content).
	if s == "" || s[0] == '{' || s[0] == '[' || s[0] == '"' || s[0] == '`' {
		return s, false, false
	}
	for _, close := range [...]string{"</think>", "</thinking>"} {
		i := indexFold(s, close)
		if i > 0 && isSpace(s[i-1]) && indexFold(s[:i], close[:1]+close[2:]) < 0 {
			return strings.TrimSpace(s[i+len(close):]), true, false
		}
	}
	return s, false, false
}

func thinkTags(s string) (string, string) {
	for _, t := range [...]string{"<thinking>", "<think>"} {
		if len(s) >= len(t) && strings.EqualFold(s[:len(t)], t) {
			return t, "</" + t[1:]
		}
	}
	return "", ""
}

// indexFold is strings.Index ignoring ASCII case, for short tags.
func indexFold(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+n <= len(s) && strings.EqualFold(s[i:i+n], sub) {
			return i
		}
	}
	return -1
}

// fence is one fenced code block: the opening line starts at open, the
// content is text[start:end], the closing line ends at close (len(text)
// when the block is unclosed).
type fence struct {
	open, start, end, close int
	closed                  bool
}

// findFences returns the fenced blocks of text (``` or ~~~, three or more,
// any info string, up to three spaces of indent), in one pass over lines.
func findFences(text string) []fence {
	var out []fence
	var cur *fence
	var mark byte
	var width int
	for ls := 0; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		next := len(text)
		if le >= 0 {
			le += ls
			next = le + 1
		} else {
			le = len(text)
		}
		line := text[ls:le]
		ind := 0
		for ind < len(line) && ind < 3 && line[ind] == ' ' {
			ind++
		}
		line = line[ind:]
		if len(line) >= 3 && (line[0] == '`' || line[0] == '~') {
			c := line[0]
			n := 0
			for n < len(line) && line[n] == c {
				n++
			}
			if n >= 3 {
				switch {
				case cur == nil:
					out = append(out, fence{open: ls, start: next, end: len(text), close: len(text)})
					cur, mark, width = &out[len(out)-1], c, n
				case c == mark && n >= width && strings.TrimSpace(line[n:]) == "":
					cur.end, cur.close, cur.closed = ls, next, true
					cur = nil
				}
			}
		}
		ls = next
	}
	return out
}

// span is a balanced {…} or […] region of text: text[start:end].
type span struct{ start, end int }

// scanResult is what one scan of a text found.
type scanResult struct {
	spans     []span
	truncated bool // the text ends inside an opened JSON value
	tooDeep   bool // brackets nest deeper than the limit
}

// scan finds the balanced {…} and […] regions of text[lo:hi] that no
// other region encloses, in one string-aware pass. Quotes open a string
// only where a JSON token may start (after { [ , : or a comment), so
// apostrophes and quotes in prose do not derail it. When the text ends
// with brackets open, an opener that looks like the start of JSON marks
// the text truncated; one that does not (a stray brace in prose) is
// skipped and the scan goes on after it.
func scan(text string, lo, hi, maxDepth int) scanResult {
	var res scanResult
	stack := make([]int, 0, 16)
	for restarts := 0; ; restarts++ {
		stack = stack[:0]
		i := lo
		var last byte
		for i < hi {
			if len(stack) == 0 {
				k := strings.IndexAny(text[i:hi], "{[")
				if k < 0 {
					i = hi
					break
				}
				i += k
				stack = append(stack, i)
				last = text[i]
				i++
				continue
			}
			c := text[i]
			switch c {
			case ' ', '\t', '\n', '\r':
				i++
				continue
			case '"', '\'':
				if last == '{' || last == '[' || last == ',' || last == ':' || last == '/' {
					i, _ = skipString(text, i, hi)
					last = c
					continue
				}
			case '/':
				if i+1 < hi && text[i+1] == '/' {
					nl := strings.IndexByte(text[i:hi], '\n')
					if nl < 0 {
						i = hi
					} else {
						i += nl + 1
					}
					last = '/'
					continue
				}
				if i+1 < hi && text[i+1] == '*' {
					cl := strings.Index(text[i+2:hi], "*/")
					if cl < 0 {
						i = hi
					} else {
						i += 2 + cl + 2
					}
					last = '/'
					continue
				}
			case '{', '[':
				if len(stack) >= maxDepth {
					res.tooDeep = true
					return res
				}
				stack = append(stack, i)
			case '}', ']':
				open := byte('{')
				if c == ']' {
					open = '['
				}
				for d := len(stack) - 1; d >= 0; d-- {
					if text[stack[d]] == open {
						start := stack[d]
						stack = stack[:d]
						if d == 0 {
							res.spans = append(res.spans, span{start, i + 1})
						}
						break
					}
				}
			}
			last = c
			i++
		}
		if len(stack) == 0 {
			return res
		}
		p := stack[0]
		if looksLikeJSON(text, p, hi) {
			res.truncated = true
			return res
		}
		if restarts == 16 {
			return res
		}
		lo = p + 1
	}
}

// skipString returns the index after the string that opens at text[i]
// and true, or hi and false when the string does not close.
func skipString(text string, i, hi int) (int, bool) {
	q := text[i]
	j := i + 1
	for {
		k := strings.IndexByte(text[j:hi], q)
		if k < 0 {
			return hi, false
		}
		e := j + k
		n := 0
		for b := e - 1; b > i && text[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return e + 1, true
		}
		j = e + 1
	}
}

// looksLikeJSON reports whether the bracket at text[p] opens JSON rather
// than prose: { followed by a quote, a closing brace, or an identifier and
// a colon; [ followed by another bracket. The end of the text counts as
// JSON, since a cut reply may stop anywhere.
func looksLikeJSON(text string, p, hi int) bool {
	i := skipBlank(text, p+1, hi)
	if i >= hi {
		return true
	}
	c := text[i]
	if text[p] == '[' {
		return c == '{' || c == '['
	}
	switch {
	case c == '"' || c == '\'' || c == '}':
		return true
	case c == '/' && i+1 >= hi: // a comment cut after its first slash
		return true
	case isIdentStart(c):
		for i < hi && isIdentPart(text[i]) {
			i++
		}
		for i < hi && isSpace(text[i]) {
			i++
		}
		return i >= hi || text[i] == ':'
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipBlank skips whitespace and comments from i; an unclosed comment runs
// to hi.
func skipBlank(text string, i, hi int) int {
	for i < hi {
		switch {
		case isSpace(text[i]):
			i++
		case strings.HasPrefix(text[i:hi], "//"):
			nl := strings.IndexByte(text[i:hi], '\n')
			if nl < 0 {
				return hi
			}
			i += nl + 1
		case strings.HasPrefix(text[i:hi], "/*"):
			cl := strings.Index(text[i+2:hi], "*/")
			if cl < 0 {
				return hi
			}
			i += 2 + cl + 2
		default:
			return i
		}
	}
	return i
}
