package boot

import (
	"context"
	"time"
)

// Pending is a value a function reads over the network while its start
// goes on (a secret it needs before it takes work): the round trip
// overlaps the rest of the start instead of following it.
type Pending[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// Read starts read in a goroutine, its context bounded by SecretTimeout.
// Call it as early in main as what read needs allows, and Wait where the
// value is first needed, before Serve: a read that fails then still fails
// the start (Check exits), as it did when it was read in line.
func Read[T any](read func(context.Context) (T, error)) *Pending[T] {
	return readWithin(SecretTimeout, read)
}

func readWithin[T any](d time.Duration, read func(context.Context) (T, error)) *Pending[T] {
	p := &Pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		p.v, p.err = read(ctx)
	}()
	return p
}

// Wait blocks until the read has returned, then returns what it returned.
// It may be called more than once.
func (p *Pending[T]) Wait() (T, error) {
	<-p.done
	return p.v, p.err
}
