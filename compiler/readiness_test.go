package compiler

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/store"
)

func TestReadinessDefaults(t *testing.T) {
	f, ds := load(t, `name: p
steps: [{name: a, executor: scripted}]
readiness:
  operational: {min_runs: 5}
  confidence: {min_confidence: 0.8, min_runs: 3}
  accuracy: {min_marked: 4}
  calibration: {}
`)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %q", ds)
	}
	r := f.Pipeline.Readiness
	if r == nil || r.Operational == nil || r.Confidence == nil || r.Accuracy == nil || r.Calibration == nil {
		t.Fatalf("readiness %+v", r)
	}
	if o := r.Operational; o.MinRuns != 5 || strings.Join(o.AcceptableStatuses, ",") != "completed" || o.MaxAgeDays != 0 || o.RequireCurrentConfig {
		t.Errorf("operational %+v", o)
	}
	if c := r.Confidence; c.MinConfidence != 0.8 || c.MinRuns != 3 || c.RequireCurrentConfig {
		t.Errorf("confidence %+v", c)
	}
	if a := r.Accuracy; a.MinAccuracy != nil || a.MinMarked != 4 || a.MinHumanMarked != 0 || !a.RequireCurrentConfig {
		t.Errorf("accuracy %+v", a)
	}
	if c := r.Calibration; c.NMin != 20 || c.BinWidth != 0.1 || c.MaxDivergence != 0.15 || c.RequireOwnEvidence || !c.RequireCurrentConfig {
		t.Errorf("calibration %+v", c)
	}
	f, ds = load(t, "name: p\nsteps: [{name: a, executor: scripted}]\nreadiness: {operational: null, confidence: {min_confidence: 0.5, min_runs: 1}}\n")
	if len(ds) != 0 || f.Pipeline.Readiness.Operational != nil || f.Pipeline.Readiness.Confidence == nil {
		t.Errorf("null tier: %q %+v", ds, f.Pipeline.Readiness)
	}
}

