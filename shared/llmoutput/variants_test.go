package llmoutput

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A generated reply: one answer rendered with a chosen set of lossless
// defects, then wrapped. Every variant must normalise to the same output.

type renderOpt int

const (
	optSingleQuotes renderOpt = iota
	optUnquotedKeys
	optTrailingComma
	optComments
	optPythonLiterals
	optConfString
	optProceedString
	optNullOptional
	optReasoningString
	optRawControl
	optDuplicateSame
	// wrappers, applied innermost first
	optArray
	optEnvelope
	optStringEncode
	optFence
	optProse
	optThink
	optBOM
	optANSI
	optCount
)

// optFlag is the flag each option must raise.
var optFlag = [optCount]string{
	"single_quotes", "unquoted_keys", "trailing_comma", "comments", "python_literals",
	"number_string", "bool_string", "null_optional", "object_string", "control_chars", "duplicate_key",
	"array_unwrapped", "envelope_unwrapped", "string_decoded", "fenced", "surrounding_text",
	"think_block", "edge_noise", "edge_noise",
}

// defect is a forbidden change: the reply must be rejected with one of codes.
type defect struct {
	name    string
	outcome Outcome
	codes   []string
}

type variant struct {
	opts   [optCount]bool
	defect string
}

func (v variant) has(o renderOpt) bool { return v.opts[o] }

// render writes the answer of the variant.
func (v variant) render() string {
	q := func(s string) string {
		if v.has(optSingleQuotes) {
			return "'" + strings.ReplaceAll(strings.ReplaceAll(string(appendString(nil, s)[1:len(appendString(nil, s))-1]), `\"`, `"`), "'", `\'`) + "'"
		}
		return string(appendString(nil, s))
	}
	key := func(k string) string {
		if v.has(optUnquotedKeys) {
			return k
		}
		return q(k)
	}
	lit := func(json, python string) string {
		if v.has(optPythonLiterals) {
			return python
		}
		return json
	}
	comma := ""
	if v.has(optTrailingComma) {
		comma = ","
	}
	var ms []string
	add := func(k, val string) { ms = append(ms, key(k)+": "+val) }

	switch v.defect {
	case "conf-percent":
		add("confidence", "85")
	case "conf-word":
		add("confidence", q("high"))
	case "conf-nan":
		add("confidence", "NaN")
	default:
		if v.has(optConfString) {
			add("confidence", q("0.85"))
		} else {
			add("confidence", "0.85")
		}
	}
	if v.defect != "missing-summary" {
		add("summary", q("Disk usage on db-1 is 91%"))
	}
	nsc := "Clean /var/log on db-1\nthen re-check"
	if v.has(optRawControl) {
		quote := `"`
		if v.has(optSingleQuotes) {
			quote = "'"
		}
		add("next_step_context", quote+nsc+quote)
	} else {
		add("next_step_context", q(nsc))
	}
	switch {
	case v.defect == "proceed-yes":
		add("proceed", q("yes"))
	case v.defect == "stop-no-reason":
		add("proceed", lit("false", "False"))
	case v.has(optProceedString):
		add("proceed", q("true"))
	default:
		add("proceed", lit("true", "True"))
	}
	if v.has(optNullOptional) {
		add("proceed_reason", lit("null", "None"))
	}
	if v.has(optReasoningString) {
		add("reasoning", q(`{"supports": ["df shows 91%"], "assumptions": []}`))
	} else {
		add("reasoning", "{"+key("supports")+": ["+q("df shows 91%")+comma+"], "+key("assumptions")+": []}")
	}
	if v.has(optComments) {
		ms = append(ms, "/* what to do */ "+key("action")+": "+q("cleanup"))
	} else {
		add("action", q("cleanup"))
	}
	add("services", "["+q("db-1")+", "+q("db-2")+comma+"]")
	add("urgent", lit("false", "False"))
	if v.has(optDuplicateSame) {
		add("action", q("cleanup"))
	}
	if v.defect == "dup-different" {
		add("action", q("restart"))
	}
	sep := ", "
	if v.has(optComments) {
		sep = ", // checked\n  "
	}
	s := "{" + strings.Join(ms, sep) + comma + "}"

	if v.has(optEnvelope) {
		s = `{"answer": ` + s + "}"
	}
	if v.has(optArray) {
		s = "[" + s + "]"
	}
	if v.has(optStringEncode) {
		b, _ := json.Marshal(s)
		s = string(b)
	}
	if v.defect == "second-answer" {
		s += "\n" + `{"confidence": 0.3, "summary": "Disk usage is normal", "next_step_context": ""}`
	}
	if v.has(optFence) {
		s = "```json\n" + s + "\n```"
	}
	if v.has(optProse) {
		s = "Here is my analysis of the disk alert.\n" + s + "\nTell me if you need more."
	}
	if v.has(optThink) {
		s = "<think>\nThe alert says 91%. Check which directory grows.\n</think>\n" + s
	}
	if v.has(optANSI) {
		s = "\x1b[1;32m" + s + "\x1b[0m"
	}
	if v.has(optBOM) {
		s = "\ufeff" + s
	}
	if v.defect == "truncate" {
		s = s[:strings.LastIndexByte(s, '}')]
	}
	return s
}

func (v variant) name() string {
	var parts []string
	for o := renderOpt(0); o < optCount; o++ {
		if v.opts[o] {
			parts = append(parts, optName(o))
		}
	}
	if v.defect != "" {
		parts = append(parts, "defect="+v.defect)
	}
	if len(parts) == 0 {
		return "clean"
	}
	return strings.Join(parts, "+")
}

