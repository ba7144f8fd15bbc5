package local

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// benchPipeline writes a pipeline of n scripted steps, each reading the
// one before it, and the replies for `runs` runs of it.
func benchPipeline(b testing.TB, dir string, n, runs int) (*asl.StateMachine, *executor.Responses) {
	b.Helper()
	p, r := benchSource(n, runs)
	f, ds := compiler.Load("bench.yaml", []byte(p))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	sm, ds := compiler.LowerOptions(f, compiler.Options{MaxDefinitionBytes: benchDefinitionBytes})
	if sm == nil {
		b.Fatal(ds)
	}
	def, _ := compiler.Marshal(sm)
	if err := os.MkdirAll(filepath.Join(dir, "definitions"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "definitions", "bench.asl.json"), def, 0o644); err != nil {
		b.Fatal(err)
	}
	// Decode what another process would load; the engine validates it
	// (asl.Parse would refuse more than Step Functions' size limit).
	var parsed asl.StateMachine
	if err := json.Unmarshal(def, &parsed); err != nil {
		b.Fatal(err)
	}
	responses, err := executor.ParseResponses("bench.yaml", []byte(r))
	if err != nil {
		b.Fatal(err)
	}
	return &parsed, responses
}

// benchSource is the source of a pipeline of n scripted steps, each
// reading the one before it, and replies for `runs` runs of it.
func benchSource(n, runs int) (pipeline, replies string) {
	var r strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&r, "s%d:\n", i)
		for j := 0; j < runs; j++ {
			fmt.Fprintf(&r, "  - '{\"confidence\": 0.9, \"summary\": \"step %d of run %d\", \"next_step_context\": \"\"}'\n", i, j)
		}
	}
	return testenv.BenchPipeline(n), r.String()
}

// benchDefinitionBytes lets the benchmarks compile and run machines over
// Step Functions' definition limit.
const benchDefinitionBytes = 64 << 20

// answer is a model that gives the same valid reply to every call: the
// benchmarks measure everything but the model.
type answer struct{}

func (answer) Provider(executor.Call) (llmoutput.Provider, error) { return answer{}, nil }

func (answer) Complete(context.Context, llmoutput.Request) (llmoutput.Completion, error) {
	return llmoutput.Completion{
		Content:      `{"confidence": 0.9, "summary": "done", "next_step_context": "go on"}`,
		FinishReason: llmoutput.FinishStop, Model: "fixed", Provider: "bench",
	}, nil
}

func openBench(b testing.TB, dir string, responses *executor.Responses) *Runner {
	b.Helper()
	return openBenchWith(b, dir, responses, "")
}

// openBenchBuild is openBench with the definition cache of build.
func openBenchBuild(b testing.TB, dir, build string) *Runner {
	b.Helper()
	return openBenchWith(b, dir, nil, build)
}

func openBenchWith(b testing.TB, dir string, responses *executor.Responses, build string) *Runner {
	b.Helper()
	var providers steprun.Providers = executor.NewRegistry(executor.Deps{Responses: responses})
	if responses == nil {
		providers = answer{}
	}
	r, err := Open(context.Background(), Config{
		Dir:                dir,
		MaxDefinitionBytes: benchDefinitionBytes,
		BuildID:            build,
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: providers}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkRun runs scripted pipelines end to end through the compiled
// state machine: engine, checkpoints, step function and step records on
// SQLite. It reports the time per step; 1,000 steps exceed Step
// Functions' definition limit and run only locally.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			sm, _ := benchPipeline(b, dir, n, 0)
			r := openBench(b, dir, nil)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				o, err := r.Start(ctx, sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%d", i))
				if err != nil || o.Status != store.RunCompleted {
					b.Fatalf("run %d: %v %+v", i, err, o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/step")
		})
	}
}

// TestConcurrentRuns runs 100 runs at once on one SQLite file: none may
// fail with a lock error.
func TestConcurrentRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("100 runs")
	}
	dir := t.TempDir()
	const runs = 100
	sm, responses := benchPipeline(t, dir, 5, runs)
	r := openBench(t, dir, responses)
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := r.Start(context.Background(), sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%03d", i))
			if err == nil && o.Status != store.RunCompleted {
				err = fmt.Errorf("run %d: %s %s", i, o.Status, o.Reason)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got, err := r.Store.ListRuns(context.Background(), store.RunFilter{Status: store.RunCompleted, Limit: 1000})
	if err != nil || len(got) != runs {
		t.Fatalf("%d completed runs, want %d (%v)", len(got), runs, err)
	}
}

var _ = engine.StatusSucceeded
