package agent

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Pos is a position in a profile or project file. Line and Col are
// 1-based; Line 0 means the file as a whole.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Diagnostic is one problem found in a profile or a project file, printed
// as the compiler prints a pipeline's: file:line:col: [warning: ]message.
type Diagnostic struct {
	Pos     Pos
	Warning bool // it works, but is likely a mistake
	Msg     string
}

func (d Diagnostic) String() string {
	kind := ""
	if d.Warning {
		kind = "warning: "
	}
	if d.Pos.File == "" {
		return kind + d.Msg
	}
	return d.Pos.String() + ": " + kind + d.Msg
}

// Diagnostics is every problem found, in the order Sort puts them.
type Diagnostics []Diagnostic

// Errorf adds an error at pos.
func (ds *Diagnostics) Errorf(pos Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// Warnf adds a warning at pos.
func (ds *Diagnostics) Warnf(pos Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Pos: pos, Warning: true, Msg: fmt.Sprintf(format, args...)})
}

// Sort orders the diagnostics by file, line, column and message and drops
// exact repeats.
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

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return !d.Warning })
}

// Err returns the errors as one error, nil when there are none.
func (ds Diagnostics) Err() error {
	var errs []error
	for _, d := range ds {
		if !d.Warning {
			errs = append(errs, errors.New(d.String()))
		}
	}
	return errors.Join(errs...)
}

func (ds Diagnostics) String() string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to s
// when it is a likely typo (a few edits away, or s is a prefix of it), or
// "".
func DidYouMean(s string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, min(3, len(s)/3))
	for _, c := range candidates {
		d := editDistance(s, c)
		ok := (d <= limit && d < len(s)) || (len(s) >= 3 && strings.HasPrefix(c, s))
		if ok && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
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
