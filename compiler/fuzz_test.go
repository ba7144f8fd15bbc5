package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/yamldoc/yamldoctest"
)

// FuzzLoad feeds arbitrary bytes to the front end: it must never panic, and
// every diagnostic must be positioned in the file.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("../pipelines/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: p\nsteps:\n  - {name: a, executor: scripted, when: \"steps.x.y == 1\"}\n"))
	f.Add([]byte("name: p\nsteps: [{parallel: {name: g, steps: [{name: a, executor: human}]}}]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("name: p\nsteps:\n  - &s {name: a, executor: scripted, <<: *s}\n"))
	f.Add(yamldoctest.Laughs(9, 9))
	f.Add([]byte("name: p\nversion: .nan\nsteps: [{name: a, executor: scripted, timeout_seconds: 1e400, retry: {attempts: 0x7fffffffffffffff}}]\n"))
	f.Add([]byte("name: p\nsteps:\n  - fan_out: {name: f, over: '{{ steps.a.b', executor: scripted}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		var ds Diagnostics
		done := make(chan struct{})
		go func() { _, ds = Load("f.yaml", src); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Load takes over 5 s on %q", src)
		}
		for _, d := range ds {
			if d.Pos.File != "f.yaml" || d.Pos.Line < 1 || d.Pos.Col < 1 {
				t.Fatalf("unpositioned diagnostic %q (%+v)", d.String(), d.Pos)
			}
			if d.Msg == "" {
				t.Fatalf("empty diagnostic at %v", d.Pos)
			}
		}
	})
}

// genPipeline builds a pipeline of n sequential steps, each referring to
// the one before it in its prompt and when:, with a parallel group and a
// fan-out every 50 steps.
func genPipeline(n int) []byte {
	var b strings.Builder
	b.WriteString("name: generated\nvars: {env: prod}\ncontext_template: {include: [labels.service]}\nsteps:\n")
	b.WriteString("  - {name: s0, executor: scripted, prompt_template: \"start {{ service }}\"}\n")
	for i := 1; i < n; i++ {
		prev := fmt.Sprintf("s%d", i-1)
		switch {
		case i%50 == 0:
			fmt.Fprintf(&b, "  - parallel:\n      name: s%d\n      join: weighted_average\n      steps:\n", i)
			fmt.Fprintf(&b, "        - {name: s%d-a, executor: scripted, weight: 2, prompt_template: \"{{ steps.%s.summary }}\"}\n", i, prev)
			fmt.Fprintf(&b, "        - {name: s%d-b, executor: scripted, prompt_template: \"{{ steps.%s.summary }}\"}\n", i, prev)
		case i%50 == 25:
			fmt.Fprintf(&b, "  - fan_out: {name: s%d, over: steps.%s.items, executor: scripted, prompt_template: \"{{ item }}\"}\n", i, prev)
		default:
			fmt.Fprintf(&b, "  - name: s%d\n    executor: scripted\n    when: steps.%s.proceed and steps.%s.confidence >= 0.5 and vars.env == \"prod\"\n", i, prev, prev)
			fmt.Fprintf(&b, "    prompt_template: |\n      Previous: {{ steps.%s.summary }}\n      Context: {{ steps.%s.next_step_context }}\n", prev, prev)
			fmt.Fprintf(&b, "    retry: {attempts: 2, delay_seconds: 1}\n")
		}
	}
	return []byte(b.String())
}

func TestGeneratedPipelineIsValid(t *testing.T) {
	_, ds := Load("gen.yaml", genPipeline(120))
	if len(ds) != 0 {
		t.Fatalf("diagnostics:\n%s", ds)
	}
}

// BenchmarkValidate measures what stepline validate does with generated
// pipelines: Build (parse, check, lower, the definition's limits; package
// gate adds the executor checks). The time per step must stay flat from
// 100 to 10,000 steps. Past about 400 such steps the definition is over
// Step Functions' limit: that is the one error validate may report.
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		src := genPipeline(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, _, ds := Build("gen.yaml", src, nil); ds.HasErrors() {
					errs := ds.Errors()
					if len(errs) != 1 || !strings.Contains(errs[0].Msg, "over Step Functions' 1048576-byte limit") {
						b.Fatal(errs)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/step")
		})
	}
}
