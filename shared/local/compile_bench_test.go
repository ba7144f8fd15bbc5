package local

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCompile compiles a 100-step pipeline file as Run does: every
// time (no BuildID); from the definition cache's file, as a new process
// does; and from the compile the Runner keeps in memory, as later runs
// in one process do (its inputs unchanged).
func BenchmarkCompile(b *testing.B) {
	src, _ := benchSource(100, 0)
	for _, c := range []struct {
		name, build string
		forget      bool
	}{{"every-time", "", false}, {"cache-file", "bench", true}, {"in-memory", "bench", false}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "bench.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				b.Fatal(err)
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
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/100, "µs/step")
		})
	}
}
