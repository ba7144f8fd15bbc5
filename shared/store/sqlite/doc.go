// Package sqlite is the embedded store: one SQLite file (modernc.org/sqlite,
// pure Go) that the local engine and the CLI share. It implements
// store.Store and store.Checkpointer, and records which local runs are
// scripted (SetReplies, GetReplies, SetConsumed: the responses file a run
// answers from and the replies it used).
//
// # Concurrency
//
// The file runs in WAL mode with synchronous=NORMAL: a killed process loses
// nothing it committed (a power cut may lose the last transactions). Each
// Store writes through a single connection, so its own writers queue in Go
// and never see "database is locked"; every write transaction begins
// IMMEDIATE, so a writer in another process (the CLI deciding an approval
// while the engine runs) makes it wait up to BusyTimeout rather than fail
// half-way. Reads use a small pool of query-only connections and are not
// blocked by writes. ClaimDedup, ClaimRun, UpdateRun, AddUsage,
// DecideApproval and SaveCheckpoint read and write inside one such
// transaction, which is what makes them atomic.
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
// run, so it is kept lean: one transaction with statements prepared at
// Open, the run's seq read first (the snapshot and the given values are
// read only when the same seq is saved again, to tell a repeat from a
// conflict), the new history events and the changed values written a
// batch of up to 16 rows per statement, the snapshot row replaced. A
// checkpoint's values live in their own table, so a step writes the
// variables it changed, not every variable of the run. LoadCheckpoint
// reads the snapshot and the values in one read transaction.
//
// # Schema (version 3; PRAGMA user_version holds the version)
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
//	            index (run_id, step_index, name, attempt) — execution order
//	approvals   id PK, run_id, step, pipeline, message, task_token, created_at,
//	            expires_at, decision ('' = pending), decided_by, decided_at
//	dedup       (pipeline, fingerprint) PK, run_id, claimed_at
//	checkpoints run_id PK, seq, snapshot (JSON), updated_at
//	checkpoint_values (run_id, key) PK, value (JSON) — a checkpoint's values,
//	            set and deleted one by one (version 2)
//	history     (run_id, seq) PK, time, type, state, detail (JSON)
//	run_claims  run_id PK, holder, pid, host, expires_at — who drives a run
//	            (ClaimRun; version 3)
//	run_replies run_id PK, source, consumed (JSON {step key: count}) — a
//	            scripted run's responses file and the replies it used (version 3)
//
// Timestamps are UTC text with nanoseconds and fixed width
// (2006-01-02T15:04:05.000000000Z), so text order is time order. JSON columns
// hold the JSON text as given. Migrations are append-only; Open applies the
// missing ones in one transaction and refuses a file from a newer version.
package sqlite
