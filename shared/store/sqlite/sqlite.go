package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stepline/stepline/shared/store"
)

// BusyTimeout is how long a write waits for another process's write
// transaction on the same file before it fails (milliseconds).
const BusyTimeout = 30_000

// WALCheckpointPages is how many pages the write-ahead log grows to before
// a commit copies them into the database file (SQLite's
// wal_autocheckpoint, 1,000 by default). A step rewrites the same few
// pages (the last leaves of the journal and step tables and of their
// indexes), so a longer log copies each of them once for many steps:
// about 8% less time per step in BenchmarkRun. The log file then holds up
// to about 32 MiB while a process has the database open (SQLite removes it
// when the last connection closes). It is reused from its start after
// each copy, not cut back: a journal_size_limit that truncated it made
// each step's log writes extend the file again, which cost more than the
// longer log saved.
const WALCheckpointPages = 8000

// readers is the size of the read connection pool.
const readers = 4

// Store is the SQLite store. It holds one writer connection, which
// serializes this process's writes, and a pool of readers, which WAL lets
// read while a write is in progress.
type Store struct {
	w     *sql.DB
	wc    *sql.Conn   // a file store's writer connection, held while open (connTx); nil in memory
	ws    writerStmts // prepared on wc
	r     *sql.DB
	cp    checkpointStmts
	rs    readStmts
	group committer
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Checkpointer = (*Store)(nil)
)

