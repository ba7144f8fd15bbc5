package llmoutput

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// judgement is the verdict of contractJudge on one candidate object.
type judgement struct {
	ignore      bool   // not an answer candidate at all (a prose array, a number)
	ok          bool   // a valid answer
	placeholder bool   // a template echo ("...", "<summary>"): never an answer
	refusal     bool   // an {"error": …} or {"refusal": …} object
	refusalText string // what it said
	score       int    // how many of the answer's fields it has
	errs        []FieldError
	flags       flagSet
	norm        *value // the normalised answer, to compare answers
	answer      *Output
}

// contractJudge judges answers against the LLMOutput contract. extraCap
// sizes the buffer extras are encoded into (the reply's length: the
// compact encoding is rarely longer), so it is allocated once.
type contractJudge struct{ extraCap int }

// keyNames lists the answer's field names.
func (contractJudge) keyNames() []string {
	return []string{keyConfidence, keySummary, keyNextStepContext, keyProceed, keyReasoning, keyArtifacts}
}

// keyScore counts the answer's field names that appear in text which
// could not be parsed, to rank it among other failed candidates.
func (j contractJudge) keyScore(text string) int {
	n := 0
	for _, k := range j.keyNames() {
		if strings.Contains(text, k) {
			n++
		}
	}
	return n
}

