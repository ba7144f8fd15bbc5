package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// DefaultLease is how long a process's claim on a run lasts unless
// renewed; a process renews the claims of the runs it drives every third
// of it. A process that dies without releasing its claims stops blocking
// their runs after this long at most (at once on the same host, where its
// death is seen).
const DefaultLease = 30 * time.Second

// DrivenError is returned when a run is being driven by another process
// (or another Runner): its claim on the run holds.
type DrivenError struct {
	RunID string
	PID   int
	Host  string
	Until time.Time // the claim lapses then unless its holder renews it
}

func (e *DrivenError) Error() string {
	who := fmt.Sprintf("process %d", e.PID)
	if e.Host != "" {
		who += " on " + e.Host
	}
	return fmt.Sprintf("run %s is being driven by %s", e.RunID, who)
}

// driver is who this Runner claims runs as.
type driver struct {
	holder string // random per Runner: two Runners of one process are two drivers
	pid    int
	host   string
}

func newDriver() driver {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	pid := os.Getpid()
	return driver{holder: fmt.Sprintf("%s/%d/%s", host, pid, hex.EncodeToString(b[:])), pid: pid, host: host}
}

// claim is this Runner's claim on one run, shared by every caller that
// drives the run in this process at once.
//
// claimMu guards the map of claims and each claim's refs and releasing,
// never a store write: the claim is written (ClaimRun, ReleaseRun) outside
// it, so that runs starting and ending at once do not wait for each
// other's writes one by one. A caller that finds the claim being written
// waits for that write (ready), one that finds it being given up waits
// until it is (releasing) and claims the run anew.
type claim struct {
	refs      int
	ready     chan struct{}   // closed when the claim was written (or failed: err)
	err       error           // the claim's write failed; set before ready closes
	releasing chan struct{}   // non-nil while the claim is given up; closed then
	lost      context.Context // done when a renewal found the run claimed by another driver
	stop      chan struct{}   // closed to end the renewals
	done      chan struct{}   // closed when the renewals have ended
}

// hold claims runID for this Runner, or joins the claim it already holds,
// and returns a context derived from ctx that is cancelled if the claim is
// lost (this process stalled past its lease and another driver took the
// run), and the function that gives the claim up. A run claimed by a live
// driver is refused with a *DrivenError. The claim of a process that is
// gone is taken over: at once when it ran on this host (no process has its
// PID), else when its lease lapses.
func (r *Runner) hold(ctx context.Context, runID string) (context.Context, func(), error) {
	c, err := r.join(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithCancelCause(ctx)
	stopAfter := context.AfterFunc(c.lost, func() { cancel(errClaimLost) })
	var once sync.Once
	release := func() {
		once.Do(func() {
			stopAfter()
			cancel(nil)
			r.unhold(runID, c)
		})
	}
	return dctx, release, nil
}

// claimRun stores this Runner's claim on runID, taking over the claim of a
// driver found gone.
func (r *Runner) claimRun(ctx context.Context, runID string) error {
	now := time.Now()
	c := store.RunClaim{RunID: runID, Holder: r.driver.holder, PID: r.driver.pid, Host: r.driver.host, ExpiresAt: now.Add(r.lease)}
	stored, ok, err := r.Store.ClaimRun(ctx, c, "", now)
	if err != nil {
		return err
	}
	if !ok && r.gone(stored) {
		stored, ok, err = r.Store.ClaimRun(ctx, c, stored.Holder, now)
		if err != nil {
			return err
		}
	}
	if !ok {
		return &DrivenError{RunID: runID, PID: stored.PID, Host: stored.Host, Until: stored.ExpiresAt}
	}
	return nil
}

// gone reports whether the driver of a claim is known to be dead: it ran
// on this host and no process has its PID. A PID reused by another process
// since makes a dead driver look alive; its lease still lapses.
func (r *Runner) gone(c store.RunClaim) bool {
	if c.Host != r.driver.host || c.PID <= 0 || c.PID == r.driver.pid {
		return false
	}
	err := syscall.Kill(c.PID, 0)
	return err != nil && !errors.Is(err, syscall.EPERM)
}

// renew renews a claim every third of the lease until it is released, and
// marks it lost when another driver holds the run.
func (r *Runner) renew(runID string, c *claim, markLost context.CancelFunc) {
	defer close(c.done)
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		cl := store.RunClaim{RunID: runID, Holder: r.driver.holder, PID: r.driver.pid, Host: r.driver.host, ExpiresAt: now.Add(r.lease)}
		stored, ok, err := r.Store.ClaimRun(context.Background(), cl, "", now)
		switch {
		case err != nil:
			r.log.Warn("renew run claim", "run", runID, "err", err) // the next tick tries again
		case !ok:
			r.log.Error("run claim lost: another process drives the run; stopping here", "run", runID,
				"pid", stored.PID, "host", stored.Host)
			markLost()
			return
		}
	}
}

// unhold drops one caller's share of a claim and gives the claim up when
// it was the last.
func (r *Runner) unhold(runID string, c *claim) {
	r.claimMu.Lock()
	c.refs--
	if c.refs > 0 {
		r.claimMu.Unlock()
		return
	}
	c.releasing = make(chan struct{})
	r.claimMu.Unlock()
	close(c.stop)
	<-c.done
	if c.lost.Err() == nil { // else not ours any more
		if err := r.Store.ReleaseRun(context.Background(), runID, r.driver.holder); err != nil {
			r.log.Warn("release run claim; it lapses by itself", "run", runID, "err", err)
		}
	}
	r.claimMu.Lock()
	delete(r.claims, runID)
	close(c.releasing)
	r.claimMu.Unlock()
}

// join returns this Runner's claim on runID with one more reference:
// the claim held already, once written, or a new one, written here.
func (r *Runner) join(ctx context.Context, runID string) (*claim, error) {
	for {
		r.claimMu.Lock()
		c := r.claims[runID]
		switch {
		case c == nil:
			c = &claim{refs: 1, ready: make(chan struct{})}
			r.claims[runID] = c
			r.claimMu.Unlock()
			err := r.claimRun(ctx, runID)
			r.claimMu.Lock()
			if err != nil {
				c.err = err
				delete(r.claims, runID)
			} else {
				lost, markLost := context.WithCancel(context.Background())
				c.lost, c.stop, c.done = lost, make(chan struct{}), make(chan struct{})
				go r.renew(runID, c, markLost)
			}
			close(c.ready)
			r.claimMu.Unlock()
			return c, err
		case c.releasing != nil:
			// Being given up: claim the run anew once it is.
			wait := c.releasing
			r.claimMu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			c.refs++
			r.claimMu.Unlock()
			<-c.ready
			if c.err != nil {
				return nil, c.err
			}
			return c, nil
		}
	}
}

// lostClaim turns the error of a drive stopped because its claim was lost
// (ctx is hold's) into one that says so.
func lostClaim(ctx context.Context, runID string, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errClaimLost) {
		return fmt.Errorf("run %s: %w", runID, errClaimLost)
	}
	return err
}

var errClaimLost = errors.New("another process took the run over (this process's claim lapsed); it stopped at its last checkpoint")

// discard is the logger of a Runner configured without one.
var discard = slog.New(slog.DiscardHandler)
