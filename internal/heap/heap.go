// Package heap sets the Go runtime of Stepline's commands, each for what
// it does: stepline run (and every command that drives a run: resume,
// approve, reject, rerun) lets a short process's heap grow before its first
// collection (Starting) and runs a machine that executes one state at a
// time on one processor (OneProcessor); stepline serve collects less often
// under a soft memory limit (Server). A GOGC, GOMEMLIMIT or GOMAXPROCS in
// the environment wins over each. The throughput benchmark of shared/local
// applies Server's settings to its serve mode, as the command does.
package heap

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// RunGoal is the heap stepline run lets grow before it collects garbage
// (Starting).
const RunGoal = 64 << 20

// ServeGCPercent and ServeMemoryLimit are the collector's settings for
// stepline serve (Server).
const (
	ServeGCPercent   = 400
	ServeMemoryLimit = 512 << 20
)

// Server sets the collector of a long-lived server: a target of
// percent (GOGC semantics: the heap grows to live × (1 + percent/100)
// before the next collection) and a soft memory limit of limit bytes
// (GOMEMLIMIT semantics: past it the runtime collects as often as it
// must, whatever the percent, up to about half the CPU). A run's
// garbage is short-lived and its live heap small (a few MiB for 100 runs
// in flight), so collecting every 100% of growth spends CPU for memory
// nobody needs; with the limit, a server whose live heap grows collects
// more often again before its memory does. A GOGC or GOMEMLIMIT in the
// environment (getenv) is left as it is, each on its own; percent ≤ 0 or
// limit ≤ 0 leaves that setting as it is.
func Server(percent int, limit int64, getenv func(string) string) {
	if getenv("GOGC") == "" && percent > 0 {
		debug.SetGCPercent(percent)
	}
	if getenv("GOMEMLIMIT") == "" && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
}

// Starting lets the process's heap grow to about goal bytes before its
// first garbage collection, and keeps each collection's target at goal
// until the live heap passes half of it; from then on it collects as
// GOGC=100 does. A short process such as stepline run otherwise collects
// a dozen times while its heap grows from the runtime's 4 MiB floor
// (about a tenth of a 100-step run's CPU), for a heap that stays far
// under goal; the peak grows by at most goal. The Go compiler starts the
// same way (cmd/compile's base.AdjustStartingHeap). A GOGC in the
// environment (getenv) is left as it is.
func Starting(goal uint64, getenv func(string) string) {
	if getenv("GOGC") != "" || goal == 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	const floor = 4 << 20 // the runtime's first target
	var adjust func()
	adjust = func() {
		metrics.Read(sample)
		live := uint64(floor)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > 0 {
			live = sample[0].Value.Uint64()
		}
		if live >= goal/2 {
			debug.SetGCPercent(100)
			return
		}
		// The next target, live × (1 + percent/100), is goal.
		debug.SetGCPercent(int((goal - live) * 100 / live))
		afterNextGC(adjust)
	}
	adjust()
}

// gcSentinel is an object no one keeps: its finalizer runs after the next
// collection. It is larger than the tiny allocator's 16 bytes and holds a
// pointer, so that it is an object of its own.
type gcSentinel struct {
	_ *byte
	_ [16]byte
}

// afterNextGC calls f, on the finalizer goroutine, after the next garbage
// collection.
func afterNextGC(f func()) {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) { f() })
}

// OneProcessor runs the process's goroutines on one processor
// (GOMAXPROCS=1), unless GOMAXPROCS is set in the environment (getenv).
//
// A run whose machine executes one state at a time hands its work from
// goroutine to goroutine (the engine's driver, the step's worker, the
// store's writer) without ever having two of them to run at once. With a
// second processor the runtime wakes a thread for it at each hand-off,
// which finds nothing to do, spins and sleeps again: a 100-step scripted
// run spent about 15% more CPU so (futex wake-ups, the scheduler's
// search for work, short sleeps), and took no less time. Waiting for a
// model, a tool or a shell check holds no processor, so such steps lose
// nothing.
func OneProcessor(getenv func(string) string) {
	if getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(1)
}
