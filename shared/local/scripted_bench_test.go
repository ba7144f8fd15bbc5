package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// BenchmarkRunScripted is what stepline run --responses does in its
// process, per step: Run on the pipeline file (its definition from the
// definition cache), a scripted run whose step function answers from the
// replies file and records how many it used. Set beside BenchmarkRun, it
// shows what a scripted run costs more than a run whose model answers.
func BenchmarkRunScripted(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			src, replies := benchSource(n, 1)
			path, responses := filepath.Join(dir, "bench.yaml"), filepath.Join(dir, "replies.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(responses, []byte(replies), 0o644); err != nil {
				b.Fatal(err)
			}
			r, err := Open(context.Background(), Config{
				Dir:                filepath.Join(dir, ".stepline"),
				MaxDefinitionBytes: benchDefinitionBytes,
				BuildID:            "bench",
				Handler:            func(*sqlite.Store) StepHandler { return nil },
				Scripted: func(st *sqlite.Store, replies *executor.Responses) StepHandler {
					return &steprun.Handler{Store: st, Executors: executor.NewRegistry(executor.Deps{Responses: replies})}
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close() })
			ctx := context.Background()
			for b.Loop() {
				o, err := r.Run(ctx, path, nil, "", WithResponses(responses))
				if err != nil || o.Status != store.RunCompleted {
					b.Fatalf("run: %v %+v", err, o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/step")
		})
	}
}
