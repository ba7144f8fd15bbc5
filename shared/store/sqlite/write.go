package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// maxBatch is the most write requests one group commit holds.
const maxBatch = 256

// writeReq is one write transaction's work, waiting for a group commit.
type writeReq struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx wtx) error
	done chan error    // the outcome, once committed or refused
	lead chan struct{} // closed: this request's goroutine commits the next batch
}

// wtx runs a write request's statements inside its batch's transaction:
// a *sql.Tx on an in-memory store, the writer connection itself
// (connTx) on a file.
type wtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	// StmtContext returns st, prepared by prepareCheckpoints, for use in
	// the transaction.
	StmtContext(ctx context.Context, st *sql.Stmt) *sql.Stmt
}

// connTx is a transaction on the writer connection of a file store, which
// the Store holds while it is open: BEGIN IMMEDIATE, COMMIT and ROLLBACK
// are statements prepared once on it (writerStmts), and the statements of
// prepareCheckpoints are prepared on it too. A *sql.Tx would prepare
// BEGIN and COMMIT again for every transaction and start a goroutine to
// watch its context (in BenchmarkRun's CPU profile, opening the
// transaction alone took 7% of a run before). Only the committer's leader uses
// the connection, one batch at a time, so no other statement can run
// inside a transaction it opened.
type connTx struct{ *sql.Conn }

// StmtContext returns st: the statements of a file store are prepared on
// its writer connection.
func (connTx) StmtContext(_ context.Context, st *sql.Stmt) *sql.Stmt { return st }

// writerStmts are the transaction statements prepared on a file store's
// writer connection.
type writerStmts struct {
	begin, commit, rollback *sql.Stmt
}

// writeTx is an open write transaction and how to end it.
type writeTx struct {
	wtx
	commit   func() error
	rollback func()
}

// begin opens a write transaction (IMMEDIATE: on a file, the write lock
// is taken at once, waiting up to BusyTimeout for another process's
// writer). ctx must not be cancellable: a transaction ends by its commit
// or rollback, never half-way.
func (s *Store) begin(ctx context.Context) (writeTx, error) {
	if s.wc == nil {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return writeTx{}, err
		}
		return writeTx{wtx: tx, commit: tx.Commit, rollback: func() { tx.Rollback() }}, nil
	}
	if _, err := s.ws.begin.ExecContext(ctx); err != nil {
		return writeTx{}, err
	}
	rollback := func() {
		// An error means no transaction is open any more (SQLite
		// rolled it back itself): nothing is left to undo.
		_, _ = s.ws.rollback.ExecContext(ctx)
	}
	commit := func() error {
		if _, err := s.ws.commit.ExecContext(ctx); err != nil {
			rollback() // a COMMIT that failed (SQLITE_BUSY) leaves the transaction open
			return err
		}
		return nil
	}
	return writeTx{wtx: connTx{s.wc}, commit: commit, rollback: rollback}, nil
}

// committer queues the write requests of this Store's goroutines and
// commits them in batches: one write transaction holds every request that
// waited while the previous one committed (group commit). One goroutine
// at a time, the leader, runs a batch; it hands the lead to a waiting
// request when it is done.
type committer struct {
	mu      sync.Mutex
	queue   []*writeReq
	leading bool
	commits atomic.Int64 // write transactions committed
	shared  atomic.Bool  // the last batch held more than one request

	// pending are the staged step writes (DeferWrites), committed at the
	// start of the next transaction; npending is len(pending) for a
	// lock-free look.
	pmu      sync.Mutex
	pending  []staged
	npending atomic.Int64
}

// staged is a write made under DeferWrites, committed later.
type staged struct {
	run  string        // the run the write belongs to
	what func() string // for errors: "put step \"s1\" attempt 1 of run \"r\"" (formatted only then)
	fn   func(ctx context.Context, tx wtx) error
}

