package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stepline/stepline/internal/heap"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// throughputSteps is the length of the runs BenchmarkThroughput drives.
const throughputSteps = 10

// BenchmarkThroughput drives ten-step runs of scripted steps (answered
// at once by a fixed reply, as in BenchmarkRun) with 1, 10 or 100 runs in
// flight, in this process (Runner.Start from as many goroutines) and
// through `stepline serve`'s HTTP API (POST /pipelines/bench/runs on a
// loopback listener; a run counts when its last history event is
// durable, and the timer stops once the server settled every run). It
// reports runs per second, the process's CPU time per run (getrusage:
// user + system, every goroutine of the process, the HTTP client's too)
// and the store's write transactions per run (fewer than one per step
// when group commits carry several runs' writes). In-process runs under
// the collector's defaults (or GOGC and GOMEMLIMIT as the environment
// sets them), serve under stepline serve's settings (throughputServe).
func BenchmarkThroughput(b *testing.B) {
	for _, mode := range []string{"inprocess", "serve"} {
		for _, inflight := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/inflight=%d", mode, inflight), func(b *testing.B) {
				var start func(i int) error
				var settle func()
				var r *Runner
				if mode == "inprocess" {
					r, start = throughputInProcess(b)
				} else {
					r, start, settle = throughputServe(b, inflight)
				}
				var next atomic.Int64
				cpu0, commits0 := cpuTime(b), r.Store.Commits()
				b.ResetTimer()
				t0 := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, inflight)
				for w := 0; w < inflight; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							if err := start(i); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				if settle != nil {
					settle()
				}
				elapsed := time.Since(t0)
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				cpu, commits := cpuTime(b)-cpu0, r.Store.Commits()-commits0
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
				b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "CPU-ms/run")
				b.ReportMetric(float64(commits)/float64(b.N), "commits/run")
			})
		}
	}
}

// throughputInProcess returns a function that runs run i to its end
// with Runner.Start.
func throughputInProcess(b *testing.B) (*Runner, func(i int) error) {
	dir := b.TempDir()
	sm, _ := benchPipeline(b, dir, throughputSteps, 0)
	r := openBench(b, dir, nil)
	return r, func(i int) error {
		o, err := r.Start(context.Background(), sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%d", i))
		if err != nil {
			return err
		}
		if o.Status != store.RunCompleted {
			return fmt.Errorf("run %d: %+v", i, o)
		}
		return nil
	}
}

// throughputServe starts a Server over the bench pipeline and returns a
// function that starts run i over HTTP and waits until its last history
// event is durable, and one that waits for the server to settle every
// run.
//
// The process's collector runs with stepline serve's settings
// (heap.Server, as the command applies them at start; GOGC or GOMEMLIMIT
// in the environment win there as here), and is set back after.
func throughputServe(b *testing.B, inflight int) (r *Runner, start func(i int) error, settle func()) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)
	heap.Server(heap.ServeGCPercent, heap.ServeMemoryLimit, os.Getenv)
	b.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	dir := b.TempDir()
	pipelines := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pipelines, 0o755); err != nil {
		b.Fatal(err)
	}
	src, _ := benchSource(throughputSteps, 0)
	if err := os.WriteFile(filepath.Join(pipelines, "bench.yaml"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	ended := map[string]chan struct{}{}
	done := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		c, ok := ended[id]
		if !ok {
			c = make(chan struct{})
			ended[id] = c
		}
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	r, err = Open(ctx, Config{
		Dir: filepath.Join(dir, "state"),
		Handler: func(st *sqlite.Store) StepHandler {
			return &steprun.Handler{Store: st, Executors: answer{}}
		},
		OnEvent: func(runID string, e store.HistoryEvent) {
			switch e.Type {
			case "ExecutionSucceeded", "ExecutionFailed", "ExecutionTimedOut":
				close(done(runID))
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	// Room for the runs still settling after their last event, so that
	// the limiter never answers 429 here.
	srv, err := NewServer(ctx, ServerConfig{Runner: r, PipelinesDir: pipelines, MaxRuns: 2*inflight + 16})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() {
		_ = hs.Close()
		cancel()
		srv.Wait()
		r.Close()
	})
	url := "http://" + ln.Addr().String() + "/pipelines/bench/runs"
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: inflight}}
	start = func(i int) error {
		resp, err := client.Post(url, "application/json", strings.NewReader(fmt.Sprintf(`{"summary": "run %d"}`, i)))
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var d struct {
			Status string `json:"status"`
			RunID  string `json:"run_id"`
		}
		if err := json.Unmarshal(body, &d); err != nil || resp.StatusCode != http.StatusAccepted || d.RunID == "" {
			return fmt.Errorf("run %d: %d %s (%v)", i, resp.StatusCode, body, err)
		}
		select {
		case <-done(d.RunID):
			return nil
		case <-time.After(time.Minute):
			return fmt.Errorf("run %s did not end within a minute", d.RunID)
		}
	}
	settle = func() {
		// Every run's Start has returned (its run record settled) once
		// the server's limiter holds none.
		for srv.limiter.Active() > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return r, start, settle
}

// cpuTime is the CPU time this process used so far (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
