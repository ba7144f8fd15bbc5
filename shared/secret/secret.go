package secret

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/stepline/stepline/shared/fault"
)

// Resolver returns the value of a named secret.
//
// A secret that does not exist is a *fault.ConfigError naming it; a store
// that cannot be reached is a retryable fault (*fault.ExecutorUnavailable or
// *fault.ExecutorTimeout). No error ever contains a secret value.
type Resolver interface {
	Resolve(ctx context.Context, name string) (string, error)
}

// ResolverFunc adapts a function to a Resolver.
type ResolverFunc func(ctx context.Context, name string) (string, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, name string) (string, error) { return f(ctx, name) }

// Env returns a Resolver over an environment lookup such as os.Getenv. An
// empty value counts as missing: an empty credential is never what a
// pipeline meant.
func Env(getenv func(string) string) Resolver {
	return ResolverFunc(func(_ context.Context, name string) (string, error) {
		if getenv != nil {
			if v := getenv(name); v != "" {
				return v, nil
			}
		}
		return "", Missing(name)
	})
}

// Missing returns the error a Resolver reports for a secret it does not
// hold.
func Missing(name string) error {
	return fault.Errorf[fault.ConfigError]("secret %q is not set", name)
}

// ValidName reports whether name may appear in a ${NAME} reference.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

func nameByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// token is one piece of a scanned string: literal text, or a reference.
type token struct {
	text string // literal text (ref == "")
	ref  string // the NAME of a ${NAME} reference
}

// scan splits s into literal text and references, applying the $$ escape
// (a literal "$"), so "$${X}" is the literal text "${X}".
func scan(s string) []token {
	var out []token
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, token{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		if s[i] != '$' {
			j := strings.IndexByte(s[i:], '$')
			if j < 0 {
				j = len(s) - i
			}
			lit.WriteString(s[i : i+j])
			i += j
			continue
		}
		if strings.HasPrefix(s[i:], "$$") {
			lit.WriteByte('$')
			i += 2
			continue
		}
		if strings.HasPrefix(s[i:], "${") {
			j := i + 2
			for j < len(s) && nameByte(s[j], j == i+2) {
				j++
			}
			if j > i+2 && j < len(s) && s[j] == '}' {
				flush()
				out = append(out, token{ref: s[i+2 : j]})
				i = j + 1
				continue
			}
		}
		lit.WriteByte('$')
		i++
	}
	flush()
	return out
}

// Expand replaces every ${NAME} in s with the value r resolves for NAME.
// The first failed resolution is returned (it names the secret, never a
// value). A string without references is returned as it is, without
// calling r, except that the escape "$$" becomes "$".
func Expand(ctx context.Context, r Resolver, s string) (string, error) {
	if !strings.Contains(s, "${") && !strings.Contains(s, "$$") {
		return s, nil
	}
	toks := scan(s)
	var b strings.Builder
	for _, t := range toks {
		if t.ref == "" {
			b.WriteString(t.text)
			continue
		}
		if r == nil {
			return "", Missing(t.ref)
		}
		v, err := r.Resolve(ctx, t.ref)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// ExpandAll returns a copy of v with Expand applied to every string inside
// it: map values (not keys) and slice elements, at any depth. Supported
// containers are map[string]any, map[string]string, []any and []string;
// other values are returned unchanged. An error is prefixed with the path of
// the value that failed ("headers.Authorization").
func ExpandAll(ctx context.Context, r Resolver, v any) (any, error) {
	return expandAll(ctx, r, v, "")
}

func expandAll(ctx context.Context, r Resolver, v any, path string) (any, error) {
	wrap := func(err error) error {
		if path == "" {
			return err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	switch x := v.(type) {
	case string:
		s, err := Expand(ctx, r, x)
		if err != nil {
			return nil, wrap(err)
		}
		return s, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e, err := expandAll(ctx, r, x[k], join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case map[string]string:
		out := make(map[string]string, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, err := Expand(ctx, r, x[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", join(path, k), err)
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := expandAll(ctx, r, e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			s, err := Expand(ctx, r, e)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", path, i, err)
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IsRef reports whether s is exactly one ${NAME} reference.
func IsRef(s string) bool {
	return len(s) > 3 && strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && ValidName(s[2:len(s)-1])
}

// CheckRefs returns an error for the first "${" in s that Expand would
// not read as a reference, and so would keep as text: one not closed with
// "}", or whose name is not letters, digits and _ (ValidName). "$${" is
// the escape of a literal "${", not a reference. The compiler and the
// project file's reader refuse such a value: it is nearly always a
// mistyped reference.
func CheckRefs(s string) error {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			return nil
		}
		i += j
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return fmt.Errorf("placeholder %q is not closed with }", s[i:])
			}
			ref := s[i : i+end+1]
			if !ValidName(ref[2:end]) {
				return fmt.Errorf("placeholder %q: a secret name holds letters, digits and _", ref)
			}
			i += end + 1
		default:
			i++
		}
	}
	return nil
}

// MapRefs returns s as Expand reads it, with each ${NAME} reference
// replaced by f(NAME) and the "$$" escapes resolved. A renderer uses it to
// mark the references a template itself wrote before rendering, so that
// only those are references afterwards (see Escape).
func MapRefs(s string, f func(name string) string) string {
	if !strings.Contains(s, "${") && !strings.Contains(s, "$$") {
		return s
	}
	var b strings.Builder
	for _, t := range scan(s) {
		if t.ref == "" {
			b.WriteString(t.text)
		} else {
			b.WriteString(f(t.ref))
		}
	}
	return b.String()
}

// Names returns the distinct secret names referenced in s, in order of
// first appearance. The compiler uses it to list what a pipeline needs.
func Names(s string) []string {
	if !strings.Contains(s, "${") {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, t := range scan(s) {
		if t.ref != "" && !seen[t.ref] {
			seen[t.ref] = true
			names = append(names, t.ref)
		}
	}
	return names
}

// Escape returns s with every "$" written as "$$", so that Expand gives s
// back unchanged instead of resolving references inside it. Apply it to
// untrusted text rendered into a value that is expanded later. Escaping
// every "$", not only those of "${", is what keeps text and references
// apart when they meet: untrusted "cost $" followed by a reference the
// template wrote, "${TOKEN}", is "cost $$${TOKEN}", which still expands
// the reference ("$${TOKEN}" would have been a literal).
func Escape(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return strings.ReplaceAll(s, "$", "$$")
}
