package infra_test

import (
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// TestStateMachinePrefixOutput: the stack tells `stepline serve --aws` how
// its state machines are named, beside its table.
func TestStateMachinePrefixOutput(t *testing.T) {
	outputs := *examples.get(t).template.FindOutputs(jsii.String("*"), nil)
	o := outputs["StateMachinePrefix"]
	if o == nil {
		t.Fatalf("no StateMachinePrefix output among %v", outputs)
	}
	if got, _ := (*o)["Value"].(string); got != "Stepline" {
		t.Errorf("StateMachinePrefix = %v, want %q", (*o)["Value"], "Stepline")
	}
	if outputs["TableName"] == nil {
		t.Error("no TableName output")
	}
}
