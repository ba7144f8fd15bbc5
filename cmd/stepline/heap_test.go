package main

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

func TestStartingHeap(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	t.Run("GOGC set", func(t *testing.T) {
		debug.SetGCPercent(100)
		startingHeap(64<<20, func(k string) string { return map[string]string{"GOGC": "50"}[k] })
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
		startingHeap(goal, func(string) string { return "" })
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