// judgeObject judges the object v; maxDepth bounds nested decoding.
func (j contractJudge) judgeObject(v *value, maxDepth int) judgement {
	var jd judgement
	out := &Output{Proceed: true}
	// Extras are encoded into one buffer and sliced from it at the end.
	var extraBuf []byte
	var extraEnds []int
	norm := &value{kind: kindObject, members: make([]member, 0, len(v.members)+1)}
	var haveConfidence, haveSummary, haveNext bool
	fail := func(path, code, format string, args ...any) {
		jd.errs = append(jd.errs, FieldError{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	for i := range v.members {
		m := &v.members[i]
		val := &m.val
		switch m.key {
		case keyConfidence:
			jd.score++
			haveConfidence = true
			if f, lit, ok := judgeConfidence(val, &jd.flags, fail); ok {
				out.Confidence = f
				norm.members = append(norm.members, member{m.key, value{kind: kindNumber, str: lit}})
			}
		case keySummary:
			jd.score++
			haveSummary = true
			switch {
			case val.kind != kindString:
				fail(m.key, CodeWrongType, "summary must be a non-empty string; got %s", describeValue(val))
			case strings.TrimSpace(val.str) == "":
				fail(m.key, CodeEmptyField, "summary must not be empty: give a one-line outcome")
			case isPlaceholder(val.str):
				jd.placeholder = true
				fail(m.key, CodePlaceholder, "summary holds the placeholder %q; write the real one-line outcome", capText(val.str, 40))
			default:
				out.Summary = val.str
				norm.members = append(norm.members, *m)
			}
		case keyNextStepContext:
			jd.score++
			haveNext = true
			switch {
			case val.kind != kindString:
				fail(m.key, CodeWrongType, `next_step_context must be a string ("" when there is nothing to pass on); got %s`, describeValue(val))
			case isPlaceholder(val.str):
				jd.placeholder = true
				fail(m.key, CodePlaceholder, "next_step_context holds the placeholder %q; write the real context or \"\"", capText(val.str, 40))
			default:
				out.NextStepContext = val.str
				norm.members = append(norm.members, *m)
			}
		case keyProceed:
			jd.score++
			b, fromString, ok := boolValue(val)
			switch {
			case val.kind == kindNull:
				jd.flags |= flagNullOptional
			case !ok:
				fail(m.key, CodeWrongType, "proceed must be true or false; got %s", describeValue(val))
			default:
				if fromString {
					jd.flags |= flagBoolString
				}
				out.Proceed = b
			}
		case keyProceedReason:
			jd.score++
			switch val.kind {
			case kindString:
				out.ProceedReason = val.str
				if val.str != "" {
					norm.members = append(norm.members, *m)
				}
			case kindNull:
				jd.flags |= flagNullOptional
			default:
				fail(m.key, CodeWrongType, "proceed_reason must be a string; got %s", describeValue(val))
			}
		case keyReasoning:
			jd.score++
			obj := val
			switch val.kind {
			case kindNull:
				jd.flags |= flagNullOptional
				continue
			case kindString:
				inner, ok := decodeObjectString(val.str, maxDepth-1)
				if !ok {
					fail(m.key, CodeWrongType, `reasoning must be an object such as {"supports": [...], "contradicts": [...], "assumptions": [...]}; got a string`)
					continue
				}
				jd.flags |= flagObjectString | inner.flags
				obj = &inner.v
			case kindObject:
			default:
				fail(m.key, CodeWrongType, `reasoning must be an object such as {"supports": [...], "contradicts": [...], "assumptions": [...]}; got %s`, describeValue(val))
				continue
			}
			if p, lit, bad := firstNonFinite(obj, m.key); bad {
				fail(p, CodeWrongType, "%s is not a JSON number; use a finite number, a string or null", lit)
				continue
			}
			out.Reasoning = toAny(obj).(map[string]any)
			norm.members = append(norm.members, member{m.key, *obj})
		case keyArtifacts:
			jd.score++
			switch val.kind {
			case kindNull:
				jd.flags |= flagNullOptional
			case kindObject:
				arts := make(map[string]string, len(val.members))
				good := true
				for _, a := range val.members {
					if a.val.kind != kindString {
						fail(joinPath(m.key, a.key), CodeWrongType, "artifact content must be a string; got %s (encode structured content as a JSON string)", describeValue(&a.val))
						good = false
						continue
					}
					arts[a.key] = a.val.str
				}
				if good {
					out.Artifacts = arts
					norm.members = append(norm.members, *m)
				}
			default:
				fail(m.key, CodeWrongType, "artifacts must be an object mapping a name to its text content; got %s", describeValue(val))
			}
		case keyModel, keyProvider, keyRawResponse:
			jd.flags |= flagExecutorFieldIgnored
		default:
			if Reserved(m.key) {
				// A runner-reserved name, or a contract, executor or
				// runner name in another case: never the agent's to set.
				jd.flags |= flagReservedFieldIgnored
				continue
			}
			if p, lit, bad := firstNonFinite(val, m.key); bad {
				fail(p, CodeWrongType, "%s is not a JSON number; use a finite number, a string or null", lit)
				continue
			}
			if extraBuf == nil {
				extraBuf = make([]byte, 0, max(j.extraCap, 256))
			}
			extraBuf = appendJSON(extraBuf, val)
			extraEnds = append(extraEnds, len(extraBuf))
			out.Extra = append(out.Extra, Field{Name: m.key})
			norm.members = append(norm.members, *m)
		}
	}
	if !haveConfidence {
		fail(keyConfidence, CodeMissingField, "confidence is required: a number from 0 to 1%s", similarKey(v, keyConfidence))
	}
	if !haveSummary {
		fail(keySummary, CodeMissingField, "summary is required: a non-empty one-line outcome%s", similarKey(v, keySummary))
	}
	if !haveNext {
		fail(keyNextStepContext, CodeMissingField, `next_step_context is required: a string, "" when there is nothing to pass on%s`, similarKey(v, keyNextStepContext))
	}
	norm.members = append(norm.members, member{keyProceed, value{kind: kindBool, str: strconv.FormatBool(out.Proceed)}})
	if jd.score == 0 {
		for _, k := range [...]string{"error", "refusal"} {
			if e := v.get(k); e != nil {
				jd.refusal = true
				if e.kind == kindString {
					jd.refusalText = e.str
				} else {
					jd.refusalText = string(appendJSON(nil, e))
				}
				break
			}
		}
	}
	jd.ok = len(jd.errs) == 0
	jd.norm = norm
	if cap(extraBuf) > 4096 && cap(extraBuf) > 2*len(extraBuf) {
		extraBuf = append([]byte(nil), extraBuf...) // do not keep a reply-sized buffer for small extras
	}
	start := 0
	for i, end := range extraEnds {
		out.Extra[i].Value = extraBuf[start:end:end]
		start = end
	}
	jd.answer = out
	return jd
}

// judgeConfidence checks a confidence value. It returns the number and its
// literal when the value is acceptable.
func judgeConfidence(val *value, flags *flagSet, fail func(path, code, format string, args ...any)) (float64, string, bool) {
	lit := ""
	switch val.kind {
	case kindNumber:
		lit = val.str
	case kindString:
		t := strings.TrimSpace(val.str)
		if !isNumberLiteral(t) {
			fail(keyConfidence, CodeWrongType, "confidence must be a number from 0 to 1; got the string %q", capText(val.str, 40))
			return 0, "", false
		}
		*flags |= flagNumberString
		lit = t
	case kindNonFinite:
		fail(keyConfidence, CodeOutOfRange, "confidence must be a finite number from 0 to 1; got %s", val.str)
		return 0, "", false
	default:
		fail(keyConfidence, CodeWrongType, "confidence must be a number from 0 to 1; got %s", describeValue(val))
		return 0, "", false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		fail(keyConfidence, CodeOutOfRange, "confidence must be a finite number from 0 to 1; got %s", capText(lit, 40))
		return 0, "", false
	}
	if f < 0 || f > 1 {
		hint := ""
		if f >= 2 && f <= 100 {
			hint = " (a fraction, not a percentage)"
		}
		fail(keyConfidence, CodeOutOfRange, "confidence must be a number from 0 to 1%s; got %s", hint, capText(lit, 40))
		return 0, "", false
	}
	return f, lit, true
}

// boolValue reads a boolean, or the string "true" or "false" (any case,
// spaces around) as one.
func boolValue(v *value) (b, fromString, ok bool) {
	switch v.kind {
	case kindBool:
		return v.str == "true", false, true
	case kindString:
		t := strings.TrimSpace(v.str)
		if strings.EqualFold(t, "true") || strings.EqualFold(t, "false") {
			return strings.EqualFold(t, "true"), true, true
		}
	}
	return false, false, false
}

// isNumberLiteral reports whether s is exactly one JSON number.
func isNumberLiteral(s string) bool {
	if s == "" {
		return false
	}
	p := lenient{src: s, end: len(s), maxDepth: 1}
	c := s[0]
	if c != '-' && (c < '0' || c > '9') {
		return false
	}
	v := p.parseNumber()
	return p.err == nil && p.pos == len(s) && v.kind == kindNumber
}

type decodedObject struct {
	v     value
	flags flagSet
}

// decodeObjectString decodes a JSON object held in a string, with the
// same repairs; it fails on anything else.
func decodeObjectString(s string, maxDepth int) (decodedObject, bool) {
	t := strings.TrimSpace(s)
	if t == "" || t[0] != '{' || maxDepth < 1 {
		return decodedObject{}, false
	}
	v, flags, dups, err := parseLenient(t, 0, len(t), maxDepth)
	if err != nil || len(dups) > 0 || v.kind != kindObject {
		return decodedObject{}, false
	}
	return decodedObject{v: v, flags: flags}, true
}

// IsPlaceholder reports whether s reads as a template slot rather than
// content, as the contract judges summary and next_step_context: an
// ellipsis, an <angle bracketed> or {{braced}} slot, or a type name, of at
// most 80 characters. An executor that writes an answer itself from text
// it received (a webhook's body) keeps such text out of those fields.
func IsPlaceholder(s string) bool { return isPlaceholder(s) }

// isPlaceholder reports whether s is a template slot rather than content:
// an ellipsis, an <angle bracketed> or {{braced}} slot, or a type name.
func isPlaceholder(s string) bool {
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 80 {
		return false
	}
	if strings.Trim(t, ".…") == "" {
		return true
	}
	if t[0] == '<' && t[len(t)-1] == '>' && !strings.ContainsAny(t, "\n") {
		return true
	}
	if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") {
		return true
	}
	switch strings.ToLower(t) {
	case "string", "str", "text", "number", "float", "boolean", "bool", "todo", "tbd":
		return true
	}
	return false
}

// similarKey returns a hint naming a key of v that differs from want only
// in case or separators ("Confidence", "nextStepContext"), or "".
func similarKey(v *value, want string) string {
	w := foldKey(want)
	for i := range v.members {
		k := v.members[i].key
		if k != want && foldKey(k) == w {
			return fmt.Sprintf(" (found %q: field names are exact, in snake_case)", capText(k, 40))
		}
	}
	return ""
}

func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '_', '-', ' ':
			continue
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String()
}

// describeValue names a value's type, with a short quote of scalars.
func describeValue(v *value) string {
	switch v.kind {
	case kindString:
		return fmt.Sprintf("the string %q", capText(v.str, 40))
	case kindNumber, kindNonFinite:
		return "the number " + capText(v.str, 40)
	case kindBool:
		return v.str
	case kindNull:
		return "null"
	}
	return v.kind.String()
}
