package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Implementations wrap them with an operation prefix
// ("update run \"r1\": ...: store: conflict"); callers test with errors.Is.
var (
	// ErrNotFound: the run, approval or checkpoint does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a create found a record with the same ID.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: the write contradicts what is stored — a different record
	// at an existing key, a terminal run moved to another status, an
	// approval already decided, a checkpoint going backwards.
	ErrConflict = errors.New("store: conflict")
	// ErrExpired: an approval decided at or after its ExpiresAt.
	ErrExpired = errors.New("store: expired")
	// ErrInvalid: the input breaks a rule of the record format (a missing
	// ID, an unknown status, an attempt below 1, malformed JSON, a
	// non-finite number). Nothing was written.
	ErrInvalid = errors.New("store: invalid")
	// ErrTooLarge: a JSON field exceeds its limit (see MaxTriggerBytes and
	// friends). Store the body in the artifact store and record a
	// reference instead. Nothing was written.
	ErrTooLarge = errors.New("store: too large")
)

// Store keeps runs, step records, approvals, dedup claims and run claims.
// It is what the Lambda functions (package dynamo) and the local engine
// (package sqlite) share; both implementations pass the conformance suite
// in storetest.
//
// Every write is safe to repeat: a Lambda retried after a write succeeded
// neither duplicates nor overwrites a record. Methods are safe for
// concurrent use.
type Store interface {
	// FeedbackStore: feedback on runs and steps, calibration samples.
	FeedbackStore
	// TickClaimer: ClaimTick, the claims of schedule ticks (tick.go).
	TickClaimer

	// CreateRun stores a new run. The run must have an ID, a Pipeline, a
	// valid Status and a StartedAt. Errors: ErrExists when a run with that
	// ID exists (whatever its content), ErrInvalid, ErrTooLarge.
	CreateRun(ctx context.Context, r Run) error

	// GetRun returns the run with all its fields. Errors: ErrNotFound.
	GetRun(ctx context.Context, id string) (Run, error)

	// GetRunWithSteps returns the run and its step records in execution
	// order (see ListSteps) in one read. Errors: ErrNotFound.
	GetRunWithSteps(ctx context.Context, id string) (Run, []StepRecord, error)

	// UpdateRun changes a run's status and the fields named in u. A run
	// that is not terminal takes any status. A terminal run keeps the
	// status and fields it ended with: repeating the same terminal status
	// succeeds and changes nothing (the first terminal write wins), any
	// other status fails with ErrConflict. Errors: ErrNotFound, ErrConflict,
	// ErrInvalid, ErrTooLarge.
	UpdateRun(ctx context.Context, id string, u RunUpdate) error

	// ListRuns returns run summaries, newest StartedAt first (ties by ID,
	// descending), filtered by pipeline, status, team and/or stage, from
	// f.Offset on. Summaries carry every
	// field except Trigger, FinalOutput and Usage; GetRun has the full run.
	// Limit <= 0 means DefaultRunLimit; it is capped at MaxRunLimit. On
	// DynamoDB the list is read from indexes, so it may trail a write by a
	// moment. Errors: ErrInvalid for an unknown status or stage, or an
	// offset outside 0..MaxRunOffset.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)

	// PutStep records one attempt of a step, keyed by (RunID, Name,
	// Attempt). Writing the same record again succeeds and stores nothing
	// new; a different record at the same key fails with ErrConflict and
	// leaves the stored one untouched, unless the stored one is waiting
	// (StepWaiting: a step paused for a human check), which any record
	// replaces: a waiting record is the step's progress, the first
	// finished one its outcome. RawResponse, Prompt and Error longer
	// than their caps are cut (see NormalizeStep). PutStep does not check
	// that the run exists. Errors: ErrConflict, ErrInvalid, ErrTooLarge.
	PutStep(ctx context.Context, rec StepRecord) error

	// ListSteps returns a run's step records in execution order: by Index,
	// then StartedAt (to the nanosecond), then Name (a fan-out item's
	// number as a number), then Attempt (SortSteps). An unknown run has no
	// steps (nil, nil).
	ListSteps(ctx context.Context, runID string) ([]StepRecord, error)

	// AddUsage adds u to the run's usage totals atomically. key names the
	// contribution (the step and attempt it came from, say "review#2"):
	// a key already added to this run is ignored, so a retried call never
	// counts twice. A nil CostUSD adds no cost; the run's CostUSD stays nil
	// until some contribution carries a cost. Errors: ErrNotFound,
	// ErrInvalid (empty key, negative or non-finite values).
	AddUsage(ctx context.Context, runID, key string, u Usage) error

	// CreateApproval stores a pending approval (Decision empty). Errors:
	// ErrExists when the ID is taken, ErrInvalid.
	CreateApproval(ctx context.Context, a Approval) error

	// GetApproval returns the approval, decided, pending or expired.
	// Errors: ErrNotFound.
	GetApproval(ctx context.Context, id string) (Approval, error)

	// DecideApproval records a decision once: it succeeds only while the
	// approval is pending and now is before ExpiresAt, and returns the
	// decided approval. It is a single conditional write, so of concurrent
	// deciders exactly one wins. Errors: ErrNotFound; ErrConflict when it is
	// already decided (the returned Approval then holds the stored decision,
	// so a caller can tell its own earlier write from someone else's);
	// ErrExpired when now >= ExpiresAt (the stored approval is returned);
	// ErrInvalid for a decision other than approved or rejected.
	DecideApproval(ctx context.Context, id string, d Decision, by string, now time.Time) (Approval, error)

	// ClaimDedup claims (pipeline, fingerprint) for runID at time now.
	// When another run holds the claim and still dedups — it is running or
	// waiting, or it was claimed less than window ago, or its run record
	// does not exist yet and it was claimed less than
	// max(window, DedupPendingGrace) ago — ClaimDedup returns that run's ID
	// and claimed=false. Otherwise runID takes the claim (claimed=true,
	// existing=""). Claiming again for the run that holds the claim
	// succeeds. The decision is atomic: of any number of concurrent
	// claimers for one key, exactly one is told claimed=true. A claim lapses
	// when its run ends and the window has passed, or at once when
	// ReleaseDedup gives it up.
	// Errors: ErrInvalid (empty pipeline, fingerprint or runID, negative
	// window).
	ClaimDedup(ctx context.Context, pipeline, fingerprint, runID string, window time.Duration, now time.Time) (existing string, claimed bool, err error)

	// ReleaseDedup gives up runID's claim on (pipeline, fingerprint), for a
	// run that never started: the next claimer takes the key at once. A
	// claim held by another run is left alone (no error). Errors:
	// ErrInvalid.
	ReleaseDedup(ctx context.Context, pipeline, fingerprint, runID string) error

	// ClaimRun claims the right to drive c.RunID for c.Holder until
	// c.ExpiresAt (see RunClaim). It succeeds — claimed=true, c returned —
	// when no claim on the run is stored, when the stored claim is
	// c.Holder's own (a renewal: PID, Host and ExpiresAt are replaced),
	// when the stored claim lapsed (its ExpiresAt is at or before now), or
	// when its holder is takeover, a holder the caller found gone
	// (takeover "" takes over nothing). Otherwise it returns the stored
	// claim and claimed=false. The decision is atomic: of any number of
	// concurrent claimers of one run, exactly one is told claimed=true.
	// Errors: ErrInvalid (see CheckRunClaim).
	ClaimRun(ctx context.Context, c RunClaim, takeover string, now time.Time) (stored RunClaim, claimed bool, err error)

	// ReleaseRun gives up holder's claim on runID, so that the next
	// claimer takes the run at once. A claim of another holder, or none,
	// is left alone (no error). Errors: ErrInvalid (empty run ID or
	// holder).
	ReleaseRun(ctx context.Context, runID, holder string) error
}

