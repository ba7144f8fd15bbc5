package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/asl"
)

func TestCompactSize(t *testing.T) {
	cases := []struct{ name, in string }{
		{"empty object", `{}`},
		{"indented", "{\n  \"a\": [\n    1,\n    2\n  ],\n\t\"b\": null\r\n}"},
		{"spaces in strings", `{"Comment": "a b  c", "x": " { } "}`},
		{"escaped quotes and backslashes", `{"k": "say \"hi\" \\", "l": "\\\" still in"}`},
		{"unicode escapes", `["\u0022 ", "é ü"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(c.in)); err != nil {
				t.Fatal(err)
			}
			if got := compactSize([]byte(c.in)); got != want.Len() {
				t.Errorf("compactSize = %d, want %d (%s)", got, want.Len(), want.String())
			}
		})
	}
}

// TestCompileRefusesOverLimit checks the size compile measures against
// its limit: the definition's compact length.
func TestCompileRefusesOverLimit(t *testing.T) {
	def := &asl.StateMachine{QueryLanguage: "JSONata", StartAt: "Done", States: asl.States{}}
	if err := def.States.Add("Done", &asl.Succeed{Comment: "a comment  with   spaces"}); err != nil {
		t.Fatal(err)
	}
	raw, err := asl.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := compile(def, compact.Len()); err != nil {
		t.Errorf("at its compact size: %v", err)
	}
	if _, err := compile(def, compact.Len()-1); err == nil {
		t.Error("a byte over the limit is not refused")
	}
}

// BenchmarkProgram compiles a 300-state definition (linearDef: JSONata
// Output, Assign and Arguments in every state, the same few strings
// repeated, as in a compiled pipeline) as a process does before its first
// run of it: validation, the hash and every expression.
func BenchmarkProgram(b *testing.B) {
	def := linearDef(b, 300, true)
	for b.Loop() {
		if _, err := compile(def, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/300, "µs/state")
}

// BenchmarkProgramPipeline compiles, for the engine, the definition of a
// 100-step scripted pipeline (the one stepline run's figures use), as
// decoded from its cached text: what a new process does before its run
// starts.
func BenchmarkProgramPipeline(b *testing.B) {
	def := benchPipelineDef(b)
	for b.Loop() {
		if _, err := compile(def, 64<<20); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(def.States.Len()), "µs/state")
}

// benchPipelineDef is the definition of the 100-step scripted pipeline
// the figures of stepline run use, as decoded from its cached text.
func benchPipelineDef(b *testing.B) *asl.StateMachine {
	b.Helper()
	f, ds := compiler.Load("bench.yaml", []byte(testenv.BenchPipeline(100)))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	sm, ds := compiler.LowerOptions(f, compiler.Options{MaxDefinitionBytes: 64 << 20})
	if sm == nil {
		b.Fatal(ds)
	}
	raw, err := asl.Marshal(sm)
	if err != nil {
		b.Fatal(err)
	}
	def, err := asl.Decode(raw)
	if err != nil {
		b.Fatal(err)
	}
	return def
}
