package compiler

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// TestYAMLBounds: documents that would expand past yamldoc's bounds are
// refused before any walker follows an alias, positioned where they cross.
func TestYAMLBounds(t *testing.T) {
	const selfRef = "steps: &s [{name: a, executor: scripted, executor_config: {again: *s}}]"
	// x's list is at depth 5 (the mapping, steps, the step, its
	// executor_config, the list): its 97th bracket is at depth 101.
	const deep = "steps: [{name: a, executor: scripted, executor_config: {x: "
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		// The first *f on line 7 takes the running count past 1,000,000
		// (package yamldoc's TestBillionLaughs does the sum).
		{"billion laughs", yamldoctest.Laughs(9, 9), `p.yaml:7:8: alias "*f" expands the document past 1000000 nodes (an alias counts as a copy of the value it names)`},
		{"billion laughs in a step", []byte("name: p\nsteps:\n  - name: a\n    executor: scripted\n    executor_config:\n      " +
			strings.ReplaceAll(strings.TrimSuffix(string(yamldoctest.Laughs(9, 9)), "\n"), "\n", "\n      ") + "\n"),
			`p.yaml:12:14: alias "*f" expands the document past 1000000 nodes (an alias counts as a copy of the value it names)`},
		{"alias in its own anchor", []byte("name: &n p\n" + selfRef + "\n"),
			fmt.Sprintf(`p.yaml:2:%d: alias "*s" is inside the value it names: it would expand forever`, strings.Index(selfRef, "*s")+1)},
		{"merge of its own mapping", []byte("name: p\nsteps:\n  - &step\n    name: a\n    executor: scripted\n    <<: *step\n"),
			`p.yaml:6:9: alias "*step" is inside the value it names: it would expand forever`},
		{"nested too deep", []byte("name: p\n" + deep + strings.Repeat("[", 98) + strings.Repeat("]", 98) + "}}]\n"),
			fmt.Sprintf("p.yaml:2:%d: the document nests deeper than 100 levels", len(deep)+97)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			var ds Diagnostics
			yamldoctest.Cheap(t, func() { f, ds = Load("p.yaml", tt.src) })
			if got := strings.TrimSpace(ds.String()); got != tt.want {
				t.Errorf("diagnostics:\n  got  %s\n  want %s", got, tt.want)
			}
			if f != nil {
				t.Errorf("a refused document still has a model")
			}
		})
	}
}

// TestDepthWithinBound: nesting up to the bound still loads, and the
// free-form value keeps every level (toValue once cut it off silently).
func TestDepthWithinBound(t *testing.T) {
	// The mapping (1), steps (2), the step (3), executor_config (4), x's
	// list (5): 95 more lists put the innermost at 100.
	src := "name: p\nsteps: [{name: a, executor: scripted, executor_config: {x: " + strings.Repeat("[", 96) + strings.Repeat("]", 96) + "}}]\n"
	f, ds := Load("p.yaml", []byte(src))
	if ds.HasErrors() {
		t.Fatalf("diagnostics: %s", ds)
	}
	v := f.Pipeline.Steps[0].(*pipeline.Step).ExecutorConfig["x"]
	depth := 0
	for l, ok := v.([]any); ok; l, ok = v.([]any) {
		depth++
		if len(l) == 0 {
			break
		}
		v = l[0]
	}
	if depth != 96 {
		t.Errorf("executor_config.x nests %d lists, want 96", depth)
	}
}

