package secret

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stepline/stepline/shared/fault"
)

// Redacted replaces a secret value in redacted text.
const Redacted = "[REDACTED]"

// MinRedactLen is the shortest value a Redactor scrubs. Shorter values
// cannot be meaningful credentials, and scrubbing them would mangle every
// message they happen to occur in.
const MinRedactLen = 4

// Redactor is a Resolver that remembers every value it resolved, so that
// text built from them can be scrubbed before it is logged, returned in an
// error or stored. Use one per call; it is safe for concurrent use.
type Redactor struct {
	r      Resolver
	mu     sync.Mutex
	values map[string]bool
	forms  []string // every form of every value, longest first
}

// NewRedactor returns a Redactor resolving through r.
func NewRedactor(r Resolver) *Redactor {
	return &Redactor{r: r, values: map[string]bool{}}
}

var _ Resolver = (*Redactor)(nil)

// Resolve resolves name through the underlying Resolver and remembers the
// value.
func (x *Redactor) Resolve(ctx context.Context, name string) (string, error) {
	if x.r == nil {
		return "", Missing(name)
	}
	v, err := x.r.Resolve(ctx, name)
	if err != nil {
		return "", x.Error(err)
	}
	x.Add(v)
	return v, nil
}

// Add remembers values to scrub, besides those resolved through x.
func (x *Redactor) Add(values ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinRedactLen || x.values[v] {
			continue
		}
		x.values[v] = true
		changed = true
	}
	if !changed {
		return
	}
	seen := map[string]bool{}
	x.forms = x.forms[:0]
	for v := range x.values {
		for _, f := range forms(v) {
			if len(f) >= MinRedactLen && !seen[f] {
				seen[f] = true
				x.forms = append(x.forms, f)
			}
		}
	}
	sort.Slice(x.forms, func(i, j int) bool {
		if len(x.forms[i]) != len(x.forms[j]) {
			return len(x.forms[i]) > len(x.forms[j])
		}
		return x.forms[i] < x.forms[j]
	})
}

// forms lists the ways a value may be written in a message: as it is,
// escaped for a URL query or path, and escaped inside a JSON string (by
// encoders that escape HTML characters, and by those that also escape "/").
func forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	if b, err := json.Marshal(v); err == nil && len(b) >= 2 {
		j := string(b[1 : len(b)-1])
		out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
	}
	return out
}

// MaxEscapeDepth is how many rounds of JSON string escaping Redact looks
// through. A model's reply arrives as a JSON string inside the response
// body; the reply may be a JSON string holding the answer, whose reasoning
// may be an object written as a string, whose values are strings: a value
// there is escaped four times in the body.
const MaxEscapeDepth = 4

// Redact returns s with every remembered value replaced by [Redacted]:
// written as it is, escaped for a URL, or escaped inside a JSON string,
// also with \uXXXX escapes for any of its characters and through up to
// [MaxEscapeDepth] rounds of JSON string escaping (a reply inside a
// response body). A value found through escapes is replaced together with
// its escapes, so JSON text stays JSON text; values that overlap are
// replaced as one. A value written some other way (split, encoded, spelled
// out) is beyond a redactor.
func (x *Redactor) Redact(s string) string {
	if x == nil {
		return s
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.forms) == 0 {
		return s
	}
	found := x.find(s)
	if len(found) == 0 {
		return s
	}
	return replaceSpans(s, found)
}

// span is a byte range [lo, hi) of a text.
type span struct{ lo, hi int }

// find returns the spans of s holding a remembered form, as written or
// behind up to MaxEscapeDepth rounds of JSON string escapes. Each round
// decodes the text once more; to maps the decoded text's bytes back to s,
// so only the current round's text and map are kept. x.mu is held.
func (x *Redactor) find(s string) []span {
	out := x.appendForms(nil, s, nil, len(s))
	cur, to := s, []int32(nil) // to == nil: cur is s
	for depth := 0; depth < MaxEscapeDepth && strings.IndexByte(cur, '\\') >= 0; depth++ {
		view, from := unescape(cur)
		if to != nil {
			for i, f := range from {
				from[i] = to[f]
			}
		}
		cur, to = view, from
		out = x.appendForms(out, cur, to, len(s))
	}
	return out
}

