package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// BenchmarkFiveStepRun times the five-steps scenario in the box, warm (its
// emulators started by one run first), from StartExecution until the
// execution has ended. The target is under a second:
//
//	make e2e E2E_ARGS='-run ^$$ -bench FiveStepRun -benchtime 5x'
func BenchmarkFiveStepRun(b *testing.B) {
	h := box(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := filepath.Join(scenarioDir(), "five-steps")
	run := func(i int) time.Duration {
		sc := Scenario{Name: fmt.Sprintf("timing-%d", i), Dir: dir, Pipeline: "pipeline.yaml",
			Responses: filepath.Join(dir, "responses.yaml"), Event: filepath.Join(scenarioDir(), "event.json"), Want: store.RunCompleted}
		p, err := h.Prepare(sc)
		if err != nil {
			b.Fatal(err)
		}
		side, err := h.RunBox(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if side.Run.Status != store.RunCompleted || len(side.Steps) != 5 {
			b.Fatalf("run %s: %s with %d records", side.RunID, side.Run.Status, len(side.Steps))
		}
		return side.Duration
	}
	run(-1) // start the emulators
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += run(i)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/run")
}