// documented is the range of each numeric field as compiler/doc.go and
// the README give it.
var documented = map[string]struct {
	lo, hi string
	loOpen bool // lo itself is out of range
	whole  bool
	text   string // as messages write it
}{
	"version":                              {"1", "2147483647", false, true, "1..2147483647"},
	"trigger.dedup.window_seconds":         {"0", "31536000", false, true, "0..31536000"},
	"durable.max_resume_age_seconds":       {"1", "31536000", false, true, "1..31536000"},
	"budget.max_tokens":                    {"1", "9007199254740991", false, true, "1..9007199254740991"},
	"budget.max_usd":                       {"0", "1000000", true, false, "above 0, up to 1000000"},
	"budget.max_cost":                      {"0", "1000000", true, false, "above 0, up to 1000000"},
	"confidence_threshold":                 {"0", "1", false, false, "0..1"},
	"timeout_seconds":                      {"1", "99999999", false, true, "1..99999999"},
	"on_failure.webhook.timeout_seconds":   {"1", "45", false, true, "1..45"},
	"retry.attempts":                       {"1", "100", false, true, "1..100"},
	"retry.delay_seconds":                  {"0", "99999999", false, false, "0..99999999"},
	"loop_until.confidence":                {"0", "1", false, false, "0..1"},
	"loop_until.max_iterations":            {"1", "100", false, true, "1..100"},
	"verifier.veto_floor":                  {"0", "1", false, false, "0..1"},
	"verifier.trigger.confidence_below":    {"0", "1", false, false, "0..1"},
	"verifier.trigger.confidence_above":    {"0", "1", false, false, "0..1"},
	"weight":                               {"0", "1000000", true, false, "above 0, up to 1000000"},
	"max_items":                            {"1", "1000", false, true, "1..1000"},
	"grounding.timeout_seconds":            {"1", "800", false, true, "1..800"},
	"grounding.max_trace_chars":            {"1", "1000000", false, true, "1..1000000"},
	"deterministic_checks.timeout_seconds": {"1", "99999999", false, true, "1..99999999"},
	"calibration.bin_width":                {"0", "1", true, false, "above 0, up to 1"},
	"calibration.n_min":                    {"1", "5000", false, true, "1..5000"},
}

// numericFields places every numeric field of the format in a pipeline:
// %s in src is where its value goes.
var numericFields = []struct {
	field, where, src string
}{
	{"version", "", "name: p\nversion: %s\nsteps: [{name: a, executor: scripted}]\n"},
	{"trigger.dedup.window_seconds", "", "name: p\ntrigger: {dedup: {window_seconds: %s}}\nsteps: [{name: a, executor: scripted}]\n"},
	{"durable.max_resume_age_seconds", "", "name: p\ndurable: {max_resume_age_seconds: %s}\nsteps: [{name: a, executor: scripted}]\n"},
	{"budget.max_tokens", "", "name: p\nbudget: {max_tokens: %s}\nsteps: [{name: a, executor: scripted}]\n"},
	{"budget.max_usd", "", "name: p\nbudget: {max_usd: %s}\nsteps: [{name: a, executor: scripted}]\n"},
	{"budget.max_cost", "", "name: p\nbudget: {max_cost: %s}\nsteps: [{name: a, executor: scripted}]\n"},
	{"confidence_threshold", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, confidence_threshold: %s}\n"},
	{"confidence_threshold", `parallel "g"`, "name: p\nsteps:\n  - parallel: {name: g, confidence_threshold: %s, steps: [{name: b, executor: scripted}]}\n"},
	{"confidence_threshold", `fan_out "f"`, "name: p\nsteps:\n  - {name: s, executor: scripted}\n  - fan_out: {name: f, over: steps.s.items, executor: scripted, confidence_threshold: %s}\n"},
	{"timeout_seconds", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: human, timeout_seconds: %s}\n"},
	{"timeout_seconds", `parallel "g"`, "name: p\nsteps:\n  - parallel: {name: g, timeout_seconds: %s, steps: [{name: b, executor: scripted}]}\n"},
	{"timeout_seconds", `branch "b" of parallel "g"`, "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: b, executor: pipeline, executor_config: {pipeline: c}, timeout_seconds: %s}]}\n"},
	{"timeout_seconds", `fan_out "f"`, "name: p\nsteps:\n  - {name: s, executor: scripted}\n  - fan_out: {name: f, over: steps.s.items, executor: pipeline, executor_config: {pipeline: c}, timeout_seconds: %s}\n"},
	{"on_failure.webhook.timeout_seconds", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, on_failure: {webhook: {url: \"http://h\", timeout_seconds: %s}}}\n"},
	{"retry.attempts", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, retry: {attempts: %s}}\n"},
	{"retry.delay_seconds", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, retry: {attempts: 1, delay_seconds: %s}}\n"},
	{"loop_until.confidence", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, confidence_threshold: 0, loop_until: {confidence: %s}}\n"},
	{"loop_until.max_iterations", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, loop_until: {confidence: 0.9, max_iterations: %s}}\n"},
	{"verifier.veto_floor", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, veto_floor: %s}}\n"},
	{"verifier.veto_floor", `branch "b" of parallel "g"`, "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: b, executor: scripted, verifier: {executor: scripted, veto_floor: %s}}]}\n"},
	{"verifier.veto_floor", `fan_out "f"`, "name: p\nsteps:\n  - {name: s, executor: scripted}\n  - fan_out: {name: f, over: steps.s.items, executor: scripted, verifier: {executor: scripted, veto_floor: %s}}\n"},
	{"verifier.trigger.confidence_below", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, trigger: {always: true, confidence_below: %s}}}\n"},
	{"verifier.trigger.confidence_above", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, verifier: {executor: scripted, trigger: {always: true, confidence_above: %s}}}\n"},
	{"weight", `branch "b" of parallel "g"`, "name: p\nsteps:\n  - parallel: {name: g, join: weighted_average, steps: [{name: b, executor: scripted, weight: %s}]}\n"},
	{"max_items", `fan_out "f"`, "name: p\nsteps:\n  - {name: s, executor: scripted}\n  - fan_out: {name: f, over: steps.s.items, executor: scripted, max_items: %s}\n"},
	// grounding.* placements compile in the repository's project, which
	// holds the judge (agents/grounding-judge).
	{"grounding.timeout_seconds", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, grounding: {timeout_seconds: %s}}\n"},
	{"grounding.max_trace_chars", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, grounding: {max_trace_chars: %s}}\n"},
	{"deterministic_checks.timeout_seconds", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, deterministic_checks: [{name: c, type: human, timeout_seconds: %s}]}\n"},
	{"calibration.bin_width", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, calibration: {bin_width: %s}}\n"},
	{"calibration.n_min", `step "a"`, "name: p\nsteps:\n  - {name: a, executor: scripted, calibration: {n_min: %s}}\n"},
}