func TestReadinessDiagnostics(t *testing.T) {
	const head = "name: p\nsteps: [{name: a, executor: scripted}]\nreadiness:\n"
	cases := []struct {
		name string
		src  string
		want []string // every diagnostic, in order
	}{
		{"min_runs required", head + "  operational: {max_age_days: 3}\n", []string{`p.yaml:4:16: readiness.operational: missing required field "min_runs"`}},
		{"min_runs at 0", head + "  operational: {min_runs: 0}\n", []string{`p.yaml:4:27: readiness.operational.min_runs: 0 is out of range: 1..1000`}},
		{"min_runs at 1", head + "  operational: {min_runs: 1}\n", nil},
		{"min_runs at the runs read", head + "  operational: {min_runs: 1000}\n", nil},
		{"min_runs above the runs read", head + "  operational: {min_runs: 1001}\n", []string{`p.yaml:4:27: readiness.operational.min_runs: 1001 is out of range: 1..1000`}},
		{"unknown status", head + "  operational: {min_runs: 2, acceptable_statuses: [done]}\n", []string{`p.yaml:4:52: readiness.operational.acceptable_statuses.0 "done" is not one of completed, stopped, escalated, aborted, failed`}},
		{"min_confidence above 1", head + "  confidence: {min_confidence: 1.01, min_runs: 2}\n", []string{`p.yaml:4:32: readiness.confidence.min_confidence: 1.01 is out of range: 0..1`}},
		{"min_marked required", head + "  accuracy: {min_accuracy: 0.9}\n", []string{`p.yaml:4:13: readiness.accuracy: missing required field "min_marked"`}},
		{"unknown tier field", head + "  accuracy: {min_marked: 2, min_acuracy: 0.9}\n", []string{`p.yaml:4:29: unknown field "min_acuracy" in readiness.accuracy`}},
		{"bin_width does not divide 1", head + "  calibration: {bin_width: 0.15, max_divergence: 0.1}\n", []string{`p.yaml:4:28: readiness.calibration.bin_width: 0.15 does not divide 1 into equal bins (use 0.05, 0.1, 0.2, 0.25, 0.5 or 1)`}},
		{"bin_width 0", head + "  calibration: {bin_width: 0}\n", []string{`p.yaml:4:28: readiness.calibration.bin_width: 0 does not divide 1 into equal bins (use 0.05, 0.1, 0.2, 0.25, 0.5 or 1)`}},
		{"bin_width above 1", head + "  calibration: {bin_width: 2}\n", []string{`p.yaml:4:28: readiness.calibration.bin_width: 2 does not divide 1 into equal bins (use 0.05, 0.1, 0.2, 0.25, 0.5 or 1)`}},
		{"bin_width 1 divides 1", head + "  calibration: {bin_width: 1, max_divergence: 0.5}\n", nil},
		{"bin_width 0.25 divides 1", head + "  calibration: {bin_width: 0.25, max_divergence: 0.2}\n", nil},
		{"calibration needs the current config", head + "  calibration: {require_current_config: false}\n", []string{`p.yaml:4:41: readiness.calibration.require_current_config cannot be false: a calibration holds for one configuration only (the accuracy tier judges results across configurations)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			var errs []string
			for _, d := range got {
				if !strings.Contains(d, ": warning: ") {
					errs = append(errs, d)
				}
			}
			if strings.Join(errs, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", errs, c.want)
			}
		})
	}
}

func TestReadinessWarnings(t *testing.T) {
	const model = "name: p\nsteps: [{name: a, executor: scripted}]\nreadiness:\n"
	const human = "name: p\nsteps: [{name: a, executor: human}, {name: b, executor: webhook, executor_config: {url: 'https://x.example'}}]\nreadiness:\n"
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"nothing to judge", human + "  confidence: {min_confidence: 0.8, min_runs: 3}\n  accuracy: {min_marked: 3}\n  operational: {min_runs: 2}\n", []string{
			`p.yaml:4:15: warning: readiness.confidence: no step of this pipeline records a confidence of its own (human, webhook, notify and sub-pipeline steps do not), so the tier can never be met`,
			`p.yaml:5:13: warning: readiness.accuracy: no step of this pipeline records a confidence of its own (human, webhook, notify and sub-pipeline steps do not), so the tier can never be met`,
		}},
		{"a model branch is judged", "name: p\nsteps:\n  - {name: a, executor: human}\n  - parallel: {name: g, steps: [{name: b, executor: human}, {name: c, executor: scripted}]}\nreadiness:\n  accuracy: {min_marked: 3}\n", nil},
		{"one run decides", model + "  confidence: {min_confidence: 0.8}\n", []string{
			`p.yaml:4:15: warning: readiness.confidence has no min_runs: a single run's confidence decides the tier`,
		}},
		{"human marks above marks", model + "  accuracy: {min_marked: 3, min_human_marked: 4}\n", []string{
			`p.yaml:4:47: warning: readiness.accuracy.min_human_marked 4 is above min_marked 3: at least 4 marked results are needed, so min_marked never decides`,
		}},
		{"human marks at marks", model + "  accuracy: {min_marked: 3, min_human_marked: 3}\n", nil},
		{"coarse bins", model + "  calibration: {bin_width: 0.25, max_divergence: 0.15}\n", []string{
			`p.yaml:4:28: warning: readiness.calibration.bin_width 0.25 is wider than 0.2: bins that coarse can hide a divergence`,
		}},
		{"bins at 0.2", model + "  calibration: {bin_width: 0.2, max_divergence: 0.1}\n", nil},
		{"divergence below half a bin", model + "  calibration: {bin_width: 0.2, max_divergence: 0.09}\n", []string{
			`p.yaml:4:49: warning: readiness.calibration.max_divergence 0.09 is below half the bin_width 0.2: a bin's own width can exceed it, so even a well calibrated step would fail`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n  got  %q\n  want %q", got, c.want)
			}
		})
	}
}

// TestReadinessLeavesDefinition: readiness is advisory; it never reaches
// the compiled state machine, so adding or changing it keeps the
// definition and its config fingerprint. A change to a step changes both.
func TestReadinessLeavesDefinition(t *testing.T) {
	const base = "name: p\nsteps: [{name: a, executor: scripted, prompt_template: hello}]\n"
	compile := func(src string) ([]byte, string, *File) {
		t.Helper()
		f, sm, ds := Build("p.yaml", []byte(src), nil)
		if ds.HasErrors() {
			t.Fatalf("%v", ds)
		}
		def, err := MarshalCompact(sm)
		if err != nil {
			t.Fatal(err)
		}
		return def, ConfigOf(sm), f
	}
	plain, cfg, f := compile(base)
	if len(cfg) != 12 || f.Pipeline.Config != cfg {
		t.Fatalf("config %q, pipeline's %q", cfg, f.Pipeline.Config)
	}
	with, cfg2, _ := compile(base + "readiness: {operational: {min_runs: 3}, calibration: {n_min: 5}}\n")
	if !bytes.Equal(plain, with) || cfg2 != cfg {
		t.Errorf("readiness changed the definition (config %s → %s)", cfg, cfg2)
	}
	_, cfg3, _ := compile(strings.Replace(base, "hello", "hello!", 1))
	if cfg3 == cfg {
		t.Errorf("a changed prompt kept the config %s", cfg)
	}
	if maxReadinessRuns != store.MaxRunLimit {
		t.Errorf("readiness ranges end at %d, but ListRuns reads %d", maxReadinessRuns, store.MaxRunLimit)
	}
}