// write runs fn in a write transaction and returns once that transaction
// committed (or fn's error, with nothing of fn written). Transactions
// begin IMMEDIATE, so another process's writer makes this one wait (up to
// BusyTimeout) instead of failing half-way.
//
// Writes from several goroutines share a transaction (group commit): a
// request that arrives while another batch commits waits for it and joins
// the next batch (see commit: one request's error undoes only its own
// statements). Requests of a batch run in arrival order, each seeing the
// writes of those before it, as if each had a transaction of its own one
// after the other; none is answered before the batch committed. Each
// transaction first writes the staged step writes (DeferWrites).
//
// fn runs its statements under the ctx it is given, the transaction's,
// which is never cancelled: a request whose own ctx ended before its
// turn is refused, and one that has begun runs to its end (a statement
// under a cancellable context registers a callback to interrupt it, at a
// cost every statement paid).
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx wtx) error) error {
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, req)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
		}
	}
	// When the last batch was shared, other goroutines write too: yield
	// the processor once before taking the batch, so that a writer about
	// to queue joins it rather than the next one (as a database's commit
	// delay does when other transactions are active). With ten runs in
	// flight the commits per run fell from 3.6–10.6 to 2.3–3.8 and the
	// CPU per run by about a tenth (BenchmarkThroughput in shared/local,
	// on a loaded machine); a lone writer never yields.
	if g.shared.Load() {
		runtime.Gosched()
	}
	g.mu.Lock()
	n := min(len(g.queue), maxBatch)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	g.shared.Store(n > 1)
	s.commit(batch)
	g.mu.Lock()
	if len(g.queue) > 0 {
		close(g.queue[0].lead)
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return <-req.done
}

// commit runs a batch in one transaction and answers each request.
//
// The batch runs first without savepoints, as one transaction; only when
// a request fails (rare: a conflict, a missing record) is the
// transaction rolled back and the batch run again with a savepoint
// around each request, so that the failed one's statements alone are
// undone. Requests are run again safely: each reads what it needs inside
// the transaction.
func (s *Store) commit(batch []*writeReq) {
	// The transaction outlives any one request's context: a request
	// whose context ends is refused alone.
	ctx := context.WithoutCancel(batch[0].ctx)
	pending := s.takeStaged()
	fail := func(err error) {
		s.restage(pending)
		for _, r := range batch {
			r.done <- err
		}
	}
	// begin opens the batch's transaction with the staged writes in it.
	begin := func() (writeTx, error) {
		tx, err := s.begin(ctx)
		if err != nil {
			return tx, err
		}
		if err := s.writeStaged(ctx, tx, pending); err != nil {
			tx.rollback()
			return writeTx{}, err
		}
		return tx, nil
	}
	tx, err := begin()
	if err != nil {
		fail(err)
		return
	}
	errs := make([]error, len(batch))
	failed := false
	for i, r := range batch {
		if errs[i] = r.ctx.Err(); errs[i] != nil {
			continue
		}
		if err := r.fn(ctx, tx); err != nil {
			failed = true
			break
		}
	}
	if failed {
		tx.rollback()
		if tx, err = begin(); err != nil {
			fail(err)
			return
		}
		if !s.savepoints(ctx, tx, batch, errs) {
			// The transaction is broken (SQLite rolled it back): run
			// each request in a transaction of its own.
			tx.rollback()
			s.restage(pending)
			s.alone(batch)
			return
		}
	}
	if err := tx.commit(); err != nil {
		fail(err)
		return
	}
	s.group.commits.Add(1)
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// savepoints runs each request of batch in tx inside a savepoint of its
// own, rolled back when the request fails, and sets errs. It reports
// false when tx is no longer usable.
func (s *Store) savepoints(ctx context.Context, tx wtx, batch []*writeReq, errs []error) bool {
	for i, r := range batch {
		if errs[i] = r.ctx.Err(); errs[i] != nil {
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			return false
		}
		if errs[i] = r.fn(ctx, tx); errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				return false
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			return false
		}
	}
	return true
}

// alone commits each request of a batch in a transaction of its own: the
// fallback when a request broke the shared transaction.
func (s *Store) alone(batch []*writeReq) {
	for _, r := range batch {
		r.done <- s.writeAlone(r.ctx, r.fn)
	}
}