// unit is how far "just below" and "just above" a bound are: 1 for whole
// numbers, a hundredth for confidences, a half otherwise.
func unit(whole bool, hi string) float64 {
	switch {
	case whole:
		return 1
	case hi == "1":
		return 0.01
	}
	return 0.5
}

func numText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// TestNumberRanges: every numeric field, below, at and above each bound,
// and not finite: the message names the field, the value and the range,
// at the value's position.
func TestNumberRanges(t *testing.T) {
	for _, nf := range numericFields {
		r, ok := documented[nf.field]
		if !ok {
			t.Fatalf("%s: no documented range", nf.field)
		}
		i := strings.Index(nf.src, "%s")
		line, col := strings.Count(nf.src[:i], "\n")+1, i-strings.LastIndex(nf.src[:i], "\n")
		prefix := ""
		if nf.where != "" {
			prefix = nf.where + ": "
		}
		out := func(v string) string {
			return fmt.Sprintf("p.yaml:%d:%d: %s%s: %s is out of range: %s", line, col, prefix, nf.field, v, r.text)
		}
		notFinite := func(v string) string {
			return fmt.Sprintf("p.yaml:%d:%d: %s%s must be a finite number, not %s", line, col, prefix, nf.field, v)
		}
		lo, _ := strconv.ParseFloat(r.lo, 64)
		hi, _ := strconv.ParseFloat(r.hi, 64)
		d := unit(r.whole, r.hi)
		cases := []struct{ name, value, want string }{
			{"below the low bound", numText(lo - d), out(numText(lo - d))},
			{"just above the low bound", numText(lo + d), ""},
			{"at the high bound", r.hi, ""},
			{"just below the high bound", numText(hi - d), ""},
			{"above the high bound", numText(hi + d), out(numText(hi + d))},
			{"far above, as a float", "1e300", out("1e300")},
			{"beyond a float", "1e400", out("1e400")},
			{"NaN", ".nan", notFinite(".nan")},
			{"infinity", ".inf", notFinite(".inf")},
			{"minus infinity", "-.inf", notFinite("-.inf")},
		}
		if r.loOpen {
			cases = append(cases, struct{ name, value, want string }{"at the low bound", r.lo, out(r.lo)})
		} else {
			cases = append(cases, struct{ name, value, want string }{"at the low bound", r.lo, ""})
		}
		for _, c := range cases {
			if nf.field == "calibration.bin_width" && c.name == "just below the high bound" {
				// In range, but 0.99 does not divide 1 (checkCalibration).
				c.want = fmt.Sprintf("p.yaml:%d:%d: %scalibration.bin_width: 0.99 does not divide 1: the bins must tile 0..1 (0.05, 0.1, 0.2, 0.25, 0.5 and 1 do)", line, col, prefix)
			}
			t.Run(nf.where+" "+nf.field+"/"+c.name, func(t *testing.T) {
				src := []byte(fmt.Sprintf(nf.src, c.value))
				_, ds := Load("p.yaml", src)
				if strings.HasPrefix(nf.field, "grounding.") {
					_, ds = loadIn("p.yaml", src, Env{Project: repositoryProject(t)})
				}
				got := strings.TrimSpace(ds.Errors().String())
				if got != c.want {
					t.Errorf("%s: %s\n  got  %q\n  want %q", nf.field, c.value, got, c.want)
				}
			})
		}
	}
}

