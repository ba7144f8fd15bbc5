package compiler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// TestCalibrationDiagnostics: what validate says of calibration blocks,
// each problem positioned.
func TestCalibrationDiagnostics(t *testing.T) {
	const head = "name: p\nsteps:\n  - name: a\n    executor: scripted\n"
	tests := []struct {
		name, src string
		want      []string
	}{
		{"defaults", head + "    calibration: {}\n", nil},
		{"a full block", head + "    calibration: {enforce: true, bin_width: 0.25, n_min: 5, on_uncalibrated: proceed}\n", nil},
		{"bin_width 1", head + "    calibration: {bin_width: 1}\n", nil},
		{"bin_width 0.05", head + "    calibration: {bin_width: 0.05}\n", nil},
		{"bin_width that does not divide 1", head + "    calibration: {bin_width: 0.3}\n", []string{
			`p.yaml:5:30: step "a": calibration.bin_width: 0.3 does not divide 1: the bins must tile 0..1 (0.05, 0.1, 0.2, 0.25, 0.5 and 1 do)`}},
		{"bin_width 0", head + "    calibration: {bin_width: 0}\n", []string{
			`p.yaml:5:30: step "a": calibration.bin_width: 0 is out of range: above 0, up to 1`}},
		{"n_min 0", head + "    calibration: {n_min: 0}\n", []string{
			`p.yaml:5:26: step "a": calibration.n_min: 0 is out of range: 1..5000`}},
		{"n_min a fraction", head + "    calibration: {n_min: 2.5}\n", []string{
			`p.yaml:5:26: step "a": calibration.n_min must be a whole number, not number`}},
		{"unknown policy", head + "    calibration: {on_uncalibrated: abort}\n", []string{
			`p.yaml:5:36: step "a": calibration.on_uncalibrated "abort" is not one of proceed, escalate`}},
		{"unknown field", head + "    calibration: {binwidth: 0.1}\n", []string{
			`p.yaml:5:19: step "a": unknown field "binwidth" in calibration (did you mean "bin_width"?)`}},
		{"enforce and escalate warns of fresh installs", head + "    calibration: {enforce: true, on_uncalibrated: escalate, n_min: 3}\n", []string{
			`p.yaml:5:51: warning: step "a": calibration enforces with on_uncalibrated: escalate, so every run escalates at this step until its bin holds 3 labelled executions of the current configuration (a fresh install, or a changed model, prompt or agent, has none): give feedback on escalated runs (stepline feedback) to build the history, or use on_uncalibrated: proceed until it exists`}},
		{"escalate in shadow does not warn", head + "    calibration: {on_uncalibrated: escalate}\n", nil},
		{"on a human step", "name: p\nsteps:\n  - name: a\n    executor: human\n    calibration: {}\n", []string{
			`p.yaml:5:18: step "a": calibration weighs an answer a model or a webhook gave; a human step's outcome is decided by its approver`}},
		{"in a branch", "name: p\nsteps:\n  - parallel: {name: g, steps: [{name: b, executor: scripted, calibration: {}}]}\n", []string{
			`p.yaml:3:63: branch "b" of parallel "g": unknown field "calibration": calibration belongs to sequential steps`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ds := Build("p.yaml", []byte(tt.src), nil)
			var got []string
			if len(ds) > 0 {
				got = strings.Split(strings.TrimSuffix(ds.String(), "\n"), "\n")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestCalibrationModel: the defaults reach the model and the step's
// compiled configuration.
func TestCalibrationModel(t *testing.T) {
	src := "name: p\nsteps:\n  - name: a\n    executor: scripted\n    calibration: {}\n  - name: b\n    executor: scripted\n    calibration: {enforce: true, bin_width: 0.5, n_min: 3, on_uncalibrated: escalate}\n"
	f, sm, ds := Build("p.yaml", []byte(src), nil)
	if sm == nil {
		t.Fatalf("does not compile:\n%s", ds)
	}
	a := f.Pipeline.Steps[0].(*pipeline.Step).Calibration
	if a == nil || a.Enforce || a.BinWidth != 0.1 || a.NMin != 20 || a.OnUncalibrated != "proceed" {
		t.Errorf("defaults: %+v", a)
	}
	b := f.Pipeline.Steps[1].(*pipeline.Step).Calibration
	if b == nil || !b.Enforce || b.BinWidth != 0.5 || b.NMin != 3 || b.OnUncalibrated != "escalate" {
		t.Errorf("written: %+v", b)
	}
	def, err := json.Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(def), `"calibration":{"bin_width":0.5,"enforce":true,"n_min":3,"on_uncalibrated":"escalate"}`) ||
		!strings.Contains(string(def), `"calibration":{"bin_width":0.1,"n_min":20,"on_uncalibrated":"proceed"}`) {
		t.Errorf("the state machine does not carry the calibration blocks:\n%s", def)
	}
}
