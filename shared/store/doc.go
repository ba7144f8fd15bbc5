// Package store defines what Stepline records about its runs — runs, step
// records, approvals, dedup claims, the claims of the processes that drive
// runs, and the local engine's checkpoints — and
// the Store interface both backends implement:
//
//   - package store/dynamo: one DynamoDB table, used by the Lambda functions;
//   - package store/sqlite: an embedded SQLite file (pure Go, WAL), used by
//     the local engine and the CLI, which also implements Checkpointer.
//
// Package store/storetest holds the conformance suite both run.
//
// # Contracts
//
// Every write is conditional, so a repeated call — a Lambda retried after
// its write went through — neither duplicates nor overwrites a record:
//
//   - CreateRun and CreateApproval refuse an existing ID (ErrExists).
//   - PutStep is keyed by (run, step name, attempt): the same record again is
//     a no-op, a different one is ErrConflict. The one exception is a
//     waiting record (StepWaiting: a step paused for a human check, its
//     answer and trust so far), which the step's next record at its key
//     replaces; once a finished record is there, it never changes.
//   - UpdateRun never changes a terminal run: the same terminal status again
//     is a no-op, another status is ErrConflict.
//   - AddUsage takes a contribution key and counts each key once per run.
//   - DecideApproval succeeds once, before ExpiresAt.
//   - ClaimDedup hands a (pipeline, fingerprint) key to exactly one run.
//   - ClaimRun hands the right to drive a run to exactly one process, as a
//     lease (RunClaim): renewed by its holder, lapsing when it is not,
//     taken over at once by a caller that found the holder gone.
//   - ClaimTick hands each tick of a schedule to exactly one firer (a
//     conditional insert), so a scheduled pipeline fires at most once per
//     tick across processes and restarts (TickClaimer, tick.go).
//
// A rerun reuses the step records of the run it reruns for the steps before
// the one it starts from: CopyForRerun makes them the new run's, flagged
// FlagReused (rerun.go).
//
// Records are checked and normalized the same way by every store
// (NormalizeRun, NormalizeStep, NormalizeApproval): the size limits keep a
// record inside one DynamoDB item, so what runs locally also fits on AWS.
// A step record with every field at its limit, an agent step's trace
// (MaxTraceBytes) and a trust report with MaxTrustChecks checks and
// MaxTrustClaims claims included, is about 375 KB; a longer trace is not the
// store's to cut: the step handler keeps it in the artifact store and
// records its reference (TraceRef).
// Times are stored in UTC with nanoseconds.
//
// # Trust reports
//
// A gated step's record carries a TrustReport (versioned: Version is
// TrustReportVersion): the signals its gate had (S, S after the verifier,
// V with its mode, strategy and veto floor, G, C, D), the combined trust
// and the gate's policy and decision, with the grounding judge's verdict
// and each deterministic check's outcome. SQLite keeps it as JSON in the
// steps table's trust_report column (schema version 5; older records
// have none), DynamoDB as the JSON string attribute trustReport.
//
// # Feedback and calibration
//
// FeedbackStore (embedded in Store; its methods live in feedback.go in
// every package) keeps feedback on runs and on steps — an Outcome
// (correct, partial, incorrect) with notes, one per run and one per step
// name, a later one replacing the earlier — and the calibration samples
// of steps. A sample is one finished execution of a step in its Bucket
// (pipeline, step, executor or executor:agent, model, provider, prompt
// hash, agent version): its effective confidence (S after V, what the
// bins sort by) and whether a deterministic check failed. Its label is, by precedence,
// the step's feedback, then a failed check (0), then the run's feedback
// (Sample.Label); Bins and BinOf group a bucket's samples into bins of
// the step's bin_width by that value and give each bin's labelled count
// and mean label. BucketSamples reads a bucket's labelled history at once
// — on DynamoDB with one Query of the bucket's partition, the labels
// being copied onto the samples by the feedback writes (see package
// dynamo). SQLite keeps feedback and samples in tables of their own
// (schema version 6, which also adds the steps' prompt_hash column).
//
// # Writes per step on DynamoDB
//
// Recording one attempt of a step is one PutItem (PutStep); adding its
// tokens and cost to the run is one UpdateItem (AddUsage). A step that
// declares calibration also records its calibration sample (RecordSample:
// an UpdateItem, a PutItem of its bucket and a GetItem of the run's
// feedback). The run item's
// index projections leave the usage attributes out, so AddUsage does not
// write to the indexes either.
package store
