package llmoutput

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/fault"
)

func TestStripEdges(t *testing.T) {
	cases := []struct {
		name, in, want string
		noise          bool
	}{
		{"plain", " {} \n", "{}", false},
		{"bom", "\ufeff{}", "{}", true},
		{"zero width both ends", "\u200b\u200d {} \u2060", "{}", true},
		{"ansi colour", "\x1b[0;32m{}\x1b[0m\n", "{}", true},
		{"two-byte escape", "\x1bc{}", "{}", true},
		{"escape before a brace", "\x1b{}", "{}", true},
		{"inner noise kept", "{\u200b}", "{\u200b}", false},
		{"only noise", "\ufeff \x1b[0m ", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, noise := stripEdges(c.in)
			if got != c.want || noise != c.noise {
				t.Errorf("stripEdges(%q) = %q, %v; want %q, %v", c.in, got, noise, c.want, c.noise)
			}
		})
	}
}

func TestStripThink(t *testing.T) {
	cases := []struct {
		name, in, want    string
		stripped, unclose bool
	}{
		{"none", `{"a":1}`, `{"a":1}`, false, false},
		{"think", "<think>x</think>\n{}", "{}", true, false},
		{"thinking upper case", "<THINKING>x</Thinking>{}", "{}", true, false},
		{"two blocks", "<think>a</think> <think>b</think> {}", "{}", true, false},
		{"unclosed", "<think>and then", "", true, true},
		{"closing tag only", "reasoning here\n</think>\n{}", "{}", true, false},
		{"closing tag inside JSON", `{"summary": "saw </think> in logs"}`, `{"summary": "saw </think> in logs"}`, false, false},
		{"closing tag glued to a word", "see x</think> {}", "see x</think> {}", false, false},
		{"not leading", "Answer: <think>x</think> {}", "Answer: <think>x</think> {}", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, stripped, unclosed := stripThink(c.in)
			if got != c.want || stripped != c.stripped || unclosed != c.unclose {
				t.Errorf("stripThink(%q) = %q, %v, %v; want %q, %v, %v", c.in, got, stripped, unclosed, c.want, c.stripped, c.unclose)
			}
		})
	}
}

func TestFindFences(t *testing.T) {
	text := "intro\n```json\n{}\n```\nmid\n  ~~~~\n[]\n~~~\n~~~~\nend\n````go\nx\n"
	got := findFences(text)
	if len(got) != 3 {
		t.Fatalf("found %d fences: %+v", len(got), got)
	}
	contents := []string{text[got[0].start:got[0].end], text[got[1].start:got[1].end], text[got[2].start:got[2].end]}
	if want := []string{"{}\n", "[]\n~~~\n", "x\n"}; !reflect.DeepEqual(contents, want) {
		t.Errorf("contents = %q, want %q", contents, want)
	}
	if !got[0].closed || !got[1].closed || got[2].closed {
		t.Errorf("closed = %v %v %v, want true true false", got[0].closed, got[1].closed, got[2].closed)
	}
}

func TestLimits(t *testing.T) {
	valid := `{"confidence": 0.5, "summary": "s", "next_step_context": "", "pad": "`
	atLimit := valid + strings.Repeat("x", DefaultMaxBytes-len(valid)-2) + `"}`
	cases := []struct {
		name string
		raw  string
		opts ParseOptions
		want Outcome
		code string
	}{
		{"exactly the default size", atLimit, ParseOptions{}, Accepted, ""},
		{"one byte over", atLimit + " ", ParseOptions{}, Rejected, CodeTooLarge},
		{"custom size", valid + `"}`, ParseOptions{MaxBytes: 10}, Rejected, CodeTooLarge},
		{"depth 64 is allowed", `{"confidence": 0.5, "summary": "s", "next_step_context": "", "x": ` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + "}", ParseOptions{}, Accepted, ""},
		{"depth 65 is not", `{"confidence": 0.5, "summary": "s", "next_step_context": "", "x": ` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + "}", ParseOptions{}, Rejected, CodeTooDeep},
		{"custom depth", `{"confidence": 0.5, "summary": "s", "next_step_context": "", "x": {"y": {}}}`, ParseOptions{MaxDepth: 2}, Rejected, CodeTooDeep},
		{"too large beats refusal", strings.Repeat("x", 20), ParseOptions{MaxBytes: 10, FinishReason: "content_filter"}, Rejected, CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Parse(c.raw, c.opts)
			if res.Outcome != c.want {
				t.Fatalf("outcome = %s, want %s: %v", res.Outcome, c.want, res.Errors)
			}
			if c.code != "" && (len(res.Errors) != 1 || res.Errors[0].Code != c.code) {
				t.Errorf("errors = %v, want one %s", res.Errors, c.code)
			}
		})
	}
}

