package store

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
)

// RunStatus is the state of a run. The strings are stored and shown as is.
type RunStatus string

// Run statuses. Running and waiting runs are active; completed, stopped,
// escalated, aborted and failed are terminal; interrupted is neither — the
// local engine marks a run interrupted when its process died, and resuming it
// makes it running again.
const (
	RunRunning     RunStatus = "running"
	RunWaiting     RunStatus = "waiting" // paused on a human approval
	RunCompleted   RunStatus = "completed"
	RunStopped     RunStatus = "stopped"
	RunEscalated   RunStatus = "escalated"
	RunAborted     RunStatus = "aborted"
	RunFailed      RunStatus = "failed"
	RunInterrupted RunStatus = "interrupted"
)

// RunStatuses lists every run status, active ones first.
func RunStatuses() []RunStatus {
	return []RunStatus{RunRunning, RunWaiting, RunInterrupted, RunCompleted, RunStopped, RunEscalated, RunAborted, RunFailed}
}

// Valid reports whether s is one of the run statuses.
func (s RunStatus) Valid() bool {
	switch s {
	case RunRunning, RunWaiting, RunCompleted, RunStopped, RunEscalated, RunAborted, RunFailed, RunInterrupted:
		return true
	}
	return false
}

// Terminal reports whether a run in status s has ended for good.
func (s RunStatus) Terminal() bool {
	switch s {
	case RunCompleted, RunStopped, RunEscalated, RunAborted, RunFailed:
		return true
	}
	return false
}

// Active reports whether a run in status s is under way (running or waiting
// on a human). Active runs always dedup.
func (s RunStatus) Active() bool { return s == RunRunning || s == RunWaiting }

// Stages of a pipeline, as persisted per run (package pipeline's).
const (
	StageTesting    = string(pipeline.StageTesting)
	StageProduction = string(pipeline.StageProduction)
)

// Usage is what model calls consumed. CostUSD is nil when no price was known
// (unpriced is not free).
type Usage struct {
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
}

// Run is one execution of a pipeline.
type Run struct {
	ID                string          `json:"id"`
	Pipeline          string          `json:"pipeline"`
	Status            RunStatus       `json:"status"`
	Reason            string          `json:"reason,omitempty"` // why it ended (abort reason, stop reason, error)
	Stage             string          `json:"stage,omitempty"`  // StageTesting or StageProduction
	Source            string          `json:"source,omitempty"` // alertmanager, generic, schedule, manual, sub-pipeline, rerun...
	Team              string          `json:"team,omitempty"`
	Trigger           json.RawMessage `json:"trigger,omitempty"` // the normalised trigger context
	Fingerprint       string          `json:"fingerprint,omitempty"`
	ParentRunID       string          `json:"parent_run_id,omitempty"`
	ConfigFingerprint string          `json:"config_fingerprint,omitempty"` // the compiled definition run (compiler.ConfigOf): readiness's "current config"
	Usage             Usage           `json:"usage"`
	StartedAt         time.Time       `json:"started_at"`
	CompletedAt       *time.Time      `json:"completed_at,omitempty"`
	ResumedAt         *time.Time      `json:"resumed_at,omitempty"`
	FinalOutput       json.RawMessage `json:"final_output,omitempty"`
}

// RunUpdate is what UpdateRun writes. Status and Reason are always written
// (an empty Reason clears it); nil fields are left as they are.
type RunUpdate struct {
	Status      RunStatus
	Reason      string
	CompletedAt *time.Time
	ResumedAt   *time.Time
	FinalOutput json.RawMessage
	Usage       *Usage // replaces the totals; AddUsage increments them
}

// RunFilter selects runs for ListRuns. Empty fields match everything.
type RunFilter struct {
	Pipeline string
	Status   RunStatus
	Team     string // the team recorded on the run (Run.Team); runs without a team never match a set Team
	Stage    string // StageTesting or StageProduction; runs recorded without a stage never match a set Stage
	Limit    int
	// Offset skips that many runs of the filtered, ordered list: a page
	// further down. At most MaxRunOffset, since every store reads the
	// skipped runs to skip them.
	Offset int
}

// List limits for ListRuns.
const (
	DefaultRunLimit = 50
	MaxRunLimit     = 1000
	// MaxRunOffset bounds RunFilter.Offset: a deeper page costs reading
	// every run above it (on DynamoDB, Offset+Limit index items).
	MaxRunOffset = 10000
)

// Size limits. They keep every record inside a DynamoDB item (400 KB) with
// room to spare, and they are the same on every store so that what runs
// locally also fits on AWS.
const (
	MaxIDBytes          = 512       // run, approval and step names, pipeline, fingerprint
	MaxTriggerBytes     = 256 << 10 // a Step Functions state payload is at most 256 KiB
	MaxFinalOutputBytes = 64 << 10
	MaxOutputBytes      = 128 << 10 // StepRecord.Output and VerifierOutput together
	MaxRawResponseBytes = 48 << 10  // longer values are cut, flag FlagRawResponseCut
	MaxPromptBytes      = 48 << 10  // longer values are cut, flag FlagPromptCut
	MaxTextBytes        = 4 << 10   // Run.Reason, StepRecord.Error: longer values are cut
	MaxTraceBytes       = 96 << 10  // StepRecord.Trace: a longer trace goes to the artifact store (TraceRef)
	MaxSnapshotBytes    = 16 << 20  // checkpoint snapshots and values (SQLite only)
)

