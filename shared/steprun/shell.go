package steprun

import (
	"context"
	"fmt"
	"strings"

	"github.com/stepline/stepline/internal/lazyregexp"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/template"
)

// outputToken finds Liquid's output ({{ }}) and tag ({% %}) tokens
// exactly as the Liquid engine's scanner does (osteele/liquid's
// formTokenMatcher for the default delimiters), so that renderShell marks
// the same outputs the engine renders.
var outputToken = lazyregexp.New(`{{-?\s*(.+?)\s*-?}}|{%-?\s*(\w+)(?:\s+((?:[^%]|%[^}])+?))?\s*-?%}`)

// renderShell renders a shell check's command so that every {{ }} output
// is one shell word, quoted as Python's shlex.quote quotes: whatever a
// value holds (quotes, $, ;, a newline), it reaches the command as data.
// The author's text between outputs is the command's syntax.
//
// Each output tag is wrapped between two markers (variables bound to
// strings that hold a per-process random nonce, which no value can
// guess), rendered, and the text between each pair of markers is then
// quoted as one word; markers that a captured value carries inside
// another output are dropped, so the outer output is quoted whole. A
// rendering whose markers do not pair up (a filter cut one) is refused.
// renderMarked renders src over b with every {{ }} output between two
// markers (strings holding the per-process nonce, which no value can
// guess, and kind's tag and brackets, so that two kinds never share
// them), for the caller to rewrite what each output wrote.
func (r *renderer) renderMarked(ctx context.Context, step, field, src string, b map[string]any, kind, openBracket, closeBracket string) (out, openMark, closeMark string, err error) {
	nonce := strings.Trim(r.open, "\x00")
	openVar, closeVar := "stepline_"+kind+nonce+"_open", "stepline_"+kind+nonce+"_close"
	openMark, closeMark = "\x00"+nonce+openBracket, "\x00"+nonce+closeBracket
	bb := make(map[string]any, len(b)+2)
	for k, v := range b {
		bb[k] = v
	}
	bb[openVar], bb[closeVar] = openMark, closeMark
	out, err = r.render(ctx, step, field, markOutputs(src, openVar, closeVar), bb)
	return out, openMark, closeMark, err
}

func (r *renderer) renderShell(ctx context.Context, step, field, src string, b map[string]any) (string, error) {
	if !template.IsTemplate(src) {
		return src, nil
	}
	out, openMark, closeMark, err := r.renderMarked(ctx, step, field, src, b, "q", "<", ">")
	if err != nil {
		return "", err
	}
	cmd, err := quoteMarked(out, openMark, closeMark)
	if err != nil {
		return "", fault.Errorf[fault.TemplateError]("step %q: %s: %v", step, field, err)
	}
	return cmd, nil
}

// markOutputs rewrites every output tag of src outside {% raw %} and
// {% comment %} as {{ open }}{{ expr }}{{ close }}, keeping its trim
// marks on the outer side.
func markOutputs(src, open, close string) string {
	var b strings.Builder
	inRaw, inComment := false, false
	last := 0
	for _, m := range outputToken.FindAllStringSubmatchIndex(src, -1) {
		tok := src[m[0]:m[1]]
		if strings.HasPrefix(tok, "{%") {
			name := src[m[4]:m[5]]
			switch {
			case inRaw:
				inRaw = name != "endraw"
			case inComment:
				inComment = name != "endcomment"
			case name == "raw":
				inRaw = true
			case name == "comment":
				inComment = true
			}
			continue
		}
		if inRaw || inComment {
			continue
		}
		left, right := "", ""
		if tok[2] == '-' {
			left = "-"
		}
		if tok[len(tok)-3] == '-' {
			right = "-"
		}
		b.WriteString(src[last:m[0]])
		fmt.Fprintf(&b, "{{%s %s }}{{ %s }}{{ %s %s}}", left, open, src[m[2]:m[3]], close, right)
		last = m[1]
	}
	b.WriteString(src[last:])
	return b.String()
}

// quoteMarked quotes the text between each outermost pair of markers as
// one shell word, dropping the markers nested inside it.
func quoteMarked(s, open, close string) (string, error) {
	return rewriteMarked(s, open, close, "the command", func(_, word string) string { return shellQuote(word) })
}

// rewriteMarked replaces the text between each outermost pair of markers
// by f's answer for it (f also sees the output written before it),
// dropping the markers nested inside it. Markers that do not pair up (a
// filter cut one) are an error naming what (the command, the URL).
func rewriteMarked(s, open, close, what string, f func(before, word string) string) (string, error) {
	cut := fmt.Errorf("an output's value was cut inside %s: it cannot be quoted", what)
	var out, word strings.Builder
	depth := 0
	for len(s) > 0 {
		i, j := strings.Index(s, open), strings.Index(s, close)
		next := i
		if next < 0 || (j >= 0 && j < next) {
			next = j
		}
		if next < 0 {
			if depth > 0 {
				return "", cut
			}
			out.WriteString(s)
			break
		}
		if depth == 0 {
			out.WriteString(s[:next])
		} else {
			word.WriteString(s[:next])
		}
		if next == i {
			depth++
			s = s[i+len(open):]
			continue
		}
		if depth == 0 {
			return "", cut
		}
		depth--
		s = s[j+len(close):]
		if depth == 0 {
			out.WriteString(f(out.String(), word.String()))
			word.Reset()
		}
	}
	if depth > 0 {
		return "", cut
	}
	return out.String(), nil
}

// shellSafe matches the words shlex.quote leaves as they are.
var shellSafe = lazyregexp.New(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s as one POSIX shell word, as Python's shlex.quote
// does: unchanged when it holds only safe characters, else in single
// quotes, each ' written '"'"'.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
