// Package sqlite is the embedded store: one SQLite file (modernc.org/sqlite,
// pure Go) that the local engine and the CLI share. It implements
// store.Store and store.Checkpointer, and records which local runs are
// scripted (SetReplies, GetReplies, SetConsumed: the responses file a run
// answers from and the replies it used).
//
// # Concurrency
//
// The file runs in WAL mode with synchronous=NORMAL: a killed process loses
// nothing it committed (a power cut may lose the last transactions). The
// log is copied into the file every WALCheckpointPages pages rather than
// SQLite's 1,000, since each step rewrites the same few pages. Each
// Store writes through a single connection, so its own writers queue in Go
// and never see "database is locked"; every write transaction begins
// IMMEDIATE, so a writer in another process (the CLI deciding an approval
// while the engine runs) makes it wait up to BusyTimeout rather than fail
// half-way. Reads use a small pool of query-only connections and are not
// blocked by writes. ClaimDedup, ClaimRun, UpdateRun, AddUsage,
// DecideApproval and SaveCheckpoint read and write inside one such
// transaction, which is what makes them atomic.
//
// # Group commit
//
// The writes of a Store's goroutines share transactions: a write that
// arrives while another commits waits and joins the next transaction,
// which holds every write queued meanwhile (up to 256). They run one after
// the other in arrival order, each seeing those before it, as if each had
// its own transaction; none returns before the transaction committed, so
// a write that returned is as durable as before. When one of them fails
// (a conflict, a missing record), the transaction is rolled back and the
// batch runs again with a savepoint around each write, so that only the
// failed one's statements are undone. Many runs in flight thus cost far
// fewer commits than writes (BenchmarkThroughput in package local reports
// commits per run), and the single writer connection no longer makes
// runs wait for each other's commits one by one.
//
// # Staged step writes
//
// Under DeferWrites (the local engine's step function runs under it),
// PutStep, AddUsage and SetConsumed are checked at once and committed at
// the start of the Store's next write transaction: the checkpoint that
// records the step's end. A step thus costs one write transaction, its
// record and its checkpoint committed together: a process killed before
// that commit loses both, and the resumed run runs the step again and
// records it once. Reads of a run with staged writes, and Close, commit
// them first.
//
// Opening waits as writes do. The first connection to a fresh file turns
// it to WAL mode with a read transaction upgraded to a write, and SQLite
// refuses such an upgrade at once (SQLITE_BUSY, no busy handler) when
// another connection writes, as another process opening the same fresh
// file does; Open retries its first transaction on SQLITE_BUSY, backing
// off from 1 ms to 100 ms, for up to BusyTimeout, so any number of
// processes may open one new file at once.
//
// # Checkpoints
//
// SaveCheckpoint is the engine's most frequent write, one per step of a
// run, so it is kept lean: one transaction (shared with the step's staged
// writes and with other runs' checkpoints) with statements prepared at
// Open, the JSON the engine encoded taken as is (Checkpoint.Encoded) and
// encoded and compressed into the row before the writer's turn, and one
// journal row appended by one statement when its events follow the run's
// last seq (anything else reads the stored state and events to tell a
// repeat from a conflict). The row holds the snapshot, the values the
// checkpoint set and the keys it deleted, and its new history events,
// compressed together (S2). A step writes the variables it changed, not
// every variable of the run, in one row rather than a row per event and
// per value, keyed by a number per run and its seq with no index of its
// own (4.6 pages written per step in TestPagesPerStep of shared/local;
// 6.9 with the row's text uncompressed and an index on (run_id, seq),
// version 9; 9.6 with the tables of version 8). A snapshot over 4 KiB is kept apart, in the
// run's checkpoint row replaced in place, so that a large state is not
// stored again with each checkpoint. LoadCheckpoint and History fold a
// run's rows read in one statement: the last row's snapshot, each key's
// last value.
//
// # Schema (version 11; PRAGMA user_version holds the version)
//
//	runs        id PK, pipeline, status, reason, stage, source, team, trigger (JSON),
//	            fingerprint, parent_run_id, config_fingerprint, input_tokens,
//	            output_tokens, cost_usd (NULL = unpriced), started_at, completed_at,
//	            resumed_at, final_output (JSON)
//	            indexes (started_at, id), (pipeline, started_at, id), (status, started_at, id)
//	run_usage   (run_id, key) PK — the AddUsage contributions already counted
//	steps       UNIQUE (run_id, name, attempt), step_index, executor, status, error,
//	            primary/verifier/effective_confidence, output, verifier_output (JSON),
//	            raw_response, prompt, model, provider, input_tokens, output_tokens,
//	            cost_usd, flags (JSON array), started_at, finished_at, duration_ms,
//	            digest (SHA-256 of the normalized record: repeat or conflict)
//	            (ListSteps reads a run's steps through the unique key and
//	            sorts them as store.SortSteps does: step_index, started_at,
//	            name, attempt; version 8 dropped the index on step_index)
//	approvals   id PK, run_id, step, pipeline, message, task_token, created_at,
//	            expires_at, decision ('' = pending), decided_by, decided_at
//	dedup       (pipeline, fingerprint) PK, run_id, claimed_at
//	checkpoints run_id PK, seq, snapshot (JSON), updated_at — since version 9 only a
//	            run's snapshot too large for a journal row (maxRowSnapshot), replaced
//	            in place
//	journal_runs key INTEGER PK, run_id UNIQUE — each run's number in journal keys
//	            (version 10)
//	journal     id INTEGER PK (the run's key × 2^32 + seq), updated_at, body
//	            (S2-compressed: the snapshot, absent when kept in checkpoints; the
//	            values set, a JSON object; the keys deleted, a JSON array; the
//	            events, a JSON array of [seq, time, type, state, detail?]), and for
//	            rows written by version 9 the same parts as text: snapshot, vals,
//	            dels, events — one row per engine checkpoint (version 9; it replaced
//	            the tables checkpoint_values and history; version 10 compressed it
//	            and keyed it by number)
//	run_claims  run_id PK, holder, pid, host, expires_at — who drives a run
//	            (ClaimRun; version 3)
//	run_replies run_id PK, source, consumed (JSON {step key: count}) — a
//	            scripted run's responses file and the replies it used when
//	            recorded (version 3)
//	run_replies_used run_id, key PK (WITHOUT ROWID), n — the counts recorded
//	            since, which replace those of consumed (version 11)
//
// Timestamps are UTC text with nanoseconds and fixed width
// (2006-01-02T15:04:05.000000000Z), so text order is time order. JSON columns
// hold the JSON text as given (the journal's body holds it compressed).
// Migrations are append-only; Open applies the
// missing ones in one transaction and refuses a file from a newer version.
package sqlite
