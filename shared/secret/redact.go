package secret

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"sync"

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

// Redact returns s with every remembered value replaced by [Redacted].
func (x *Redactor) Redact(s string) string {
	if x == nil {
		return s
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Redacted)
		}
	}
	return s
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