func TestFinishReasons(t *testing.T) {
	good := `{"confidence": 0.5, "summary": "s", "next_step_context": ""}`
	cases := map[string]Outcome{
		"":                     Accepted,
		"stop":                 Accepted,
		"end_turn":             Accepted,
		"tool_use":             Accepted,
		"length":               Truncated,
		"MAX_TOKENS":           Truncated,
		"max_output_tokens":    Truncated,
		"content_filter":       Refused,
		"SAFETY":               Refused,
		"guardrail_intervened": Refused,
		"refusal":              Refused,
	}
	for reason, want := range cases {
		if got := Parse(good, ParseOptions{FinishReason: reason}).Outcome; got != want {
			t.Errorf("finish reason %q: %s, want %s", reason, got, want)
		}
	}
	res := Parse(good, ParseOptions{Refusal: "I can't share that."})
	if res.Outcome != Refused || !strings.Contains(res.Errors[0].Message, "I can't share that.") {
		t.Errorf("provider refusal: %s %v", res.Outcome, res.Errors)
	}
}

func TestResultErr(t *testing.T) {
	if err := Parse(`{"confidence": 1, "summary": "s", "next_step_context": ""}`, ParseOptions{}).Err(); err != nil {
		t.Errorf("accepted: %v", err)
	}
	err := Parse(`{"confidence": 2}`, ParseOptions{}).Err()
	var inv *fault.InvalidOutput
	if !errors.As(err, &inv) || !fault.IsRetryable(err) || !strings.Contains(err.Error(), "confidence: out_of_range") {
		t.Errorf("rejected: %T %v", err, err)
	}
	err = Parse("I cannot help with that.", ParseOptions{}).Err()
	var ref *fault.ModelRefused
	if !errors.As(err, &ref) || fault.IsRetryable(err) {
		t.Errorf("refused: %T %v", err, err)
	}
}

func TestFeedbackCaps(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 30; i++ {
		b.WriteString(`"k": ` + strings.Repeat("1", i+1) + ", ")
	}
	b.WriteString(`"confidence": 1, "summary": "s", "next_step_context": "", "pad": "` + strings.Repeat("y", 2000) + `"}`)
	res := Parse(b.String(), ParseOptions{})
	if len(res.Errors) != 29 {
		t.Fatalf("errors = %d, want 29 duplicate keys", len(res.Errors))
	}
	fb := res.Feedback()
	if n := strings.Count(fb, "\n- "); n != feedbackMaxBullets+1 {
		t.Errorf("feedback has %d bullets, want %d and a summary line", n, feedbackMaxBullets+1)
	}
	if !strings.Contains(fb, "- and 9 more problems") || !strings.Contains(fb, "first 600 of") || len(fb) > 4000 {
		t.Errorf("feedback not capped (%d bytes):\n%s", len(fb), fb)
	}
}

func TestEmptyReasoningAndArtifacts(t *testing.T) {
	res := Parse(`{"confidence": 1, "summary": "s", "next_step_context": "", "reasoning": {}, "artifacts": {}}`, ParseOptions{})
	if !res.OK || res.Output.Reasoning == nil || res.Output.Artifacts == nil {
		t.Fatalf("%v %+v", res.Errors, res.Output)
	}
	b, _ := res.Output.MarshalJSON()
	if string(b) != `{"confidence":1,"summary":"s","next_step_context":"","proceed":true,"reasoning":{},"artifacts":{}}` {
		t.Errorf("MarshalJSON = %s", b)
	}
}

// TestDocListsFlagsAndCodes keeps the package documentation in step with
// the flags and codes Parse reports.
func TestDocListsFlagsAndCodes(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range FlagNames() {
		if !strings.Contains(string(doc), "//\t"+name+" ") {
			t.Errorf("doc.go does not document flag %s", name)
		}
	}
	for code := range knownCodes {
		if !strings.Contains(string(doc), "//\t"+code+" ") {
			t.Errorf("doc.go does not document code %s", code)
		}
	}
}
