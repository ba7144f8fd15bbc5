package heap

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the GOGC percentage in force.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStarting(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	t.Run("GOGC set", func(t *testing.T) {
		debug.SetGCPercent(100)
		Starting(64<<20, func(k string) string { return map[string]string{"GOGC": "50"}[k] })
		if p := gcPercent(); p != 100 {
			t.Errorf("GOGC in the environment: percent %d, want it left at 100", p)
		}
	})
	t.Run("raised, then back to 100 past half the goal", func(t *testing.T) {
		debug.SetGCPercent(100)
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		goal := 4*ms.HeapAlloc + 64<<20
		Starting(goal, func(string) string { return "" })
		if p := gcPercent(); p <= 100 {
			t.Fatalf("percent %d after start, want it raised", p)
		}
		keep := make([][]byte, 0, 64)
		for range int(goal/2/(1<<20)) + 1 {
			keep = append(keep, make([]byte, 1<<20))
		}
		deadline := time.Now().Add(10 * time.Second)
		for gcPercent() != 100 && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		if p := gcPercent(); p != 100 {
			t.Errorf("percent %d with %d MiB live of a %d MiB goal, want 100", p, len(keep), goal>>20)
		}
		runtime.KeepAlive(keep)
	})
}

// memoryLimit reads the soft memory limit in force.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

func TestServer(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	defer debug.SetMemoryLimit(memoryLimit())
	for _, tc := range []struct {
		name      string
		env       map[string]string
		percent   int
		limit     int64
		wantPct   int
		wantLimit int64
	}{
		{name: "defaults", percent: 400, limit: 512 << 20, wantPct: 400, wantLimit: 512 << 20},
		{name: "GOGC set", env: map[string]string{"GOGC": "50"}, percent: 400, limit: 512 << 20, wantPct: 100, wantLimit: 512 << 20},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, percent: 400, limit: 512 << 20, wantPct: 400, wantLimit: 1 << 40},
		{name: "both set", env: map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, percent: 400, limit: 512 << 20, wantPct: 100, wantLimit: 1 << 40},
		{name: "zeros leave it", percent: 0, limit: 0, wantPct: 100, wantLimit: 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(1 << 40)
			Server(tc.percent, tc.limit, func(k string) string { return tc.env[k] })
			if p := gcPercent(); p != tc.wantPct {
				t.Errorf("percent %d, want %d", p, tc.wantPct)
			}
			if l := memoryLimit(); l != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", l, tc.wantLimit)
			}
		})
	}
}

func TestOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{name: "unset", want: 1},
		{name: "GOMAXPROCS set", env: map[string]string{"GOMAXPROCS": "3"}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(3)
			OneProcessor(func(k string) string { return tc.env[k] })
			if n := runtime.GOMAXPROCS(0); n != tc.want {
				t.Errorf("GOMAXPROCS %d, want %d", n, tc.want)
			}
		})
	}
}
