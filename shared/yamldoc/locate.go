package yamldoc

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/internal/lazyregexp"
)

// MaxLocateBytes bounds the source SyntaxError searches: each of its
// probes parses a prefix of the source.
const MaxLocateBytes = 1 << 20

var yamlLineRE = lazyregexp.New(`^yaml: (?:line (\d+): )?(.*)$`)

// Message splits an error of the YAML library into the line it names (1
// when it names none) and its message without the "yaml: line N: "
// prefix.
func Message(err error) (line int, msg string) {
	msg = err.Error()
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line = 1
	if m := yamlLineRE.FindStringSubmatch(strings.SplitN(msg, "\n", 2)[0]); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	return line, msg
}

// SyntaxError positions a syntax error that parsing src gave (Parse's,
// or the YAML library's): the line, column (1-based, in characters) and
// message of an [*Error]. The library names, for most structural errors,
// the line before the start of the block that holds the problem (a key
// indented too deep three lines into a list item names the line above
// the item), so SyntaxError looks for the text that breaks the document:
// the end of the shortest prefix of src that fails with the same
// message. A prefix that stops before that character is valid, or fails
// otherwise, on its unexpected end. The prefix is found by bisection,
// over whole lines first, then over the characters of the line found,
// reading every document of each prefix (the error may lie in a later
// one, see Single).
// When src is larger than MaxLocateBytes, or no prefix fails so, the
// error keeps the library's line, at column 1. An *Error (a bound
// crossed) is returned as it is.
func SyntaxError(src []byte, err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	line, msg := Message(err)
	if _, typed := err.(*yaml.TypeError); !typed {
		if l, c, ok := locate(src, msg); ok {
			return &Error{Line: l, Column: c, Msg: msg}
		}
	}
	return &Error{Line: line, Column: 1, Msg: msg}
}

// locate finds where the syntax error msg arises in src (see SyntaxError).
func locate(src []byte, msg string) (line, col int, ok bool) {
	if len(src) > MaxLocateBytes {
		return 0, 0, false
	}
	fails := func(n int) bool { // the first error in the prefix's documents is msg
		dec := yaml.NewDecoder(bytes.NewReader(src[:n]))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == io.EOF {
				return false
			}
			if err != nil {
				_, m := Message(err)
				return m == msg
			}
		}
	}
	if !fails(len(src)) {
		return 0, 0, false
	}
	starts := []int{0} // the offset of each line
	for i, b := range src {
		if b == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	end := func(i int) int { // the end of line i (0-based), its newline included
		if i+1 < len(starts) {
			return starts[i+1]
		}
		return len(src)
	}
	i := sort.Search(len(starts), func(i int) bool { return fails(end(i)) })
	if i == len(starts) {
		return 0, 0, false
	}
	var cuts []int // the offset after each character of the line
	for o := starts[i]; o < end(i); {
		_, w := utf8.DecodeRune(src[o:])
		o += w
		cuts = append(cuts, o)
	}
	j := sort.Search(len(cuts), func(j int) bool { return fails(cuts[j]) })
	if j == len(cuts) {
		j = 0
	}
	return i + 1, j + 1, true
}

// ParseSingle is Parse for a source that holds one document, as every
// pipeline and library step file does: it also refuses a second document
// (an empty one, as a trailing "---" makes, counts as none) with an
// *Error at its start, or, when the rest of data is not YAML, with the
// YAML library's error (SyntaxError places it). Parse reads only the
// first document, so a second one would go unread. The first document is
// read once; what follows it costs only its own length.
func ParseSingle(data []byte) (*yaml.Node, error) {
	if len(data) > MaxBytes {
		return nil, &Error{Line: 1, Column: 1, Msg: fmt.Sprintf("the document is larger than %d MiB", MaxBytes>>20)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return &yaml.Node{}, nil // no document, as Parse gives it
	} else if err != nil {
		return nil, err
	}
	if err := check(&doc); err != nil {
		return nil, err
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if err == io.EOF {
			return &doc, nil
		}
		if err != nil {
			return nil, err
		}
		if c := next.Content; len(c) > 0 && !(c[0].Kind == yaml.ScalarNode && c[0].Tag == "!!null" && c[0].Value == "") {
			return nil, &Error{Line: next.Line, Column: next.Column, Msg: "a second YAML document starts here: a file holds one document; put the other in a file of its own"}
		}
	}
}