func (s *Store) writeAlone(ctx context.Context, fn func(ctx context.Context, tx wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wctx := context.WithoutCancel(ctx)
	pending := s.takeStaged()
	tx, err := s.begin(wctx)
	if err != nil {
		s.restage(pending)
		return err
	}
	if err := s.writeStaged(wctx, tx, pending); err != nil {
		tx.rollback()
		s.restage(pending)
		return err
	}
	if err := fn(wctx, tx); err != nil {
		tx.rollback()
		s.restage(pending)
		return err
	}
	if err := tx.commit(); err != nil {
		s.restage(pending)
		return err
	}
	s.group.commits.Add(1)
	return nil
}

// Commits returns how many write transactions this Store committed
// since it was opened (group commits count once).
func (s *Store) Commits() int64 { return s.group.commits.Load() }

type deferKey struct{}

// DeferWrites returns a context under which PutStep, AddUsage and
// SetConsumed stage their write instead of committing it: the write is
// checked (and refused) at once, as without DeferWrites, and committed
// at the start of this Store's next write transaction — the run's next
// checkpoint (SaveCheckpoint), with which it then is durable, or any
// other write. Any read of this Store commits the staged writes first, so
// a reader never misses one; Close commits them too.
//
// The local engine's step function runs under it: a step's record, its
// usage and its scripted replies are committed in the transaction of the
// checkpoint that records the step's end, one write transaction per step.
// A process killed before that checkpoint loses the step's record with
// the checkpoint, and the resumed run runs the step again and records it
// then: a step is never recorded without its checkpoint, nor twice.
//
// Under DeferWrites, PutStep cannot tell a repeat from a conflict before
// the commit; either way the stored record stands (a conflict is not
// reported), and AddUsage for a run that does not exist adds nothing
// rather than failing with ErrNotFound.
func DeferWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferKey{}, true)
}

func deferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferKey{}).(bool)
	return v
}

// stage queues a deferred write.
func (s *Store) stage(w staged) {
	g := &s.group
	g.pmu.Lock()
	g.pending = append(g.pending, w)
	g.npending.Store(int64(len(g.pending)))
	g.pmu.Unlock()
}

// takeStaged takes the staged writes, to commit them.
func (s *Store) takeStaged() []staged {
	g := &s.group
	if g.npending.Load() == 0 {
		return nil
	}
	g.pmu.Lock()
	defer g.pmu.Unlock()
	p := g.pending
	g.pending = nil
	g.npending.Store(0)
	return p
}

// restage puts back staged writes whose transaction did not commit,
// before any staged since.
func (s *Store) restage(p []staged) {
	if len(p) == 0 {
		return
	}
	g := &s.group
	g.pmu.Lock()
	g.pending = append(p, g.pending...)
	g.npending.Store(int64(len(g.pending)))
	g.pmu.Unlock()
}

// writeStaged runs the staged writes in tx. A staged write's expected
// refusals (a conflicting step record, a run that does not exist) are
// no-ops inside its fn; any other error fails the transaction.
func (s *Store) writeStaged(ctx context.Context, tx wtx, p []staged) error {
	for _, w := range p {
		if err := w.fn(ctx, tx); err != nil {
			return fmt.Errorf("%s (staged): %w", w.what(), err)
		}
	}
	return nil
}

// settle commits the staged writes, if any, so that a read sees them.
func (s *Store) settle(ctx context.Context) error {
	if s.group.npending.Load() == 0 {
		return nil
	}
	return s.write(ctx, func(context.Context, wtx) error { return nil })
}

// settleRun commits the staged writes when one of them belongs to runID,
// so that a read of that run sees them (reads of other runs need not
// wait).
func (s *Store) settleRun(ctx context.Context, runID string) error {
	g := &s.group
	if g.npending.Load() == 0 {
		return nil
	}
	g.pmu.Lock()
	found := false
	for _, w := range g.pending {
		if w.run == runID {
			found = true
			break
		}
	}
	g.pmu.Unlock()
	if !found {
		return nil
	}
	return s.write(ctx, func(context.Context, wtx) error { return nil })
}
