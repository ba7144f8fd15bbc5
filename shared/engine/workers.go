package engine

import (
	"sync"
	"time"
)

// workerIdle is how long a worker goroutine waits for more work before it
// exits.
const workerIdle = 5 * time.Second

// workers runs task invocations on goroutines that are kept for a while
// after their work. An invocation runs deep code (a step function, SQLite
// underneath), and a fresh goroutine would grow its stack from the
// smallest size again for every task.
type workers struct {
	mu      sync.Mutex
	idle    []chan func() // each idle worker's inbox
	idleFor time.Duration // 0: workerIdle
}

// run runs fn on an idle worker, or on a new one.
func (w *workers) run(fn func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		inbox := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		inbox <- fn // buffered: never blocks
		return
	}
	w.mu.Unlock()
	inbox := make(chan func(), 1)
	inbox <- fn
	go w.work(inbox)
}

func (w *workers) work(inbox chan func()) {
	idleFor := w.idleFor
	if idleFor <= 0 {
		idleFor = workerIdle
	}
	timer := time.NewTimer(idleFor)
	defer timer.Stop()
	for {
		(<-inbox)()
		w.mu.Lock()
		w.idle = append(w.idle, inbox)
		w.mu.Unlock()
		timer.Reset(idleFor)
		select {
		case fn := <-inbox:
			inbox <- fn // run it at the top of the loop
		case <-timer.C:
			w.mu.Lock()
			for i, c := range w.idle {
				if c == inbox {
					w.idle = append(w.idle[:i], w.idle[i+1:]...)
					w.mu.Unlock()
					return
				}
			}
			w.mu.Unlock()
			// run took this worker meanwhile: its work is on the way.
		}
	}
}
