package compiler

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/shared/pipeline"
)

// Diagnostic is one problem found in a pipeline file.
type Diagnostic struct {
	Pos     pipeline.Pos
	Warning bool // the pipeline works, but this is likely a mistake
	Msg     string
}

func (d Diagnostic) String() string {
	kind := ""
	if d.Warning {
		kind = "warning: "
	}
	if !d.Pos.IsValid() && d.Pos.File == "" {
		return kind + d.Msg
	}
	return d.Pos.String() + ": " + kind + d.Msg
}

// Diagnostics is every problem found in one or more files, in the order
// Sort puts them: by file, line, column.
type Diagnostics []Diagnostic

func (ds *Diagnostics) errorf(pos pipeline.Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (ds *Diagnostics) warnf(pos pipeline.Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Pos: pos, Warning: true, Msg: fmt.Sprintf(format, args...)})
}

// Sort orders the diagnostics by position and drops exact repeats.
func (ds Diagnostics) Sort() Diagnostics {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.Compact(ds)
}

// HasErrors reports whether any diagnostic is an error, not a warning.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return !d.Warning })
}

// Errors returns the errors only.
func (ds Diagnostics) Errors() Diagnostics {
	return slices.DeleteFunc(slices.Clone(ds), func(d Diagnostic) bool { return d.Warning })
}

// Warnings returns the warnings only.
func (ds Diagnostics) Warnings() Diagnostics {
	return slices.DeleteFunc(slices.Clone(ds), func(d Diagnostic) bool { return !d.Warning })
}

// Err returns the errors as one error, or nil when there are none.
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &Error{List: errs}
}

func (ds Diagnostics) String() string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Error is the error of a pipeline that does not compile: every error
// diagnostic, sorted.
type Error struct{ List Diagnostics }

func (e *Error) Error() string {
	switch len(e.List) {
	case 0:
		return "no errors"
	case 1:
		return e.List[0].String()
	}
	if len(e.List) == 2 {
		return fmt.Sprintf("%s (and 1 more error)", e.List[0])
	}
	return fmt.Sprintf("%s (and %d more errors)", e.List[0], len(e.List)-1)
}

// AsError extracts the diagnostics of an *Error.
func AsError(err error) (Diagnostics, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.List, true
	}
	return nil, false
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely typo (a few edits, or s is a prefix of it), or "".
func suggest(s string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, min(3, len(s)/3))
	for _, c := range candidates {
		d := editDistance(s, c)
		ok := (d <= limit && d < len(s)) || (len(s) >= 3 && strings.HasPrefix(c, s))
		if ok && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" && m != s {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}

// editDistance is the Levenshtein distance over bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
