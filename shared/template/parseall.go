package template

import (
	"strings"

	"github.com/osteele/liquid/parser"
	"github.com/osteele/liquid/render"
)

// batchSeparator stands between two templates ParseAll parses in one
// pass. It is text to the library's scanner, and no template holds a NUL
// (ParseAll parses one that does on its own).
const batchSeparator = "\x00"

// ParseAll parses every one of srcs and returns, for each, what Parse
// returns for it: its template, or its error.
//
// The library compiles its scanner's regular expression at every parse
// (about 60 µs, most of the cost of a short template's parse), and has
// no way to parse without it. ParseAll hands it srcs joined by a NUL in
// one parse and takes the result apart at the NULs: each template then
// holds the nodes of its own text, with the lines of its own text. Where
// that cannot be done exactly, it parses that template on its own, as
// Parse: when one holds a NUL, when the joined parse fails (one template
// has an error), or when a NUL did not land in top-level text (a tag, an
// object or a block left open runs into the next template).
func (e *Engine) ParseAll(srcs []string) ([]*Template, []error) {
	ts := make([]*Template, len(srcs))
	errs := make([]error, len(srcs))
	alone := func(i int) {
		t, err := e.Parse(srcs[i])
		if err != nil {
			errs[i] = err
			return
		}
		ts[i] = t
	}
	var batch []int // the indexes of srcs parsed together
	for i, src := range srcs {
		if strings.Contains(src, batchSeparator) {
			alone(i)
			continue
		}
		batch = append(batch, i)
	}
	if len(batch) < 2 {
		for _, i := range batch {
			alone(i)
		}
		return ts, errs
	}
	texts := make([]string, len(batch))
	for j, i := range batch {
		texts[j] = srcs[i]
	}
	roots := e.compileJoined(texts)
	for j, i := range batch {
		if roots == nil {
			alone(i)
			continue
		}
		if err := e.checkFilters(srcs[i], roots[j]); err != nil {
			errs[i] = err
			continue
		}
		ts[i] = e.template(srcs[i], roots[j])
	}
	return ts, errs
}

// compileJoined compiles texts joined by batchSeparator in one library
// parse and splits the result into one root per text, each text's nodes
// on its own lines; nil when the joined text does not compile or does not
// split into len(texts) parts at top-level text.
func (e *Engine) compileJoined(texts []string) []render.Node {
	joined := strings.Join(texts, batchSeparator)
	root, perr := e.cfg.Compile(joined, parser.SourceLoc{LineNo: 1})
	if perr != nil {
		return nil
	}
	seq, ok := root.(*render.SeqNode)
	if !ok {
		return nil
	}
	starts := make([]int, len(texts)) // the line each text starts on
	line := 1
	for j, t := range texts {
		starts[j] = line
		line += strings.Count(t, "\n")
	}
	parts := make([][]render.Node, 1, len(texts))
	cur := 0 // the text the next node belongs to
	for _, n := range seq.Children {
		tn, ok := n.(*render.TextNode)
		if !ok || !strings.Contains(tn.Source, batchSeparator) {
			parts[cur] = append(parts[cur], n)
			continue
		}
		pieces := strings.Split(tn.Source, batchSeparator)
		for k, piece := range pieces {
			if k > 0 {
				cur++
				if cur >= len(texts) {
					return nil
				}
				parts = append(parts, nil)
			}
			if piece != "" {
				tok := tn.Token
				tok.Source = piece
				if k > 0 {
					tok.SourceLoc.LineNo = starts[cur]
				}
				parts[cur] = append(parts[cur], &render.TextNode{Token: tok})
			}
		}
	}
	if cur != len(texts)-1 {
		return nil // a separator inside a tag, an object or a block
	}
	roots := make([]render.Node, len(texts))
	for j, nodes := range parts {
		for _, n := range nodes {
			shiftLines(n, starts[j]-1)
		}
		if nodes == nil {
			nodes = []render.Node{}
		}
		roots[j] = &render.SeqNode{Children: nodes}
	}
	return roots
}

// shiftLines moves n and the nodes inside it up by d lines. A text node
// split off a joined one takes the line its piece starts on.
func shiftLines(n render.Node, d int) {
	if d == 0 {
		return
	}
	switch n := n.(type) {
	case *render.TextNode:
		n.SourceLoc.LineNo -= d
	case *render.ObjectNode:
		n.SourceLoc.LineNo -= d
	case *render.TagNode:
		n.SourceLoc.LineNo -= d
	case *render.BlockNode:
		n.SourceLoc.LineNo -= d
		for _, c := range n.Body {
			shiftLines(c, d)
		}
		for _, c := range n.Clauses {
			shiftLines(c, d)
		}
	case *render.SeqNode:
		for _, c := range n.Children {
			shiftLines(c, d)
		}
	}
}
