package llmoutput

import (
	"fmt"
	"strings"
)

// Limits applied before any repair.
const (
	DefaultMaxBytes = 1 << 20 // a reply longer than this is rejected as too_large
	DefaultMaxDepth = 64      // JSON nested deeper than this is rejected as too_deep

	// maxCandidates bounds the JSON values one reply may hold.
	maxCandidates = 1000
)

// ParseOptions carries what the provider said about a reply and the
// limits to apply.
type ParseOptions struct {
	// FinishReason is the provider's finish reason. "length" (also
	// max_tokens) makes the reply truncated even when its text parses;
	// "content_filter" (also safety, guardrail_intervened) and "refusal"
	// make it refused.
	FinishReason string
	// Refusal is a refusal the provider reported apart from the content.
	Refusal string
	// MaxBytes and MaxDepth default to DefaultMaxBytes and DefaultMaxDepth.
	MaxBytes int
	MaxDepth int
	// MaxAnswerBytes, when above 0, bounds an accepted answer as the next
	// steps see it (its CompactJSON), each artifact's content counted as
	// ArtifactRefBytes (a runner stores artifacts apart and keeps a
	// reference): a longer one is rejected (too_large) with feedback to
	// put long text in artifacts. OutputSchema.Check (and so the Runner)
	// judges it; Parse alone does not.
	MaxAnswerBytes int
}

func (o ParseOptions) limits() (int, int) {
	maxBytes, maxDepth := o.MaxBytes, o.MaxDepth
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	return maxBytes, maxDepth
}

// finishClass sorts the providers' finish reasons.
func finishClass(reason string) Outcome {
	switch strings.ToLower(strings.TrimSpace(reason)) {
	case FinishLength, "max_tokens", "max_output_tokens", "model_context_window_exceeded":
		return Truncated
	case FinishContentFilter, "content_filtered", "safety", "guardrail_intervened", "prohibited_content", "blocklist", "spii":
		return Refused
	case FinishRefusal:
		return Refused
	}
	return ""
}

// Parse judges one raw model reply against the LLMOutput contract. It
// finds the answer in the reply, repairs what can be repaired without
// guessing, and returns the answer or every reason it was not accepted.
// Parse never panics and is safe for concurrent use.
func Parse(raw string, opts ParseOptions) Result {
	f := find(raw, opts, contractJudge{extraCap: len(raw)})
	res := Result{Outcome: f.outcome, OK: f.outcome == Accepted, Flags: f.flags.names(), Errors: f.errs, echo: f.echo}
	if res.OK {
		res.Output = f.answer
		res.Errors = nil
	}
	return res
}

// finding is the verdict of find, before it is dressed as a Result.
type finding struct {
	outcome Outcome
	flags   flagSet
	errs    []FieldError
	answer  *Output
	echo    string
}

func verdict(o Outcome, echo string, errs ...FieldError) finding {
	return finding{outcome: o, errs: errs, echo: echo}
}

// candidate is one JSON value found in a reply, or one that looks like
// JSON but could not be parsed (its judgement then holds the syntax error).
type candidate struct {
	sp span
	jd judgement
}