// NormalizeRun checks r and returns the form every store writes: times in
// UTC, Reason cut to MaxTextBytes. Stores call it before writing; callers may
// call it to learn early that a run would be refused.
func NormalizeRun(r Run) (Run, error) {
	if err := checkName("run ID", r.ID); err != nil {
		return Run{}, err
	}
	if err := checkName("pipeline", r.Pipeline); err != nil {
		return Run{}, err
	}
	if !r.Status.Valid() {
		return Run{}, fmt.Errorf("%w: unknown run status %q", ErrInvalid, r.Status)
	}
	switch r.Stage {
	case "", StageTesting, StageProduction:
	default:
		return Run{}, fmt.Errorf("%w: unknown stage %q", ErrInvalid, r.Stage)
	}
	if r.StartedAt.IsZero() {
		return Run{}, fmt.Errorf("%w: run %q has no start time", ErrInvalid, r.ID)
	}
	for _, f := range []struct{ what, v string }{
		{"fingerprint", r.Fingerprint}, {"parent run ID", r.ParentRunID},
		{"config fingerprint", r.ConfigFingerprint}, {"source", r.Source}, {"team", r.Team},
	} {
		if len(f.v) > MaxIDBytes {
			return Run{}, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalid, f.what, len(f.v), MaxIDBytes)
		}
	}
	if err := checkJSON("trigger", r.Trigger, MaxTriggerBytes); err != nil {
		return Run{}, err
	}
	if err := checkJSON("final output", r.FinalOutput, MaxFinalOutputBytes); err != nil {
		return Run{}, err
	}
	if err := checkUsage(r.Usage); err != nil {
		return Run{}, err
	}
	r.Reason, _ = Cut(r.Reason, MaxTextBytes)
	r.StartedAt = r.StartedAt.UTC()
	r.CompletedAt = utcPtr(r.CompletedAt)
	r.ResumedAt = utcPtr(r.ResumedAt)
	return r, nil
}

// NormalizeRunUpdate checks u and returns the form every store writes.
func NormalizeRunUpdate(u RunUpdate) (RunUpdate, error) {
	if !u.Status.Valid() {
		return RunUpdate{}, fmt.Errorf("%w: unknown run status %q", ErrInvalid, u.Status)
	}
	if err := checkJSON("final output", u.FinalOutput, MaxFinalOutputBytes); err != nil {
		return RunUpdate{}, err
	}
	if u.Usage != nil {
		if err := checkUsage(*u.Usage); err != nil {
			return RunUpdate{}, err
		}
		cp := *u.Usage
		u.Usage = &cp
	}
	u.Reason, _ = Cut(u.Reason, MaxTextBytes)
	u.CompletedAt = utcPtr(u.CompletedAt)
	u.ResumedAt = utcPtr(u.ResumedAt)
	return u, nil
}

// NormalizeRunFilter checks f and applies the limit defaults.
func NormalizeRunFilter(f RunFilter) (RunFilter, error) {
	if f.Status != "" && !f.Status.Valid() {
		return RunFilter{}, fmt.Errorf("%w: unknown run status %q", ErrInvalid, f.Status)
	}
	switch f.Stage {
	case "", StageTesting, StageProduction:
	default:
		return RunFilter{}, fmt.Errorf("%w: unknown stage %q", ErrInvalid, f.Stage)
	}
	if f.Offset < 0 || f.Offset > MaxRunOffset {
		return RunFilter{}, fmt.Errorf("%w: offset %d is outside 0..%d", ErrInvalid, f.Offset, MaxRunOffset)
	}
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultRunLimit
	case f.Limit > MaxRunLimit:
		f.Limit = MaxRunLimit
	}
	return f, nil
}

// CheckUsage checks a usage contribution for AddUsage.
func CheckUsage(key string, u Usage) error {
	if err := checkName("usage key", key); err != nil {
		return err
	}
	return checkUsage(u)
}

func checkUsage(u Usage) error {
	if u.InputTokens < 0 || u.OutputTokens < 0 {
		return fmt.Errorf("%w: negative token count", ErrInvalid)
	}
	return checkCost(u.CostUSD)
}

func checkCost(c *float64) error {
	if c == nil {
		return nil
	}
	if math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0 {
		return fmt.Errorf("%w: cost %v is not a finite non-negative number", ErrInvalid, *c)
	}
	return nil
}

// Summary returns r without the fields ListRuns leaves out.
func (r Run) Summary() Run {
	r.Trigger = nil
	r.FinalOutput = nil
	r.Usage = Usage{}
	return r
}

// ClaimHolds reports whether a dedup claim made at claimedAt for a run still
// dedups at now: always while the run is active; while the window lasts once
// it has ended; and, when its run record does not exist (yet), for
// max(window, DedupPendingGrace). Every store decides ClaimDedup by it.
func ClaimHolds(claimedAt time.Time, runExists bool, status RunStatus, window time.Duration, now time.Time) bool {
	if !runExists {
		return now.Before(claimedAt.Add(max(window, DedupPendingGrace)))
	}
	if status.Active() {
		return true
	}
	return now.Before(claimedAt.Add(window))
}

// CheckClaim checks the arguments of ClaimDedup.
func CheckClaim(pipeline, fingerprint, runID string, window time.Duration, now time.Time) error {
	if err := checkName("pipeline", pipeline); err != nil {
		return err
	}
	if err := checkName("fingerprint", fingerprint); err != nil {
		return err
	}
	if err := checkName("run ID", runID); err != nil {
		return err
	}
	if window < 0 {
		return fmt.Errorf("%w: negative dedup window %v", ErrInvalid, window)
	}
	if now.IsZero() {
		return fmt.Errorf("%w: dedup claim without a time", ErrInvalid)
	}
	return nil
}
