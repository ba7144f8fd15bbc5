package e2e

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// FiveStepLimit is how long a 5-step run may take in the box, warm (its
// emulators started), from StartExecution until the execution has ended.
const FiveStepLimit = time.Second

// TestFiveStepRun times the five-steps scenario in the box: one run to
// start the emulators, then three; the fastest of the three must be
// under FiveStepLimit (the others show the machine's noise).
func TestFiveStepRun(t *testing.T) {
	h := box(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(scenarioDir(), "five-steps")
	var times []time.Duration
	for i := range 4 {
		sc := Scenario{Name: "timing-" + string(rune('a'+i)), Dir: dir, Pipeline: "pipeline.yaml",
			Responses: filepath.Join(dir, "responses.yaml"), Event: filepath.Join(scenarioDir(), "event.json"), Want: store.RunCompleted}
		p, err := h.Prepare(sc)
		if err != nil {
			t.Fatal(err)
		}
		side, err := h.RunBox(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if side.Run.Status != store.RunCompleted || len(side.Steps) != 5 {
			t.Fatalf("run %s: %s with %d records", side.RunID, side.Run.Status, len(side.Steps))
		}
		if i > 0 {
			times = append(times, side.Duration)
		}
	}
	sorted := append([]time.Duration(nil), times...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("5-step run in the box, warm: %v (fastest %v, median %v)", times, sorted[0], sorted[len(sorted)/2])
	if sorted[0] >= FiveStepLimit {
		t.Errorf("the fastest 5-step run took %v, limit %v", sorted[0], FiveStepLimit)
	}
}