// find locates and judges the answer in raw. The steps, in order: limits;
// the provider's finish reason and refusal; edge noise; leading reasoning
// blocks; a document encoded as a JSON string; the JSON values of the
// text (the whole text, or every balanced region found by one scan); the
// choice among them.
func find(raw string, opts ParseOptions, j contractJudge) finding {
	maxBytes, maxDepth := opts.limits()
	if len(raw) > maxBytes {
		return verdict(Rejected, capText(raw, 600), FieldError{"", CodeTooLarge,
			fmt.Sprintf("the reply exceeds the limit of %d bytes: answer more briefly", maxBytes)})
	}
	switch finishClass(opts.FinishReason) {
	case Truncated:
		return verdict(Truncated, raw, FieldError{"", CodeTruncated,
			fmt.Sprintf("the reply was cut off at the output limit (finish reason %q): answer more briefly", opts.FinishReason)})
	case Refused:
		code := CodeContentFilter
		msg := fmt.Sprintf("the provider's content filter stopped the reply (finish reason %q)", opts.FinishReason)
		if strings.EqualFold(strings.TrimSpace(opts.FinishReason), FinishRefusal) {
			code, msg = CodeRefusal, "the model declined to answer"
			if opts.Refusal != "" {
				msg += ": " + capText(opts.Refusal, 300)
			}
		}
		return verdict(Refused, raw, FieldError{"", code, msg})
	}
	if strings.TrimSpace(opts.Refusal) != "" {
		return verdict(Refused, raw, FieldError{"", CodeRefusal, "the model declined to answer: " + capText(opts.Refusal, 300)})
	}

	var flags flagSet
	text, noise := stripEdges(raw)
	if noise {
		flags |= flagEdgeNoise
	}
	text, think, unclosed := stripThink(text)
	if think {
		flags |= flagThinkBlock
	}
	if unclosed {
		return verdict(Truncated, raw, FieldError{"", CodeTruncated, "the reply ended inside a <think> block, before any answer"})
	}
	if text == "" {
		return verdict(Rejected, raw, FieldError{"", CodeNoJSON, "the reply is empty: answer with one JSON object"})
	}

	// A whole reply that parses is the common case: no scan needed.
	whole, wflags, wdups, werr := parseLenient(text, 0, len(text), maxDepth)
	if werr == nil && whole.kind == kindString {
		inner, _ := stripEdges(whole.str)
		if strings.ContainsAny(inner, "{[") {
			text = inner
			flags |= flagStringDecoded
			whole, wflags, wdups, werr = parseLenient(text, 0, len(text), maxDepth)
		}
	}
	if werr != nil && werr.Code == CodeTooDeep {
		return verdict(Rejected, text, *werr)
	}
	if werr != nil && text[0] == '"' {
		if _, closed := skipString(text, 0, len(text)); !closed {
			return verdict(Truncated, text, FieldError{"", CodeTruncated, "the reply is a JSON string that is not closed"})
		}
	}

	var cands []candidate
	truncated := false
	if werr == nil {
		if whole.kind != kindObject && whole.kind != kindArray {
			return verdict(Rejected, text, FieldError{"", CodeNotObject,
				fmt.Sprintf("the reply is %s, not a JSON object", describeValue(&whole))})
		}
		jd := evaluate(&whole, wflags, wdups, j, maxDepth)
		if jd.ignore {
			return verdict(Rejected, text, FieldError{"", CodeNotObject, "the reply is an array, not a JSON object"})
		}
		cands = append(cands, candidate{sp: span{0, len(text)}, jd: jd})
	} else {
		sr := scan(text, 0, len(text), maxDepth)
		if sr.tooDeep {
			return verdict(Rejected, text, FieldError{"", CodeTooDeep, fmt.Sprintf("the reply nests brackets deeper than %d levels", maxDepth)})
		}
		truncated = sr.truncated
		var fatal *FieldError
		cands, fatal = collect(text, sr.spans, j, maxDepth, cands)
		if fatal != nil {
			return verdict(Rejected, text, *fatal)
		}
	}
	return choose(text, cands, truncated, flags)
}

// collect parses and judges each span. A span that does not parse and
// does not look like JSON (prose in braces) is searched for JSON inside.
func collect(text string, spans []span, j contractJudge, maxDepth int, cands []candidate) ([]candidate, *FieldError) {
	for _, sp := range spans {
		if len(cands) >= maxCandidates {
			return cands, &FieldError{"", CodeAmbiguous,
				fmt.Sprintf("the reply holds more than %d JSON values; send exactly one object", maxCandidates)}
		}
		v, fl, dups, err := parseLenient(text, sp.start, sp.end, maxDepth)
		if err == nil {
			jd := evaluate(&v, fl, dups, j, maxDepth)
			if !jd.ignore {
				cands = append(cands, candidate{sp: sp, jd: jd})
			}
			continue
		}
		if err.Code == CodeTooDeep {
			return cands, err
		}
		jsonLike := looksLikeJSON(text, sp.start, sp.end)
		if jsonLike {
			cands = append(cands, candidate{sp: sp,
				jd: judgement{score: j.keyScore(text[sp.start:sp.end]), errs: []FieldError{*err}}})
		}
		if sp.end-sp.start <= 2 {
			continue
		}
		// Search inside. Inside broken JSON, an object counts only when
		// the broken part before it names none of the answer's fields:
		// a complete object nested in a broken answer is not the answer.
		inner := scan(text, sp.start+1, sp.end-1, maxDepth).spans
		if jsonLike {
			cut := sp.start + firstKeyEnd(text[sp.start:sp.end], j.keyNames())
			kept := inner[:0]
			for _, in := range inner {
				if in.start < cut {
					kept = append(kept, in)
				}
			}
			inner = kept
		}
		var fatal *FieldError
		if cands, fatal = collect(text, inner, j, maxDepth, cands); fatal != nil {
			return cands, fatal
		}
	}
	return cands, nil
}

// evaluate judges a parsed value: an object, a one-element array holding
// one (unwrapped), or a single-key envelope around the real answer.
func evaluate(v *value, fl flagSet, dups []FieldError, j contractJudge, maxDepth int) judgement {
	var jd judgement
	switch {
	case v.kind == kindObject:
		jd = evaluateObject(v, j, maxDepth)
	case v.kind == kindArray && len(v.items) == 1 && v.items[0].kind == kindObject:
		jd = evaluateObject(&v.items[0], j, maxDepth)
		jd.flags |= flagArrayUnwrapped
	case v.kind == kindArray && len(v.items) > 1 && allObjects(v.items):
		best := 0
		for i := range v.items {
			best = max(best, j.judgeObject(&v.items[i], maxDepth).score)
		}
		return judgement{score: best, errs: []FieldError{{"", CodeNotObject,
			fmt.Sprintf("the reply is an array of %d objects; send exactly one JSON object", len(v.items))}}}
	default:
		return judgement{ignore: true}
	}
	jd.flags |= fl
	if len(dups) > 0 {
		jd.ok = false
		jd.errs = append(dups, jd.errs...)
	}
	return jd
}

