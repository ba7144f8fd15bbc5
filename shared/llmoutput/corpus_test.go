package llmoutput

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xeipuuv/gojsonschema"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of testdata/corpus")

// corpusCase is one file of testdata/corpus: header lines ("verdict:",
// "flags:", "codes:", "finish:", "escapes: on", "note:"), a line "---",
// then the raw reply, byte for byte. codes lists "path:code" ("code" for
// the reply as a whole). Accepted cases have a golden file holding the
// normalised output.
type corpusCase struct {
	name    string
	file    string
	raw     string
	verdict Outcome
	flags   []string
	codes   []string
	finish  string
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		head, raw, ok := strings.Cut(string(data), "\n---\n")
		if !ok {
			t.Fatalf("%s: no --- line", file)
		}
		c := corpusCase{name: strings.TrimSuffix(filepath.Base(file), ".txt"), file: file, raw: raw}
		for _, line := range strings.Split(head, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "verdict":
				c.verdict = Outcome(v)
			case "flags":
				c.flags = strings.Fields(v)
			case "codes":
				c.codes = strings.Fields(v)
			case "finish":
				c.finish = v
			case "escapes":
				c.raw = unescapeCorpus(t, raw)
			case "note":
			default:
				t.Fatalf("%s: unknown header %q", file, k)
			}
		}
		cases = append(cases, c)
	}
	if len(cases) < 60 {
		t.Fatalf("the corpus holds %d cases; it must hold at least 60", len(cases))
	}
	return cases
}

// unescapeCorpus reads \xHH, \uHHHH, \n and \\ in a case body, for bytes an
// editor would hide.
func unescapeCorpus(t testing.TB, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case 'x':
			n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in corpus: %v", err)
			}
			b.WriteByte(byte(n))
			i += 3
		case 'u':
			n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in corpus: %v", err)
			}
			b.WriteRune(rune(n))
			i += 5
		case 'n':
			b.WriteByte('\n')
			i++
		case '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func errorCodes(errs []FieldError) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		if e.Path == "" {
			out = append(out, e.Code)
		} else {
			out = append(out, e.Path+":"+e.Code)
		}
	}
	slices.Sort(out)
	return out
}

func TestCorpus(t *testing.T) {
	contract, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(ContractSchemaJSON()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			res := Parse(c.raw, ParseOptions{FinishReason: c.finish})
			if res.Outcome != c.verdict || res.OK != (c.verdict == Accepted) {
				t.Fatalf("outcome = %s (ok %v), want %s; errors %v", res.Outcome, res.OK, c.verdict, res.Errors)
			}
			if got, want := res.Flags, c.flags; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("flags = %v, want %v", got, want)
			}
			wantCodes := slices.Clone(c.codes)
			slices.Sort(wantCodes)
			if got := errorCodes(res.Errors); !slices.Equal(got, wantCodes) && !(len(got) == 0 && len(wantCodes) == 0) {
				t.Errorf("codes = %v, want %v (%v)", got, wantCodes, res.Errors)
			}
			if !res.OK {
				checkFeedback(t, res)
				return
			}
			got, err := res.Output.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(c.file, ".txt") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
				t.Errorf("output\n got %s\nwant %s", got, want)
			}
			if errs := res.Output.Validate(); len(errs) > 0 {
				t.Errorf("accepted output does not validate: %v", errs)
			}
			vr, err := contract.Validate(gojsonschema.NewBytesLoader(got))
			if err != nil || !vr.Valid() {
				t.Errorf("the published schema rejects the accepted output: %v %v", err, vr.Errors())
			}
			again := Parse(string(got), ParseOptions{})
			if !again.OK || len(again.Flags) != 0 {
				t.Fatalf("canonical output re-parses as %s with flags %v: %v", again.Outcome, again.Flags, again.Errors)
			}
			if round, _ := again.Output.MarshalJSON(); !bytes.Equal(round, got) {
				t.Errorf("round trip changed the output\n got %s\nwant %s", round, got)
			}
		})
	}
}

// checkFeedback asserts the shape of the re-ask message: one header, one
// bullet per error, the echo, one closing instruction.
func checkFeedback(t *testing.T, res Result) {
	t.Helper()
	fb := res.Feedback()
	lines := strings.Split(fb, "\n")
	if !strings.HasPrefix(lines[0], "Your previous reply") {
		t.Errorf("feedback header = %q", lines[0])
	}
	bullets := 0
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "- ") {
			break
		}
		bullets++
	}
	if bullets != len(res.Errors) {
		t.Errorf("feedback has %d bullets for %d errors:\n%s", bullets, len(res.Errors), fb)
	}
	for _, e := range res.Errors {
		if !strings.Contains(fb, e.Message) || !strings.Contains(fb, "["+e.Code+"]") {
			t.Errorf("feedback misses error %v:\n%s", e, fb)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Reply again") {
		t.Errorf("feedback closing = %q", last)
	}
	if strings.Count(fb, "Reply again") != 1 {
		t.Errorf("feedback has more than one closing instruction:\n%s", fb)
	}
}
