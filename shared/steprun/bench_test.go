package steprun

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// BenchmarkStep measures a sequential step's overhead outside the model
// call — render, parse, decide, record to SQLite — with scripted replies,
// as the number of earlier steps in the context grows. It reports the
// median per step besides the mean.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("earlier=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			rs, err := executor.ParseResponses("bench.yaml", []byte(
				`bench: ['{"confidence": 0.9, "summary": "looks fine", "next_step_context": "ok", "service": "api"}']`))
			if err != nil {
				b.Fatal(err)
			}
			prov := &recordingProviders{inner: executor.NewRegistry(executor.Deps{Responses: rs}),
				usage: llmoutput.Usage{InputTokens: 100, OutputTokens: 20}}
			h := &Handler{Store: st, Executors: prov}
			steps := make(map[string]json.RawMessage, n)
			for i := range n {
				steps[fmt.Sprintf("step-%d", i)] = json.RawMessage(fmt.Sprintf(
					`{"confidence":0.8,"summary":"summary of step %d","next_step_context":"context %d","items":[1,2,3]}`, i, i))
			}
			req := newRequest(b, task.ModeStep, seqStep("bench",
				"Service {{ service }} ({{ severity }}): {{ steps.step_0.summary }} / {{ steps['step-5'].next_step_context }} / {{ steps.step_9.confidence }}"))
			req.Pipeline.Include = []string{"severity", "labels.service"}
			req.Steps = steps
			req.Run.StartedAt = time.Now().UTC().Format(time.RFC3339Nano)
			durs := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = rs.Restore(nil)
				req.Attempt = i + 1
				start := time.Now()
				resp, err := h.Respond(ctx, req)
				durs = append(durs, time.Since(start))
				if err != nil || resp.Status != task.StatusCompleted {
					b.Fatalf("step: %v %v", resp.Status, err)
				}
			}
			b.StopTimer()
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
		})
	}
}