// TestNumbersFromTheReport: the values a hostile tester found silently
// changed are errors now; values at the bounds reach the model unchanged.
func TestNumbersFromTheReport(t *testing.T) {
	const head = "name: p\nsteps:\n"
	tests := []struct {
		name, src string
		at        []string // where each error is: the first occurrence of the text
		want      []string // each error, after "p.yaml:line:col: "
	}{
		{"attempts past int32", head + "  - {name: a, executor: scripted, retry: {attempts: 2147483648}}\n",
			[]string{"2147483648"}, []string{`step "a": retry.attempts: 2147483648 is out of range: 1..100`}},
		{"timeout past int32", head + "  - {name: a, executor: human, timeout_seconds: 2147483648}\n",
			[]string{"2147483648"}, []string{`step "a": timeout_seconds: 2147483648 is out of range: 1..99999999`}},
		{"delay 1e300", head + "  - {name: a, executor: scripted, retry: {attempts: 2, delay_seconds: 1e300}}\n",
			[]string{"1e300"}, []string{`step "a": retry.delay_seconds: 1e300 is out of range: 0..99999999`}},
		{"NaN threshold", head + "  - {name: a, executor: scripted, confidence_threshold: .nan}\n",
			[]string{".nan"}, []string{`step "a": confidence_threshold must be a finite number, not .nan`}},
		{"max_tokens past int64", "name: p\nbudget: {max_tokens: 99999999999999999999}\nsteps: [{name: a, executor: scripted}]\n",
			[]string{"9999"}, []string{`budget.max_tokens: 99999999999999999999 is out of range: 1..9007199254740991`}},
		{"hex attempts", head + "  - {name: a, executor: scripted, retry: {attempts: 0x100}}\n",
			[]string{"0x100"}, []string{`step "a": retry.attempts: 0x100 is out of range: 1..100`}},
		{"a fraction in a whole-number field stays the schema's", head + "  - {name: a, executor: scripted, retry: {attempts: 2.5}}\n",
			[]string{"2.5"}, []string{`step "a": retry.attempts must be a whole number, not number`}},
		{"a quoted number stays a string", head + "  - {name: a, executor: scripted, retry: {attempts: \"1e400\"}}\n",
			[]string{`"1e400"`}, []string{`step "a": retry.attempts must be a whole number, not string`}},
		{"an unnamed step is named by its place", head + "  - {executor: scripted, retry: {attempts: 0}}\n",
			[]string{"{executor", "0}"}, []string{`step #1: missing required field "name"`, `step #1: retry.attempts: 0 is out of range: 1..100`}},
		{"an anchored value is judged in each field", head + "  - {name: a, executor: scripted, timeout_seconds: &n 200, retry: {attempts: *n}}\n",
			[]string{"&n"}, []string{`step "a": retry.attempts: 200 is out of range: 1..100`}},
		{"match operand NaN", "name: p\ntrigger: {match: {value: {gt: .nan}}}\nsteps: [{name: a, executor: scripted}]\n",
			[]string{".nan"}, []string{`trigger.match.value.gt must be a finite number, not .nan`}},
		{"match list infinity", "name: p\ntrigger: {match: {value: {in: [1, -.inf]}}}\nsteps: [{name: a, executor: scripted}]\n",
			[]string{"-.inf"}, []string{`trigger.match.value.in must be a finite number, not -.inf`}},
		{"match value infinity", "name: p\ntrigger: {match: {value: .inf}}\nsteps: [{name: a, executor: scripted}]\n",
			[]string{".inf"}, []string{`trigger.match.value must be a finite number, not .inf`}},
	}
	for _, tt := range tests {
		var want []string
		for i, msg := range tt.want {
			off := strings.Index(tt.src, tt.at[i])
			line, col := strings.Count(tt.src[:off], "\n")+1, off-strings.LastIndex(tt.src[:off], "\n")
			want = append(want, fmt.Sprintf("p.yaml:%d:%d: %s", line, col, msg))
		}
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Load("p.yaml", []byte(tt.src))
			if got := strings.TrimSpace(ds.Errors().String()); got != strings.Join(want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, want)
			}
		})
	}

	f, ds := Load("p.yaml", []byte(`name: p
version: 2147483647
budget: {max_tokens: 9007199254740991, max_usd: 1000000}
trigger: {dedup: {window_seconds: 31536000}}
durable: {max_resume_age_seconds: 31536000}
steps:
  - name: a
    executor: scripted
    retry: {attempts: 100, delay_seconds: 99999999}
    loop_until: {confidence: 1, max_iterations: 100}
    on_failure: {webhook: {url: "http://h", timeout_seconds: 45}}
  - {name: h, executor: human, timeout_seconds: 99999999}
  - fan_out: {name: f, over: steps.a.items, executor: scripted, max_items: 1000}
`))
	if ds.HasErrors() {
		t.Fatalf("diagnostics: %s", ds)
	}
	p := f.Pipeline
	a, h, fo := p.Steps[0].(*pipeline.Step), p.Steps[1].(*pipeline.Step), p.Steps[2].(*pipeline.FanOut)
	if p.Version != math.MaxInt32 || *p.Budget.MaxTokens != 1<<53-1 || *p.Budget.MaxUSD != 1e6 ||
		*p.Trigger.Dedup.WindowSeconds != 31536000 || *p.Durable.MaxResumeAgeSeconds != 31536000 ||
		a.Retry.Attempts != 100 || a.Retry.DelaySeconds != 99999999 || a.LoopUntil.MaxIterations != 100 ||
		a.OnFailure.Webhook.TimeoutSeconds != 45 || h.TimeoutSeconds != 99999999 || fo.MaxItems != 1000 {
		t.Errorf("values at the bounds changed: %+v %+v %+v %+v", p, a, h, fo)
	}
}