// appendForms appends the spans of s (of length n) where text, mapped to
// it by to, holds a remembered form.
func (x *Redactor) appendForms(out []span, text string, to []int32, n int) []span {
	for _, f := range x.forms {
		for i := 0; ; {
			j := strings.Index(text[i:], f)
			if j < 0 {
				break
			}
			lo, hi := i+j, i+j+len(f)
			if to == nil {
				out = append(out, span{lo, hi})
			} else {
				out = append(out, span{int(to[lo]), sourceEnd(to, hi, n)})
			}
			i = hi
		}
	}
	return out
}

// unescape decodes the JSON string escapes in s wherever they are (\",
// \\, \/, \', \b, \f, \n, \r, \t, \uXXXX with surrogate pairs: the
// escapes the LLMOutput parser reads), keeping anything else as it is. It
// returns the decoded text and, for each of its bytes, the offset in s of
// the character or escape it came from.
func unescape(s string) (string, []int32) {
	view := make([]byte, 0, len(s))
	from := make([]int32, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			view, from = append(view, c), append(from, int32(i))
			i++
			continue
		}
		n, adv := byte(0), 2
		switch e := s[i+1]; e {
		case '"', '\\', '/', '\'':
			n = e
		case 'b':
			n = '\b'
		case 'f':
			n = '\f'
		case 'n':
			n = '\n'
		case 'r':
			n = '\r'
		case 't':
			n = '\t'
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				break
			}
			adv = 6
			if utf16.IsSurrogate(r) {
				r2, ok := hex4(s, i+8)
				if d := utf16.DecodeRune(r, r2); ok && i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' && d != utf8.RuneError {
					r, adv = d, 12
				} else {
					r = utf8.RuneError
				}
			}
			var enc [utf8.UTFMax]byte
			for _, b := range enc[:utf8.EncodeRune(enc[:], r)] {
				view, from = append(view, b), append(from, int32(i))
			}
			i += adv
			continue
		}
		if n == 0 {
			view, from = append(view, c), append(from, int32(i))
			i++
			continue
		}
		view, from = append(view, n), append(from, int32(i))
		i += adv
	}
	return string(view), from
}

// sourceEnd is the end in the source of view[:hi]: where the source of
// the next character starts (several view bytes share the source of one
// \uXXXX escape).
func sourceEnd(from []int32, hi, n int) int {
	for k := hi; k < len(from); k++ {
		if from[k] != from[hi-1] {
			return int(from[k])
		}
	}
	return n
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// replaceSpans replaces each span of s, overlapping ones merged, with
// Redacted.
func replaceSpans(s string, spans []span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for i := 0; i < len(spans); {
		lo, hi := spans[i].lo, spans[i].hi
		for i++; i < len(spans) && spans[i].lo < hi; i++ {
			hi = max(hi, spans[i].hi)
		}
		b.WriteString(s[at:lo])
		b.WriteString(Redacted)
		at = hi
	}
	b.WriteString(s[at:])
	return b.String()
}

// RedactJSON returns raw with remembered values scrubbed. When scrubbing
// breaks the JSON (a value that was a bare number), the scrubbed text is
// returned as a JSON string instead.
func (x *Redactor) RedactJSON(raw json.RawMessage) json.RawMessage {
	if x == nil || len(raw) == 0 {
		return raw
	}
	s := x.Redact(string(raw))
	if s == string(raw) {
		return raw
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// Error returns err with its message scrubbed. A fault keeps its type (and
// a RateLimited its RetryAfter) so Retry and Catch still match it; any
// other error keeps its chain for errors.Is.
func (x *Redactor) Error(err error) error {
	if x == nil || err == nil {
		return err
	}
	msg := err.Error()
	red := x.Redact(msg)
	if red == msg {
		return err
	}
	return fault.Surface(&redactedError{msg: red, err: err})
}

// redactedError carries a scrubbed message over the original chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
