package local

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// BenchmarkSettleNotifying measures what firing the notifications of runs
// closed outside a step costs a run's end: the same one-step pipeline
// (no notifications configured, so nothing is sent) on two runners, one
// without Config.Notifications and one with it, run by turns in one loop
// so that both see the same machine load. "escalated by its step" pays
// one more read of the run record; "ended before any step" (a rerun from
// a step that does not exist) also reads the pipeline's facts from its
// definition. It reports each runner's time per run and the median of
// the pairs' ratios (with/without), each pair run back to back, in turns
// first.
func BenchmarkSettleNotifying(b *testing.B) {
	for _, c := range []struct {
		name, steps string
		input       string
		status      store.RunStatus
	}{
		{"escalated by its step", "  - {name: a, executor: scripted, confidence_threshold: 0.95}\n", "", store.RunEscalated},
		{"ended before any step", "  - {name: a, executor: scripted}\n", `{"trigger": {}, "rerun": {"from_step": "nope"}}`, store.RunFailed},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			open := func(notifications bool) *Runner {
				dir := b.TempDir()
				cfg := Config{Dir: dir, Handler: func(st *sqlite.Store) StepHandler {
					return &steprun.Handler{Store: st, Executors: answer{}}
				}}
				if notifications {
					d := &notify.Dispatcher{}
					cfg.Notifications = func(StepHandler) notify.Notifier { return d }
				}
				r, err := Open(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { r.Close() })
				return r
			}
			path := filepath.Join(b.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte("name: p\nsteps:\n"+c.steps), 0o644); err != nil {
				b.Fatal(err)
			}
			var opts []RunOption
			if c.input != "" {
				opts = append(opts, func(o *runOptions) { o.input = json.RawMessage(c.input) })
			}
			runners := [2]*Runner{open(false), open(true)}
			var took [2]time.Duration
			var ratios []float64
			for i := 0; b.Loop(); i++ {
				var pair [2]time.Duration
				for j := range runners {
					k := (i + j) % 2 // each goes first every other time
					r := runners[k]
					sm, name, _, err := r.Compile(path)
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					o, err := r.Start(ctx, sm, name, json.RawMessage(`{}`), fmt.Sprintf("run-%d", i), opts...)
					pair[k] = time.Since(start)
					if err != nil || o.Status != c.status {
						b.Fatalf("run %d: %v %+v", i, err, o)
					}
				}
				took[0] += pair[0]
				took[1] += pair[1]
				ratios = append(ratios, float64(pair[1])/float64(pair[0]))
			}
			slices.Sort(ratios)
			n := float64(b.N)
			b.ReportMetric(float64(took[0].Microseconds())/n, "µs/run-without")
			b.ReportMetric(float64(took[1].Microseconds())/n, "µs/run-with")
			b.ReportMetric(ratios[len(ratios)/2], "median-with/without")
		})
	}
}
