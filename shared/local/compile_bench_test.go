package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
)

// BenchmarkCompile compiles a 100-step pipeline file as Run does: every
// time (no BuildID); from the definition cache's file, as a new process
// does; and from the compile the Runner keeps in memory, as later runs
// in one process do (its inputs unchanged). Its first case is what
// stepline validate does with the file (gate.CompileFile: parse, check,
// lower, the definition's limits), and every case reports its time as a
// multiple of that one's in the same run (×validate; issue #22's target
// for compiling is at most 1).
func BenchmarkCompile(b *testing.B) {
	src, _ := benchSource(100, 0)
	var validate float64 // µs per step
	for _, c := range []struct {
		name, build string
		forget      bool
	}{{"validate", "", false}, {"every-time", "", false}, {"cache-file", "bench", true}, {"in-memory", "bench", false}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "bench.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			if c.name == "validate" {
				for b.Loop() {
					if _, sm, ds, err := gate.CompileFile(path, settings.Defaults{}); err != nil || sm == nil {
						b.Fatal(err, ds)
					}
				}
				validate = float64(b.Elapsed().Microseconds()) / float64(b.N) / 100
				b.ReportMetric(validate, "µs/step")
				return
			}
			r := openBenchBuild(b, filepath.Join(dir, ".stepline"), c.build)
			for b.Loop() {
				if c.forget {
					r.defMu.Lock()
					r.defs = nil
					r.defMu.Unlock()
				}
				if _, _, _, err := r.Compile(path); err != nil {
					b.Fatal(err)
				}
			}
			if c.build != "" && r.compiles.Load() != 1 {
				b.Fatalf("compiled %d times, want once", r.compiles.Load())
			}
			perStep := float64(b.Elapsed().Microseconds()) / float64(b.N) / 100
			b.ReportMetric(perStep, "µs/step")
			if validate > 0 {
				b.ReportMetric(perStep/validate, "×validate")
			}
		})
	}
}
