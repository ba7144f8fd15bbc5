package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (w *workers) idleCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.idle)
}

func TestWorkersRunEverythingOnceAndExitWhenIdle(t *testing.T) {
	w := &workers{idleFor: 20 * time.Millisecond}
	var ran atomic.Int64
	var wg sync.WaitGroup
	for round := range 3 {
		for range 50 {
			wg.Add(1)
			w.run(func() {
				defer wg.Done()
				ran.Add(1)
			})
		}
		wg.Wait()
		if got, want := ran.Load(), int64(50*(round+1)); got != want {
			t.Fatalf("round %d: %d functions ran, want %d", round, got, want)
		}
	}
	// Sequential work reuses one worker.
	deadline := time.Now().Add(time.Second)
	for w.idleCount() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := w.idleCount()
	for range 20 {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		for w.idleCount() < before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	if got := w.idleCount(); got > before {
		t.Errorf("%d idle workers after sequential work, %d before", got, before)
	}
	// Idle workers exit.
	deadline = time.Now().Add(5 * time.Second)
	for w.idleCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := w.idleCount(); n != 0 {
		t.Errorf("%d workers still idle", n)
	}
	// And new work still runs.
	done := make(chan struct{})
	w.run(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("work after the workers exited did not run")
	}
}
