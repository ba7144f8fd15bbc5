package telegram

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stepline/stepline/internal/lazyregexp"
)

// Escape makes s Telegram HTML text: &, <, > and " become entities, so
// that nothing in s can open a tag or a link.
func Escape(s string) string { return htmlEscaper.Replace(s) }

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// EscapeData returns v with every string in it escaped (maps and slices
// copied, v unchanged): template bindings made of data, so that a
// template renders event and model text as text, never as markup.
func EscapeData(v any) any {
	switch v := v.(type) {
	case string:
		return Escape(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = EscapeData(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = EscapeData(x)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = Escape(x)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = Escape(x)
		}
		return out
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return v
	}
	// Any other value (a struct, a typed slice or map) as the template
	// engine would see it, through JSON, escaped; one that does not encode
	// is text.
	raw, err := json.Marshal(v)
	if err != nil {
		return Escape(fmt.Sprint(v))
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return Escape(string(raw))
	}
	return EscapeData(x)
}

// The tags the Bot API's HTML parse mode knows.
var knownTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
	"del": true, "span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true, "blockquote": true,
	"tg-emoji": true,
}

var (
	openTagRE  = lazyregexp.New(`^<([a-z][a-z-]*)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>`)
	closeTagRE = lazyregexp.New(`^</([a-z][a-z-]*)\s*>`)
	entityRE   = lazyregexp.New(`^&(?:lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});`)
)

// token is a piece of Telegram HTML: text, an entity, or a tag.
type token struct {
	s     string
	open  string // tag name of an opening tag
	close string // tag name of a closing tag
	runes int
}

// tokens reads s as Telegram HTML, making it well formed: a known tag
// stays a tag, anything else that looks like markup (an unknown or
// misplaced tag, a bare & < >) becomes text, and tags still open at the end
// are closed.
func tokens(s string) []token {
	var out []token
	var stack []string
	text := func(t string) { out = append(out, token{s: t, runes: utf8.RuneCountInString(t)}) }
	for len(s) > 0 {
		i := strings.IndexAny(s, "<>&")
		if i < 0 {
			text(s)
			break
		}
		if i > 0 {
			text(s[:i])
			s = s[i:]
		}
		switch s[0] {
		case '&':
			if m := entityRE.FindString(s); m != "" {
				out = append(out, token{s: m, runes: 1})
				s = s[len(m):]
				continue
			}
			out = append(out, token{s: "&amp;", runes: 1})
		case '>':
			out = append(out, token{s: "&gt;", runes: 1})
		case '<':
			if m := openTagRE.FindStringSubmatch(s); m != nil && knownTags[m[1]] {
				out = append(out, token{s: m[0], open: m[1]})
				stack = append(stack, m[1])
				s = s[len(m[0]):]
				continue
			}
			if m := closeTagRE.FindStringSubmatch(s); m != nil && knownTags[m[1]] {
				at := -1
				for j := len(stack) - 1; j >= 0; j-- {
					if stack[j] == m[1] {
						at = j
						break
					}
				}
				if at >= 0 {
					for j := len(stack) - 1; j >= at; j-- {
						out = append(out, token{s: "</" + stack[j] + ">", close: stack[j]})
					}
					stack = stack[:at]
					s = s[len(m[0]):]
					continue
				}
			}
			out = append(out, token{s: "&lt;", runes: 1})
		}
		s = s[1:]
	}
	for j := len(stack) - 1; j >= 0; j-- {
		out = append(out, token{s: "</" + stack[j] + ">", close: stack[j]})
	}
	return out
}

// Sanitize returns s as well-formed Telegram HTML: the tags the Bot API
// knows are kept (and closed when left open), every other <, > and & is
// escaped.
func Sanitize(s string) string {
	var b strings.Builder
	for _, t := range tokens(s) {
		b.WriteString(t.s)
	}
	return b.String()
}

// TruncatedNote ends a message Cut shortened.
const TruncatedNote = "\n\n[truncated]"

// Cut returns s sanitized (see Sanitize) and, when its text is longer than
// max characters, shortened to at most max, ending with TruncatedNote and
// with every tag it keeps closed. Tags and entities are never cut.
func Cut(s string, max int) string {
	ts := tokens(s)
	total := 0
	for _, t := range ts {
		total += utf8.RuneCountInString(t.s)
	}
	var b strings.Builder
	if total <= max {
		for _, t := range ts {
			b.WriteString(t.s)
		}
		return b.String()
	}
	note := utf8.RuneCountInString(TruncatedNote)
	var stack []string
	closers := 0 // runes needed to close the open tags
	used := 0
	for _, t := range ts {
		n := utf8.RuneCountInString(t.s)
		switch {
		case t.open != "":
			c := len(t.open) + 3
			if used+n+closers+c+note > max {
				goto done
			}
			stack = append(stack, t.open)
			closers += c
		case t.close != "":
			// A closing tag's runes are already reserved in closers.
			stack = stack[:len(stack)-1]
			closers -= n
		default:
			room := max - used - closers - note
			if n > room {
				if t.runes == n && room > 0 { // plain text: cut on a rune
					b.WriteString(string([]rune(t.s)[:room]))
					used += room
				}
				goto done
			}
		}
		b.WriteString(t.s)
		used += n
	}
done:
	for j := len(stack) - 1; j >= 0; j-- {
		b.WriteString("</" + stack[j] + ">")
	}
	b.WriteString(TruncatedNote)
	return b.String()
}
