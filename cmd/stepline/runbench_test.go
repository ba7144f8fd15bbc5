package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/internal/testenv"
)

// BenchmarkRunCommand runs `stepline run FILE --responses R --json` of
// the 100-step scripted pipeline in-process, its definition cache warm
// (one run before the timer): what the command costs besides the
// process's start, under the test binary's collector and processors (the
// env has neither startHeap nor oneProcessor). Run it under -cpuprofile
// to see the command's fixed costs (the compile from the cache, opening
// and closing the store, the first run's template parses, the report).
func BenchmarkRunCommand(b *testing.B) {
	dir := b.TempDir()
	const n = 100
	var r strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&r, "s%d:\n  - '{\"confidence\": 0.9, \"summary\": \"step %d\", \"next_step_context\": \"\"}'\n", i, i)
	}
	pipe := filepath.Join(dir, "bench.yaml")
	replies := filepath.Join(dir, "replies.yaml")
	if err := os.WriteFile(pipe, []byte(testenv.BenchPipeline(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(replies, []byte(r.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{"run", pipe, "--responses", replies, "--json", "--dir", filepath.Join(dir, ".stepline")}
	runOnce := func() {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
		if code != exitOK || !strings.Contains(out.String(), `"status": "completed"`) {
			b.Fatalf("exit %d: %s%s", code, errOut.String(), out.String())
		}
	}
	runOnce() // the definition cache
	b.ResetTimer()
	for b.Loop() {
		runOnce()
	}
}
