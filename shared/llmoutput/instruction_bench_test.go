package llmoutput

import (
	"strings"
	"testing"
)

// TestSchemaInstructionKept: a schema's instruction is rendered once and
// kept, is the text Instruction renders for its spec, and follows a
// change of the schema's name or description.
func TestSchemaInstructionKept(t *testing.T) {
	s := ContractSchema()
	want := Instruction(ContractSpec())
	if got := s.Instruction(); got != want {
		t.Fatalf("instruction:\n%s\nwant:\n%s", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Instruction() }); n != 0 {
		t.Errorf("%v allocations to ask again, want 0 (the text is kept)", n)
	}
	s.Description = "Another answer"
	if got := s.Instruction(); !strings.Contains(got, "The object is: Another answer.") {
		t.Errorf("after a new description:\n%s", got)
	}
	s.Name = "other_name"
	got := s.Instruction()
	if !strings.Contains(got, "(other_name)") || !strings.Contains(got, "Another answer.") {
		t.Errorf("after a new name:\n%s", got)
	}
	if want := Instruction(s.Spec()); got != want {
		t.Errorf("kept instruction differs from a fresh one:\n%s\nwant:\n%s", got, want)
	}
}

// BenchmarkSchemaInstruction asks a schema for its instruction, as the
// runner does on every call.
func BenchmarkSchemaInstruction(b *testing.B) {
	s := ContractSchema()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Instruction()
	}
}
