package importer

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/compiler"
)

func TestLaxInt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" refused
	}{
		{"3", "3"}, {" 3 ", "3"}, {"+3", "3"}, {"-3", "-3"}, {"007", "7"}, {"0", "0"},
		{"3.0", "3"}, {"3.00", "3"}, {"3.5", ""}, {"3.", ""}, {".0", ""}, {"", ""}, {"+", ""},
		{"3e2", ""}, {"1_000", ""}, {"0x10", ""}, {"three", ""}, {"+-3", ""},
		{"9007199254740991", "9007199254740991"}, {"9007199254740992", "9007199254740992"}, {"9007199254740993", ""},
	} {
		got, ok := laxInt(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("laxInt(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestLaxFloat(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" refused
	}{
		{"0.7", "0.7"}, {" 0.7 ", "0.7"}, {".5", "0.5"}, {"5.", "5"}, {"+1", "1"}, {"-0.25", "-0.25"},
		{"1e3", "1000"}, {"1E-2", "0.01"}, {"0", "0"}, {"0.0001", "0.0001"}, {"0.00001", "1e-05"},
		{"1e15", "1e+15"}, {"999999999999999", "999999999999999"},
		{"1e999", ""}, {"inf", ""}, {"nan", ""}, {"0x1p3", ""}, {"1_0", ""}, {"", ""}, {".", ""}, {"-", ""}, {"e5", ""}, {"1e", ""},
	} {
		got, ok := laxFloat(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("laxFloat(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestLaxBool(t *testing.T) {
	for in, want := range map[string]int{ // 0 false, 1 true, -1 refused
		"0": 0, "f": 0, "N": 0, "no": 0, "Off": 0, "FALSE": 0,
		"1": 1, "T": 1, "y": 1, "ON": 1, "Yes": 1, "true": 1,
		"": -1, "2": -1, "yess": -1, " yes": -1, "00": -1, "nope": -1,
	} {
		b, ok := laxBool(in)
		got := -1
		if ok {
			got = map[bool]int{false: 0, true: 1}[b]
		}
		if got != want {
			t.Errorf("laxBool(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestImportLaxValues: strings the reference's Pydantic read as numbers
// or booleans are written as such where Stepline's schema wants one, and
// the pipeline validates; strings where a string belongs, in free maps,
// and text Pydantic refused stay as written.
func TestImportLaxValues(t *testing.T) {
	src, dest := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string]string{
		"config.yaml": "pipeline_config_dir: pipelines\nstep_library_dir: steps\n",
		"pipelines/p.yaml": `name: p
version: "2"
durable: "yes"
budget: {max_tokens: "1000", max_usd: " 2.5 "}
trigger: {match: {severity: "5"}, dedup: {enabled: "on", window_seconds: "60"}}
vars: {n: "5"}
steps:
  - name: a
    executor: gateway
    executor_config: {model: openai/gpt-4o-mini, base_url: "http://x", temperature: "0.2"}
    confidence_threshold: "0.7"
    timeout_seconds: 30.0
    on_abort: "1"
    retry: {attempts: "3", delay_seconds: "1.5"}
    loop_until: {confidence: ".9", max_iterations: "2"}
  - parallel:
      name: par
      confidence_threshold: "0.8"
      steps:
        - {name: b, executor: gateway, executor_config: {model: openai/gpt-4o-mini, base_url: "http://x"}, weight: "2"}
`,
		"steps/lib.yaml": "name: lib\nexecutor: gateway\nexecutor_config: {model: openai/gpt-4o-mini, base_url: \"http://x\"}\nconfidence_threshold: \"1\"\ntimeout_seconds: \"45\"\n",
	})
	res, err := Import(src, dest, Options{Schema: compiler.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	out := readTree(t, dest)
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(out["pipelines/p.yaml"]), &doc); err != nil {
		t.Fatal(err)
	}
	steps := doc["steps"].([]any)
	a := steps[0].(map[string]any)
	par := steps[1].(map[string]any)["parallel"].(map[string]any)
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", doc["version"], 2},
		{"durable", doc["durable"], true},
		{"budget.max_tokens", doc["budget"].(map[string]any)["max_tokens"], 1000},
		{"budget.max_usd", doc["budget"].(map[string]any)["max_usd"], 2.5},
		{"trigger.match.severity (a string to match)", doc["trigger"].(map[string]any)["match"].(map[string]any)["severity"], "5"},
		{"trigger.dedup.enabled", doc["trigger"].(map[string]any)["dedup"].(map[string]any)["enabled"], true},
		{"trigger.dedup.window_seconds", doc["trigger"].(map[string]any)["dedup"].(map[string]any)["window_seconds"], 60},
		{"vars.n (free map)", doc["vars"].(map[string]any)["n"], "5"},
		{"executor_config.temperature (the executor's)", a["executor_config"].(map[string]any)["temperature"], "0.2"},
		{"confidence_threshold", a["confidence_threshold"], 0.7},
		{"timeout_seconds 30.0", a["timeout_seconds"], 30},
		{"on_abort (a string field)", a["on_abort"], "1"},
		{"retry.attempts", a["retry"].(map[string]any)["attempts"], 3},
		{"retry.delay_seconds", a["retry"].(map[string]any)["delay_seconds"], 1.5},
		{"loop_until.confidence", a["loop_until"].(map[string]any)["confidence"], 0.9},
		{"loop_until.max_iterations", a["loop_until"].(map[string]any)["max_iterations"], 2},
		{"parallel.confidence_threshold", par["confidence_threshold"], 0.8},
		{"branch weight", par["steps"].([]any)[0].(map[string]any)["weight"], 2},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if lib := out["steps/lib.yaml"]; !strings.Contains(lib, "confidence_threshold: 1\n") || !strings.Contains(lib, "timeout_seconds: 45\n") {
		t.Errorf("library step not converted:\n%s", lib)
	}
	lax := 0
	for _, n := range res.Notes {
		if n.Kind == "lax value" {
			lax++
			if n.Level != Converted || n.Line == 0 {
				t.Errorf("note %+v", n)
			}
		}
	}
	if lax != 16 {
		t.Errorf("%d lax value notes, want 16: %v", lax, res.Notes)
	}
	if _, _, ds := compiler.Build("p.yaml", []byte(out["pipelines/p.yaml"]), nil); ds.HasErrors() {
		t.Errorf("imported pipeline not valid: %v", ds)
	}
}

// TestImportLaxValueRefused: text Pydantic refused stays a string, and
// validate says so where it is written.
func TestImportLaxValueRefused(t *testing.T) {
	src, dest := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string]string{
		"config.yaml":      "pipeline_config_dir: pipelines\n",
		"pipelines/p.yaml": "name: p\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {model: openai/gpt-4o-mini, base_url: \"http://x\"}\n    confidence_threshold: \"high\"\n    timeout_seconds: \"30.5\"\n",
	})
	if _, err := Import(src, dest, Options{Schema: compiler.Schema()}); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dest)["pipelines/p.yaml"]
	if !strings.Contains(got, `confidence_threshold: "high"`) || !strings.Contains(got, `timeout_seconds: "30.5"`) {
		t.Errorf("refused text was rewritten:\n%s", got)
	}
	_, _, ds := compiler.Build("p.yaml", []byte(got), nil)
	for _, field := range []string{"confidence_threshold", "timeout_seconds"} {
		if !strings.Contains(fmt.Sprint(ds), field) {
			t.Errorf("validate does not name %s: %v", field, ds)
		}
	}
}
