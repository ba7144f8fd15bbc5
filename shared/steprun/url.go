package steprun

import (
	"context"
	"net/url"
	"strings"

	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/template"
)

// renderURL renders a URL template (an executor's url or base_url, a
// webhook check's or an on_failure webhook's url) for secret expansion,
// as renderSecretSafe does, and so that a value cannot change the URL's
// structure: every {{ }} output rendered after the URL's scheme and host
// is percent-encoded whole (all but the unreserved A-Z a-z 0-9 - . _ ~),
// so an event's or a model's "../admin", "?all=1" or "#" stays one path
// segment or one query value and cannot move the request to another
// endpoint or cut off the query the pipeline wrote. An output in the
// scheme and host part ("{{ base_url }}/hooks") is pasted as written:
// that is where a pipeline puts a whole base URL, its author's choice. A
// path segment "." or ".." in the result is an error.
func (r *renderer) renderURL(ctx context.Context, step, field, src string, b map[string]any) (string, error) {
	if !template.IsTemplate(src) {
		return src, nil
	}
	masked := secret.MapRefs(src, func(name string) string { return r.open + name + "\x00" })
	out, openMark, closeMark, err := r.renderMarked(ctx, step, field, masked, b, "u", "[", "]")
	if err != nil {
		return "", err
	}
	u, err := rewriteMarked(out, openMark, closeMark, "the URL", func(before, value string) string {
		if inAuthority(before) {
			return value
		}
		return encodeValue(value)
	})
	if err != nil {
		return "", fault.Errorf[fault.TemplateError]("step %q: %s: %v", step, field, err)
	}
	if seg, ok := dotSegment(u); ok {
		return "", fault.Errorf[fault.TemplateError]("step %q: %s: a rendered value makes the path segment %q", step, field, seg)
	}
	return r.unmask(secret.Escape(u)), nil
}

// inAuthority reports whether text written after before is still in a
// URL's scheme and host: no "/", "?" or "#" follows the "://" (or, with
// none, the start).
func inAuthority(before string) bool {
	if i := strings.Index(before, "://"); i >= 0 {
		before = before[i+len("://"):]
	}
	return !strings.ContainsAny(before, "/?#")
}

// encodeValue percent-encodes every byte of s but the unreserved ones
// (RFC 3986: A-Z a-z 0-9 - . _ ~).
func encodeValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// dotSegment returns the first "." or ".." segment of u's path.
func dotSegment(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil {
		return "", false // the request reports a URL that does not parse
	}
	for _, seg := range strings.Split(p.EscapedPath(), "/") {
		if seg == "." || seg == ".." {
			return seg, true
		}
	}
	return "", false
}