// Checkpointer keeps the local engine's execution state: the latest snapshot
// of a run and its history events. Only the SQLite store implements it; on
// AWS, Step Functions keeps this state itself.
type Checkpointer interface {
	// SaveCheckpoint stores cp (its snapshot replaces the stored one, its
	// Values are set or deleted) and appends events in one transaction.
	// events are the history events after the previously saved checkpoint,
	// in Seq order, ending at cp.Seq: after the call the run's history is
	// exactly 1..cp.Seq with no gap. It is idempotent on (run, Seq):
	// saving the same checkpoint again succeeds, and events already stored
	// are accepted when they equal the stored ones. Errors: ErrConflict when
	// cp.Seq is below the stored Seq, when the same Seq comes with a
	// different snapshot or a value other than the stored one, or when an
	// already stored event differs; ErrInvalid for a gap, events out of
	// order or beyond cp.Seq, an empty RunID, snapshot or value key,
	// malformed JSON.
	SaveCheckpoint(ctx context.Context, cp Checkpoint, events []HistoryEvent) error

	// LoadCheckpoint returns the run's latest checkpoint with all its
	// values. Errors: ErrNotFound.
	LoadCheckpoint(ctx context.Context, runID string) (Checkpoint, error)

	// History returns the run's history events in Seq order; none for an
	// unknown run.
	History(ctx context.Context, runID string) ([]HistoryEvent, error)
}

// DedupPendingGrace is how long a dedup claim holds when its run has not been
// created yet (ClaimDedup runs before CreateRun), when the window is
// shorter: long enough for a run to start, short enough that a claim whose
// run never materialised does not block the key for good.
const DedupPendingGrace = 15 * time.Minute
