package task

import (
	"reflect"
	"testing"

	"github.com/stepline/stepline/shared/pipeline"
)

// TestRunBindings: the run's part of every template's variables, which
// a step's and a notification's bindings both start from.
func TestRunBindings(t *testing.T) {
	for _, tc := range []struct {
		stage   pipeline.Stage
		testing bool
	}{{pipeline.StageProduction, false}, {pipeline.StageTesting, true}, {"", true}} {
		p := Pipeline{Name: "triage", Stage: tc.stage, Include: []string{"metadata.region"}, Vars: map[string]string{"team": "from-vars"}}
		b := map[string]any{}
		p.RunBindings(b, "run-1", "first", map[string]any{"team": "checkout", "metadata": map[string]any{"region": "eu"}})
		want := map[string]any{
			pipeline.BindRunID: "run-1", pipeline.BindPipelineName: "triage", pipeline.BindCurrentStep: "first",
			pipeline.BindTesting: tc.testing, pipeline.BindLabels: map[string]any{},
			pipeline.BindTeam: "from-vars", // vars win
			"region":          "eu", "metadata": map[string]any{"region": "eu"},
		}
		if !reflect.DeepEqual(b, want) {
			t.Errorf("stage %q: %v\nwant %v", tc.stage, b, want)
		}
	}
}
