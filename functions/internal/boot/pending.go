package boot

import (
	"context"
	"sync"
	"time"
)

// Pending is a value a function reads over the network while its start
// goes on (a secret it needs before it takes work): the round trip
// overlaps the rest of the start instead of following it.
type Pending[T any] struct {
	done chan struct{}
	v    T
	err  error
	// again reads once more, in line, with a bound of its own (Await).
	again func() (T, error)
}

// Read starts read in a goroutine, its context bounded by SecretTimeout.
// Call it as early in main as what read needs allows, and Wait where the
// value is first needed, before Serve (a read that fails then still fails
// the start: Check exits, as it did when it was read in line), or serve
// the handler wrapped with Await, which waits in the first invocation.
func Read[T any](read func(context.Context) (T, error)) *Pending[T] {
	return readWithin(SecretTimeout, read)
}

func readWithin[T any](d time.Duration, read func(context.Context) (T, error)) *Pending[T] {
	once := func() (T, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return read(ctx)
	}
	p := &Pending[T]{done: make(chan struct{}), again: once}
	go func() {
		defer close(p.done)
		p.v, p.err = once()
	}()
	return p
}

// Wait blocks until the read has returned, then returns what it returned.
// It may be called more than once.
func (p *Pending[T]) Wait() (T, error) {
	<-p.done
	return p.v, p.err
}

// Await wraps h so that the function's first invocation waits for p
// before h runs: what p reads is handed to use, once, and every
// invocation runs h only after use has returned. A read that failed is
// made once more, in line (logged as a warning with msg); one that fails
// again logs msg with its error and exits (as Check does), so the
// function answers nothing without the value, as when the start waited
// for it.
//
// Serving with Await instead of waiting before Serve lets the read overlap
// the Lambda runtime's start and its first request for work (a round
// trip of its own, about half a millisecond on a fresh process) instead
// of preceding them. The read still begins at start and a failed one
// still stops the function before it answers; the failure is then
// reported in the first invocation (Runtime.ExitError) rather than the
// init phase, and the next invocation starts the function again. The
// second read is for an environment Lambda froze once the runtime asked
// for work with the first read still in flight (an environment
// initialised ahead of its first invocation): a read that timed out or
// lost its connection there is made again when the invocation arrives.
func Await[T, In, Out any](f *Function, p *Pending[T], msg string, use func(T), h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	ready := sync.OnceFunc(func() {
		v, err := p.Wait()
		if err != nil {
			f.Log.Warn(msg+": read again", "err", err)
			v, err = p.again()
		}
		f.Check(err, msg)
		use(v)
	})
	return func(ctx context.Context, in In) (Out, error) {
		ready()
		return h(ctx, in)
	}
}