// TestNumberRangesMatchSchema: the schema states every range numRanges
// checks, with the same bounds, so that editors show them; and numRanges,
// the documented table and the placements above cover the same fields.
func TestNumberRangesMatchSchema(t *testing.T) {
	// Where each bounded number sits in the schema, and the fields that
	// use it.
	at := map[string][]string{
		"/properties/version": {"version"},
		"/properties/durable/oneOf/1/properties/max_resume_age_seconds":                {"durable.max_resume_age_seconds"},
		"/properties/budget/properties/max_tokens":                                     {"budget.max_tokens"},
		"/properties/budget/properties/max_usd":                                        {"budget.max_usd"},
		"/properties/budget/properties/max_cost":                                       {"budget.max_cost"},
		"/definitions/trigger/properties/dedup/properties/window_seconds":              {"trigger.dedup.window_seconds"},
		"/definitions/threshold":                                                       {"confidence_threshold", "loop_until.confidence", "verifier.veto_floor", "verifier.trigger.confidence_below", "verifier.trigger.confidence_above"},
		"/definitions/timeout":                                                         {"timeout_seconds"},
		"/definitions/onFailure/oneOf/1/properties/webhook/properties/timeout_seconds": {"on_failure.webhook.timeout_seconds"},
		"/definitions/step/properties/retry/properties/attempts":                       {"retry.attempts"},
		"/definitions/step/properties/retry/properties/delay_seconds":                  {"retry.delay_seconds"},
		"/definitions/step/properties/loop_until/properties/max_iterations":            {"loop_until.max_iterations"},
		"/definitions/branch/properties/weight":                                        {"weight"},
		"/definitions/fanOut/properties/max_items":                                     {"max_items"},
		"/definitions/grounding/properties/timeout_seconds":                            {"grounding.timeout_seconds"},
		"/definitions/grounding/properties/max_trace_chars":                            {"grounding.max_trace_chars"},
		"/definitions/deterministicCheck/properties/timeout_seconds":                   {"deterministic_checks.timeout_seconds"},
		"/definitions/calibration/properties/bin_width":                                {"calibration.bin_width"},
		"/definitions/calibration/properties/n_min":                                    {"calibration.n_min"},
	}
	var schema any
	if err := json.Unmarshal(Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	bounded := map[string]map[string]any{}
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch v := v.(type) {
		case map[string]any:
			_, lo := v["minimum"]
			_, loX := v["exclusiveMinimum"]
			_, hi := v["maximum"]
			if lo || loX || hi {
				bounded[ptr] = v
			}
			for k, c := range v {
				walk(ptr+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(ptr+"/"+strconv.Itoa(i), c)
			}
		}
	}
	walk("", schema)
	var fields []string
	for ptr, def := range bounded {
		names, ok := at[ptr]
		if !ok {
			t.Errorf("the schema bounds %s, which the test does not know", ptr)
			continue
		}
		for _, name := range names {
			fields = append(fields, name)
			r, ok := numRanges[name]
			if !ok {
				t.Errorf("%s: no range in numRanges", name)
				continue
			}
			lo, loOpen := def["minimum"], false
			if x, ok := def["exclusiveMinimum"]; ok {
				lo, loOpen = x, true
			}
			if lo != r.lo || loOpen != r.loOpen || def["maximum"] != r.hi {
				t.Errorf("%s: schema %v (exclusive %v) .. %v, numRanges %v", name, lo, loOpen, def["maximum"], r)
			}
			whole := def["type"] == "integer" || fmt.Sprint(def["type"]) == "[integer null]"
			if whole != r.whole {
				t.Errorf("%s: schema type %v, numRanges whole %v", name, def["type"], r.whole)
			}
			if d := documented[name]; d.text != r.String() {
				t.Errorf("%s: documented %q, numRanges %q", name, d.text, r)
			}
		}
	}
	for ptr := range at {
		if bounded[ptr] == nil {
			t.Errorf("the schema states no bounds at %s", ptr)
		}
	}
	var placed, ranged, docs []string
	for _, nf := range numericFields {
		placed = append(placed, nf.field)
	}
	for name := range numRanges {
		ranged = append(ranged, name)
	}
	for name := range documented {
		docs = append(docs, name)
	}
	for _, l := range [][]string{fields, placed, ranged, docs} {
		sort.Strings(l)
	}
	fields, placed = slices.Compact(fields), slices.Compact(placed)
	if !slices.Equal(fields, ranged) || !slices.Equal(placed, ranged) || !slices.Equal(docs, ranged) {
		t.Errorf("fields differ:\n  schema     %v\n  placed     %v\n  numRanges  %v\n  documented %v", fields, placed, ranged, docs)
	}
}