func optName(o renderOpt) string {
	names := [optCount]string{"single-quotes", "unquoted-keys", "trailing-comma", "comments", "python",
		"conf-string", "proceed-string", "null-optional", "reasoning-string", "raw-control", "dup-same",
		"array", "envelope", "string-encode", "fence", "prose", "think", "bom", "ansi"}
	return names[o]
}

// compatible reports whether two options can be combined: a document
// encoded as a JSON string is decoded only when it is the whole reply.
func compatible(a, b renderOpt) bool {
	enc := a == optStringEncode || b == optStringEncode
	wrapped := a == optFence || b == optFence || a == optProse || b == optProse
	return !(enc && wrapped)
}

func baseOutput(t *testing.T) []byte {
	t.Helper()
	res := Parse(variant{}.render(), ParseOptions{})
	if !res.OK || len(res.Flags) != 0 {
		t.Fatalf("the clean variant: %s %v %v", res.Outcome, res.Flags, res.Errors)
	}
	b, err := res.Output.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRepairCompositions accepts every pair of lossless repairs (and
// wrappings) with exactly the flags of the two, and the same output.
func TestRepairCompositions(t *testing.T) {
	want := baseOutput(t)
	n := 0
	for a := renderOpt(0); a < optCount; a++ {
		for b := a; b < optCount; b++ {
			if !compatible(a, b) {
				continue
			}
			var v variant
			v.opts[a], v.opts[b] = true, true
			n++
			t.Run(v.name(), func(t *testing.T) {
				raw := v.render()
				res := Parse(raw, ParseOptions{})
				if !res.OK {
					t.Fatalf("rejected: %s %v\n%s", res.Outcome, res.Errors, raw)
				}
				wantFlags := []string{optFlag[a], optFlag[b]}
				slices.Sort(wantFlags)
				wantFlags = slices.Compact(wantFlags)
				got := slices.Clone(res.Flags)
				slices.Sort(got)
				if !slices.Equal(got, wantFlags) {
					t.Errorf("flags = %v, want %v\n%s", res.Flags, wantFlags, raw)
				}
				out, _ := res.Output.MarshalJSON()
				if !bytes.Equal(out, want) {
					t.Errorf("output\n got %s\nwant %s\n%s", out, want, raw)
				}
			})
		}
	}
	if n < 150 {
		t.Fatalf("only %d compositions ran", n)
	}
}

// TestRepairWithDefect rejects a forbidden defect whatever single repair
// or wrapping comes with it (and accepts a stop without a reason).
func TestRepairWithDefect(t *testing.T) {
	defects := []defect{
		{"conf-percent", Rejected, []string{CodeOutOfRange}},
		{"conf-word", Rejected, []string{CodeWrongType}},
		{"conf-nan", Rejected, []string{CodeOutOfRange}},
		{"missing-summary", Rejected, []string{CodeMissingField}},
		{"proceed-yes", Rejected, []string{CodeWrongType}},
		// Not a defect: the reference contract accepts a stop without a
		// reason, whatever repair comes with it.
		{"stop-no-reason", Accepted, nil},
		{"dup-different", Rejected, []string{CodeDuplicateKey}},
		{"second-answer", Rejected, []string{CodeAmbiguous}},
		{"truncate", Truncated, []string{CodeTruncated}},
	}
	for _, d := range defects {
		for o := renderOpt(-1); o < optCount; o++ {
			var v variant
			if o >= 0 {
				v.opts[o] = true
			}
			v.defect = d.name
			if d.name == "second-answer" && o == optStringEncode {
				continue // a string-encoded document is decoded only as the whole reply
			}
			if d.name == "conf-nan" && o == optConfString {
				continue // NaN is then a bare literal next to a string option: nothing to combine
			}
			t.Run(v.name(), func(t *testing.T) {
				raw := v.render()
				res := Parse(raw, ParseOptions{})
				if res.Outcome != d.outcome {
					t.Fatalf("outcome = %s, want %s: %v\n%s", res.Outcome, d.outcome, res.Errors, raw)
				}
				codes := map[string]bool{}
				for _, e := range res.Errors {
					codes[e.Code] = true
				}
				for _, c := range d.codes {
					if !codes[c] {
						t.Errorf("errors %v lack %s\n%s", res.Errors, c, raw)
					}
				}
			})
		}
	}
}

// TestPrefixesAreTruncated cuts every valid bare-JSON reply of the corpus,
// and every single-repair variant, at every byte: each prefix that is not
// blank is rejected as truncated.
func TestPrefixesAreTruncated(t *testing.T) {
	var replies []string
	for _, c := range loadCorpus(t) {
		raw := strings.TrimSpace(c.raw)
		whole := !slices.Contains(c.flags, "surrounding_text") && !slices.Contains(c.flags, "think_block")
		if c.verdict != Accepted || c.finish != "" || !whole || raw == "" || !strings.ContainsRune("{[\"", rune(raw[0])) {
			continue
		}
		replies = append(replies, raw)
	}
	for o := renderOpt(0); o < optArray; o++ {
		var v variant
		v.opts[o] = true
		replies = append(replies, v.render())
	}
	checked := 0
	for _, raw := range replies {
		for n := 1; n < len(raw); n++ {
			prefix := raw[:n]
			if strings.TrimSpace(prefix) == "" {
				continue
			}
			checked++
			if res := Parse(prefix, ParseOptions{}); res.Outcome != Truncated {
				t.Fatalf("prefix %d of %d is %s, want truncated: %v\n%s", n, len(raw), res.Outcome, res.Errors, prefix)
			}
		}
	}
	t.Logf("%d prefixes of %d replies", checked, len(replies))
}
