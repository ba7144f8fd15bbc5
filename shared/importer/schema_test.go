package importer

import (
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler"
)

// TestBuiltinFieldsInSchema: the fields kept without a schema are all
// fields of Stepline's pipeline format (the schema may have more).
func TestBuiltinFieldsInSchema(t *testing.T) {
	got := schemaFields(compiler.Schema())
	for def, fields := range builtinFields {
		for _, f := range fields {
			if !slices.Contains(got[def], f) {
				t.Errorf("%s.%s is kept without a schema, but the schema has no such field", def, f)
			}
		}
	}
}

// TestSchemaDrivesFields: a field the schema defines is kept, with
// config.yaml's calibration defaults; without it, the field is dropped.
func TestSchemaDrivesFields(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"config.yaml":      "calibration: {n_min: 30, bin_width: 0.2, cache_ttl_seconds: 300}\n",
		"pipelines/p.yaml": "name: p\nsteps:\n  - name: a\n    executor: gateway\n    calibration: {enforce: true, on_uncalibrated: escalate}\n  - name: b\n    executor: gateway\n    calibration: {enforce: true, n_min: 5}\n",
	})
	schema := []byte(`{"properties": {"name": {}, "steps": {}},
		"definitions": {"step": {"properties": {"name": {}, "executor": {}, "calibration": {}}},
			"calibration": {"properties": {"enforce": {}, "on_uncalibrated": {}, "n_min": {}, "bin_width": {}}}}}`)
	for _, tt := range []struct {
		name   string
		schema []byte
		want   string
		kept   bool
	}{
		{"calibration defined", schema, "calibration: {enforce: true, on_uncalibrated: escalate, n_min: 30, bin_width: 0.2}", true},
		{"calibration not defined", nil, "# stepline import: dropped calibration", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			res, err := Import(src, dest, Options{Schema: tt.schema})
			if err != nil {
				t.Fatal(err)
			}
			got := readTree(t, dest)["pipelines/p.yaml"]
			if !strings.Contains(got, tt.want) {
				t.Errorf("p.yaml lacks %q:\n%s", tt.want, got)
			}
			if tt.kept && !strings.Contains(got, "calibration: {enforce: true, n_min: 5, bin_width: 0.2}") {
				t.Errorf("a step's own n_min was overridden:\n%s", got)
			}
			dropped := 0
			for _, n := range res.Notes {
				if n.Level == Dropped && strings.HasPrefix(n.Msg, "calibration") {
					dropped++
				}
			}
			// cache_ttl_seconds always; n_min, bin_width and the two
			// steps' blocks without the schema.
			if want := map[bool]int{true: 1, false: 5}[tt.kept]; dropped != want {
				t.Errorf("%d calibration notes dropped, want %d: %v", dropped, want, res.Notes)
			}
		})
	}
}
