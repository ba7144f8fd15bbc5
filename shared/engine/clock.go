package engine

import (
	"context"
	"time"
)

// Clock is the engine's time: Wait states, Retry backoff, task timeouts and
// the timestamps of history events all go through it, so tests can run them
// without waiting.
type Clock interface {
	Now() time.Time
	// Sleep blocks for d or until ctx is done, whichever comes first, and
	// returns ctx.Err() in the second case. d <= 0 returns at once.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d or ctx.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Rand is the source of retry jitter; *math/rand/v2.Rand satisfies it.
type Rand interface {
	// Float64 returns a number in [0, 1).
	Float64() float64
}