func evaluateObject(v *value, j contractJudge, maxDepth int) judgement {
	jd := j.judgeObject(v, maxDepth)
	if jd.ok || len(v.members) != 1 || v.members[0].val.kind != kindObject {
		return jd
	}
	inner := j.judgeObject(&v.members[0].val, maxDepth-1)
	if inner.ok || inner.score > jd.score {
		inner.flags |= flagEnvelopeUnwrapped
		return inner
	}
	return jd
}

// firstKeyEnd returns the smallest end offset in text of any of names,
// or len(text)+1 when none occurs: a prefix of text shorter than the
// result holds none of the names.
func firstKeyEnd(text string, names []string) int {
	end := len(text) + 1
	for _, n := range names {
		if i := strings.Index(text, n); i >= 0 && i+len(n) < end {
			end = i + len(n)
		}
	}
	return end
}

func allObjects(vs []value) bool {
	for i := range vs {
		if vs[i].kind != kindObject {
			return false
		}
	}
	return true
}

// choose picks the answer among the candidates, or explains why there is
// none. Truncation wins over everything: a cut reply may hold a complete
// inner object that is not the answer. Answers that are equal count once;
// two different answers are ambiguous; placeholders and invalid objects
// are not answers.
func choose(text string, cands []candidate, truncated bool, flags flagSet) finding {
	if truncated {
		return verdict(Truncated, text, FieldError{"", CodeTruncated,
			"the reply ends before its JSON is complete (an object, array or string is not closed)"})
	}
	var answers []*candidate
	var best, placeholder, refusal *candidate
	for i := range cands {
		c := &cands[i]
		switch {
		case c.jd.ok && !c.jd.placeholder:
			answers = append(answers, c)
		case c.jd.placeholder:
			placeholder = c
		case c.jd.refusal:
			refusal = c
		case best == nil || c.jd.score >= best.jd.score:
			best = c
		}
	}
	if len(answers) > 0 {
		first := answers[0]
		for _, a := range answers[1:] {
			if !equalValue(first.jd.norm, a.jd.norm) {
				return verdict(Rejected, text, FieldError{"", CodeAmbiguous,
					fmt.Sprintf("the reply holds %d different answers; send exactly one JSON object", distinctAnswers(answers))})
			}
		}
		flags |= first.jd.flags | placement(text, first.sp)
		if len(answers) > 1 {
			flags |= flagRepeatedAnswer
		}
		if placeholder != nil {
			flags |= flagPlaceholderSkipped
		}
		if best != nil && best.jd.score > 0 {
			flags |= flagOtherJSONIgnored
		}
		return finding{outcome: Accepted, flags: flags, answer: first.jd.answer, echo: text}
	}
	switch {
	case best != nil && best.jd.score > 0:
		return verdict(Rejected, text, best.jd.errs...)
	case placeholder != nil:
		return verdict(Rejected, text, placeholder.jd.errs...)
	case refusal != nil:
		return verdict(Refused, text, FieldError{"", CodeRefusal, "the model declined to answer: " + capText(refusal.jd.refusalText, 300)})
	case best != nil:
		return verdict(Rejected, text, best.jd.errs...)
	case looksLikeRefusal(text):
		return verdict(Refused, text, FieldError{"", CodeRefusal, "the model declined to answer: " + capText(text, 300)})
	}
	return verdict(Rejected, text, FieldError{"", CodeNoJSON, "the reply holds no JSON object: answer with one JSON object"})
}

func distinctAnswers(as []*candidate) int {
	var distinct []*value
	for _, a := range as {
		seen := false
		for _, d := range distinct {
			if equalValue(d, a.jd.norm) {
				seen = true
				break
			}
		}
		if !seen {
			distinct = append(distinct, a.jd.norm)
		}
	}
	return len(distinct)
}

// placement flags where the answer sat: inside a code fence, and whether
// other text surrounded it.
func placement(text string, sp span) flagSet {
	var f flagSet
	before, after := text[:sp.start], text[sp.end:]
	if strings.Contains(before, "```") || strings.Contains(before, "~~~") {
		for _, fc := range findFences(text) {
			if sp.start >= fc.start && sp.end <= fc.end {
				f |= flagFenced
				if !fc.closed {
					f |= flagFenceUnclosed
				}
				before = text[:fc.open] + text[fc.start:sp.start]
				after = text[sp.end:fc.end] + text[fc.close:]
				break
			}
		}
	}
	if strings.TrimSpace(before) != "" || strings.TrimSpace(after) != "" {
		f |= flagSurroundingText
	}
	return f
}

// looksLikeRefusal reports whether prose opens the way refusals do.
func looksLikeRefusal(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n*_#>\"")
	if len(t) > 120 {
		t = t[:120]
	}
	t = strings.ToLower(strings.ReplaceAll(t, "’", "'"))
	for _, p := range [...]string{
		"i'm sorry", "i am sorry", "sorry, ", "i apologize", "i apologise",
		"i can't", "i cannot", "i can not", "i won't", "i will not",
		"i'm unable", "i am unable", "i'm not able", "i am not able",
		"i must decline", "i'm afraid i can", "as an ai", "unfortunately, i can",
	} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