// Open opens (creating it if needed) the database at path and brings its
// schema up to date. path ":memory:" opens a private in-memory database on a
// single connection, for tests.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("open store: %w: empty path", store.ErrInvalid)
	}
	s, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := retryBusy(ctx, s.start, BusyTimeout*time.Millisecond); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.prepareCheckpoints(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

func open(path string) (*Store, error) {
	if path == ":memory:" {
		db, err := connect("file::memory:", url.Values{"_txlock": {"immediate"}})
		if err != nil {
			return nil, err
		}
		// One connection for everything, kept open: each connection to
		// :memory: is a database of its own.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return &Store{w: db, r: db}, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	name := "file:" + (&url.URL{Path: abs}).EscapedPath()
	busy := strconv.Itoa(BusyTimeout)
	w, err := connect(name, url.Values{
		"_busy_timeout": {busy},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
		"_pragma":       {fmt.Sprintf("wal_autocheckpoint(%d)", WALCheckpointPages)},
	})
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	r, err := connect(name, url.Values{
		"_busy_timeout": {busy},
		"_query_only":   {"1"},
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	return &Store{w: w, r: r}, nil
}

// start takes a file store's writer connection (holdWriter) and brings
// the schema up to date. The first connection to a fresh file may find it
// busy (see retryBusy), which Open retries.
func (s *Store) start(ctx context.Context) error {
	if s.r != s.w && s.wc == nil {
		if err := s.holdWriter(ctx); err != nil {
			return err
		}
	}
	return s.migrate(ctx)
}

// holdWriter takes the writer pool's one connection for the Store's life
// and prepares the transaction statements on it (connTx). On an error it
// holds nothing.
func (s *Store) holdWriter(ctx context.Context) error {
	wc, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	s.wc = wc
	for _, q := range []struct {
		dst  **sql.Stmt
		text string
	}{{&s.ws.begin, "BEGIN IMMEDIATE"}, {&s.ws.commit, "COMMIT"}, {&s.ws.rollback, "ROLLBACK"}} {
		if *q.dst, err = wc.PrepareContext(ctx, q.text); err != nil {
			return errors.Join(err, s.releaseWriter())
		}
	}
	return nil
}

// releaseWriter closes the transaction statements and gives the writer
// connection back to its pool.
func (s *Store) releaseWriter() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.ws.begin, s.ws.commit, s.ws.rollback} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.wc != nil {
		errs = append(errs, s.wc.Close())
	}
	s.wc, s.ws = nil, writerStmts{}
	return errors.Join(errs...)
}

// retryBusy runs fn until it succeeds, fails for a reason other than a
// busy database, or limit has passed since the first try, waiting a
// little longer each time (1 ms growing to 100 ms, as SQLite's own busy
// handler does).
//
// SQLite's busy handler does not cover one step of opening: the first
// connection to a fresh file turns it to WAL mode (PRAGMA journal_mode,
// run as the connection opens) with a read transaction that it then
// upgrades to a write, and an upgrade that would wait for another
// connection doing the same fails at once with SQLITE_BUSY instead, lest
// the two wait for each other. Opening retries that as writes wait:
// another process's conversion ends in a moment, and the next try finds
// the file in WAL mode.
func retryBusy(ctx context.Context, fn func(context.Context) error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	delay := time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(delay).After(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, with any extended
// code (the driver's *sqlite.Error reports it through Code).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqlite3.SQLITE_BUSY
}

func connect(name string, q url.Values) (*sql.DB, error) {
	c, err := sqlite.NewConnector(name + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// Close commits the staged writes (DeferWrites) and closes the database.
func (s *Store) Close() error {
	err := s.settle(context.Background())
	err = errors.Join(err, s.cp.close(), s.rs.close(), s.releaseWriter(), s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// migrate applies the schema migrations the file lacks, in one transaction.
// PRAGMA user_version holds the number applied.
func (s *Store) migrate(ctx context.Context) error {
	steps := migrations()
	return s.write(ctx, func(ctx context.Context, tx wtx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(steps) {
			return fmt.Errorf("schema version %d is newer than this program knows (%d)", v, len(steps))
		}
		for i := v; i < len(steps); i++ {
			if _, err := tx.ExecContext(ctx, steps[i]); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
			}
		}
		if v == len(steps) {
			return nil
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(steps)))
		return err
	})
}

// SchemaVersion returns the schema version of the open database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

// migrations returns the schema migrations in order; migration i brings the
// schema from version i to i+1. Append only: a released migration never
// changes.
func migrations() []string {
	return []string{schemaV1, schemaV2, schemaV3, schemaV4, schemaV5, schemaFeedback, schemaTicks, schemaStepsOneIndex, schemaJournal, schemaJournalBody, schemaRepliesUsed}
}

const schemaV1 = `
CREATE TABLE runs (
	id                 TEXT PRIMARY KEY,
	pipeline           TEXT NOT NULL,
	status             TEXT NOT NULL,
	reason             TEXT NOT NULL DEFAULT '',
	stage              TEXT NOT NULL DEFAULT '',
	source             TEXT NOT NULL DEFAULT '',
	team               TEXT NOT NULL DEFAULT '',
	trigger            TEXT,
	fingerprint        TEXT NOT NULL DEFAULT '',
	parent_run_id      TEXT NOT NULL DEFAULT '',
	config_fingerprint TEXT NOT NULL DEFAULT '',
	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cost_usd           REAL,
	started_at         TEXT NOT NULL,
	completed_at       TEXT,
	resumed_at         TEXT,
	final_output       TEXT
);
CREATE INDEX runs_by_started ON runs (started_at, id);
CREATE INDEX runs_by_pipeline ON runs (pipeline, started_at, id);
CREATE INDEX runs_by_status ON runs (status, started_at, id);

CREATE TABLE run_usage (
	run_id TEXT NOT NULL,
	key    TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

CREATE TABLE steps (
	run_id               TEXT NOT NULL,
	name                 TEXT NOT NULL,
	attempt              INTEGER NOT NULL,
	step_index           INTEGER NOT NULL,
	executor             TEXT NOT NULL DEFAULT '',
	status               TEXT NOT NULL,
	error                TEXT NOT NULL DEFAULT '',
	primary_confidence   REAL,
	verifier_confidence  REAL,
	effective_confidence REAL,
	output               TEXT,
	verifier_output      TEXT,
	raw_response         TEXT NOT NULL DEFAULT '',
	prompt               TEXT NOT NULL DEFAULT '',
	model                TEXT NOT NULL DEFAULT '',
	provider             TEXT NOT NULL DEFAULT '',
	input_tokens         INTEGER NOT NULL DEFAULT 0,
	output_tokens        INTEGER NOT NULL DEFAULT 0,
	cost_usd             REAL,
	flags                TEXT,
	started_at           TEXT NOT NULL,
	finished_at          TEXT NOT NULL,
	duration_ms          INTEGER NOT NULL DEFAULT 0,
	digest               TEXT NOT NULL,
	UNIQUE (run_id, name, attempt)
);
CREATE INDEX steps_in_order ON steps (run_id, step_index, name, attempt);

CREATE TABLE approvals (
	id          TEXT PRIMARY KEY,
	run_id      TEXT NOT NULL,
	step        TEXT NOT NULL,
	pipeline    TEXT NOT NULL DEFAULT '',
	message     TEXT NOT NULL DEFAULT '',
	task_token  TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL,
	decision    TEXT NOT NULL DEFAULT '',
	decided_by  TEXT NOT NULL DEFAULT '',
	decided_at  TEXT
);
CREATE INDEX approvals_by_run ON approvals (run_id);

CREATE TABLE dedup (
	pipeline    TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	claimed_at  TEXT NOT NULL,
	PRIMARY KEY (pipeline, fingerprint)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
	run_id     TEXT PRIMARY KEY,
	seq        INTEGER NOT NULL,
	snapshot   TEXT NOT NULL,
	updated_at TEXT NOT NULL
);

CREATE TABLE history (
	run_id TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	time   TEXT NOT NULL,
	type   TEXT NOT NULL,
	state  TEXT NOT NULL DEFAULT '',
	detail TEXT,
	PRIMARY KEY (run_id, seq)
);
`

// schemaV2 keeps a checkpoint's values apart from its snapshot, so that a
// checkpoint writes only the values that changed (store.Checkpoint.Values).
const schemaV2 = `
CREATE TABLE checkpoint_values (
	run_id TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
`

// schemaV3 adds the claims of the processes that drive runs (ClaimRun) and
// the scripted replies runs answer from (SetReplies).
const schemaV3 = `
CREATE TABLE run_claims (
	run_id     TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	pid        INTEGER NOT NULL DEFAULT 0,
	host       TEXT NOT NULL DEFAULT '',
	expires_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE run_replies (
	run_id   TEXT PRIMARY KEY,
	source   TEXT NOT NULL,
	consumed TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
`

// schemaV4 records agent steps: the profile, the loop's iterations and its
// trace (or the reference of a trace kept in the artifact store).
const schemaV4 = `
ALTER TABLE steps ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN agent_version TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN iterations INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN trace TEXT;
ALTER TABLE steps ADD COLUMN trace_ref TEXT NOT NULL DEFAULT '';
`

// schemaV5 records the trust report of gated steps (how the gate decided:
// its signals, the combined trust and its decision).
const schemaV5 = `
ALTER TABLE steps ADD COLUMN trust_report TEXT;
`

// schemaTicks (version 7) keeps the claims of schedule ticks (ClaimTick),
// one row per (schedule, tick).
const schemaTicks = `
CREATE TABLE ticks (
	schedule   TEXT NOT NULL,
	tick       TEXT NOT NULL,
	holder     TEXT NOT NULL,
	run_id     TEXT NOT NULL,
	claimed_at TEXT NOT NULL,
	PRIMARY KEY (schedule, tick)
) WITHOUT ROWID;
`

// schemaStepsOneIndex (version 8) drops the index that kept a run's steps
// in execution order: ListSteps finds a run's steps through the key
// (run_id, name, attempt) and sorts them, a few hundred rows at most,
// while every step record paid one more B-tree page for the index.
const schemaStepsOneIndex = `
DROP INDEX steps_in_order;
`

// schemaJournal (version 9) keeps each checkpoint as one row of the
// journal (journal.go) instead of a row per history event, a row per
// value and the checkpoint row updated in place; that row now keeps only
// the snapshots too large for a journal row. The rows of the two tables
// it replaces become one row per run holding the run's whole history and
// values, their JSON text as stored, its snapshot left where it is.
const schemaJournal = `
CREATE TABLE journal (
	id         INTEGER PRIMARY KEY,
	run_id     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	updated_at TEXT NOT NULL,
	snapshot   TEXT,
	vals       TEXT,
	dels       TEXT,
	events     TEXT
);
CREATE UNIQUE INDEX journal_by_run ON journal (run_id, seq);
INSERT INTO journal (run_id, seq, updated_at, vals, events)
SELECT c.run_id, c.seq, c.updated_at,
	(SELECT '{' || group_concat(json_quote(v.key) || ':' || v.value, ',' ORDER BY v.key) || '}'
		FROM checkpoint_values v WHERE v.run_id = c.run_id),
	(SELECT '[' || group_concat('[' || h.seq || ',' || json_quote(h.time) || ',' || json_quote(h.type) || ',' ||
			json_quote(h.state) || CASE WHEN h.detail IS NULL OR h.detail = '' THEN '' ELSE ',' || h.detail END || ']',
			',' ORDER BY h.seq) || ']'
		FROM history h WHERE h.run_id = c.run_id)
FROM checkpoints c ORDER BY c.run_id;
DROP TABLE checkpoint_values;
DROP TABLE history;
`

// schemaRepliesUsed (version 11) keeps a scripted run's consumed counts
// as they change, a row per step key, beside run_replies.consumed (the
// counts SetReplies recorded): a step's write no longer rewrites every
// count of the run.
const schemaRepliesUsed = `
CREATE TABLE run_replies_used (
	run_id TEXT NOT NULL,
	key    TEXT NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
`

// schemaJournalBody (version 10) writes each new journal row's parts
// into one compressed body, and keys the journal by a number per run
// (journal_runs) and the seq, in place of the index on (run_id, seq)
// (journal.go). The rows already written keep their text, moved with
// their keys, and are read as they were.
const schemaJournalBody = `
CREATE TABLE journal_runs (
	key    INTEGER PRIMARY KEY,
	run_id TEXT NOT NULL UNIQUE
);
INSERT INTO journal_runs (run_id) SELECT DISTINCT run_id FROM journal ORDER BY run_id;
CREATE TABLE journal_v10 (
	id         INTEGER PRIMARY KEY,
	updated_at TEXT NOT NULL,
	snapshot   TEXT,
	vals       TEXT,
	dels       TEXT,
	events     TEXT,
	body       BLOB
);
INSERT INTO journal_v10 (id, updated_at, snapshot, vals, dels, events)
SELECT (r.key << 32) + j.seq, j.updated_at, j.snapshot, j.vals, j.dels, j.events
FROM journal j JOIN journal_runs r USING (run_id) ORDER BY r.key, j.seq;
DROP TABLE journal;
ALTER TABLE journal_v10 RENAME TO journal;
`
