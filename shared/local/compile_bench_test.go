package local

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCompile compiles a 100-step pipeline file as Run does: every
// time (no BuildID), and from the definition cache (its inputs
// unchanged).
func BenchmarkCompile(b *testing.B) {
	src, _ := benchSource(100, 0)
	for _, c := range []struct{ name, build string }{{"every-time", ""}, {"cached", "bench"}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "bench.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			r := openBenchBuild(b, filepath.Join(dir, ".stepline"), c.build)
			for b.Loop() {
				if _, _, _, err := r.Compile(path); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/100, "µs/step")
		})
	}
}
