package llmoutput

import (
	"bytes"
	"reflect"
	"testing"
)

// knownCodes are the error codes documented in doc.go.
var knownCodes = map[string]bool{
	CodeNoJSON: true, CodeSyntax: true, CodeNotObject: true, CodeTruncated: true,
	CodeAmbiguous: true, CodeDuplicateKey: true, CodeMissingField: true, CodeWrongType: true,
	CodeOutOfRange: true, CodeEmptyField: true, CodePlaceholder: true, CodeInvalidValue: true,
	CodeRefusal: true, CodeContentFilter: true, CodeTooLarge: true, CodeTooDeep: true,
}

// FuzzParse checks, for any input: no panic; the same verdict twice; a
// rejection explains itself with known codes; an accepted answer
// re-validates, re-parses with no repair, and round-trips byte for byte.
// The seeds are the corpus and the generated variants.
//
//	go test ./shared/llmoutput -run '^$' -fuzz FuzzParse -fuzztime 30s
func FuzzParse(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.raw, c.finish)
	}
	for o := renderOpt(0); o < optCount; o++ {
		var v variant
		v.opts[o] = true
		f.Add(v.render(), "")
	}
	task := TaskAnalysisSchema()
	f.Fuzz(func(t *testing.T, raw, finish string) {
		opts := ParseOptions{FinishReason: finish}
		res := Parse(raw, opts)
		if again := Parse(raw, opts); !reflect.DeepEqual(res, again) {
			t.Fatalf("two parses differ:\n%+v\n%+v", res, again)
		}
		if res.OK != (res.Outcome == Accepted) {
			t.Fatalf("OK %v with outcome %s", res.OK, res.Outcome)
		}
		if !res.OK {
			if len(res.Errors) == 0 || res.Output != nil || res.Feedback() == "" || res.Err() == nil {
				t.Fatalf("a rejection without errors, feedback or fault: %+v", res)
			}
			for _, e := range res.Errors {
				if !knownCodes[e.Code] {
					t.Fatalf("unknown code %q", e.Code)
				}
			}
		} else {
			if res.Err() != nil || res.Output == nil {
				t.Fatalf("accepted without an output: %+v", res)
			}
			if errs := res.Output.Validate(); len(errs) > 0 {
				t.Fatalf("accepted output does not validate: %v", errs)
			}
			canon, err := res.Output.MarshalJSON()
			if err != nil {
				t.Fatalf("accepted output does not encode: %v", err)
			}
			re := Parse(string(canon), ParseOptions{})
			if !re.OK || len(re.Flags) != 0 {
				t.Fatalf("canonical output %s re-parses as %s %v %v", canon, re.Outcome, re.Flags, re.Errors)
			}
			if round, _ := re.Output.MarshalJSON(); !bytes.Equal(round, canon) {
				t.Fatalf("round trip changed the output:\n%s\n%s", canon, round)
			}
		}
		_, r1 := task.Check(raw, opts)
		_, r2 := task.Check(raw, opts)
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("two schema checks differ:\n%+v\n%+v", r1, r2)
		}
	})
}
