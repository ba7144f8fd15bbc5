package asl_test

import (
	"encoding/json"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/asl"
)

// benchDefinition is the definition of a compiled pipeline of n steps,
// each reading the one before it.
func benchDefinition(b *testing.B, n int) (*asl.StateMachine, []byte) {
	b.Helper()
	f, ds := compiler.Load("bench.yaml", []byte(testenv.BenchPipeline(n)))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	sm, ds := compiler.LowerOptions(f, compiler.Options{MaxDefinitionBytes: 64 << 20})
	if sm == nil {
		b.Fatal(ds)
	}
	def, err := asl.Marshal(sm)
	if err != nil {
		b.Fatal(err)
	}
	return sm, def
}

// BenchmarkCodec measures writing and reading a 100-step pipeline's
// definition, the work a process does with a definition it loads from
// its cache (decode) and hashes (Marshal).
func BenchmarkCodec(b *testing.B) {
	sm, def := benchDefinition(b, 100)
	b.Run("Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(def)))
		for b.Loop() {
			if _, err := asl.Marshal(sm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(def)))
		for b.Loop() {
			var m asl.StateMachine
			if err := json.Unmarshal(def, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(def)))
		for b.Loop() {
			if _, err := asl.Decode(def); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(def)))
		for b.Loop() {
			if _, err := asl.Parse(def); err != nil {
				b.Fatal(err)
			}
		}
	})
}
