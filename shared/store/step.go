package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// StepStatus is the outcome of one attempt of a step.
type StepStatus string

// Step statuses. An attempt that failed and was retried is recorded as failed
// with its Error; the last attempt carries the step's outcome.
const (
	StepCompleted StepStatus = "completed"
	StepStopped   StepStatus = "stopped" // proceed: false
	StepEscalated StepStatus = "escalated"
	StepAborted   StepStatus = "aborted"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped" // when: was false
	StepRunning   StepStatus = "running"
	StepWaiting   StepStatus = "waiting" // a human step awaiting its decision
)

// Valid reports whether s is one of the step statuses.
func (s StepStatus) Valid() bool {
	switch s {
	case StepCompleted, StepStopped, StepEscalated, StepAborted, StepFailed, StepSkipped, StepRunning, StepWaiting:
		return true
	}
	return false
}

// Flags NormalizeStep adds when it cuts a field.
const (
	FlagRawResponseCut = "raw_response_cut"
	FlagPromptCut      = "prompt_cut"
)

// StepRecord is one attempt of one step. Every attempt is recorded: a step
// retried twice has records for attempts 1, 2 and 3, and the last carries the
// outcome.
type StepRecord struct {
	RunID string `json:"run_id"`
	// Name is the step name; a parallel branch is "group/branch", a fan-out
	// item "fan/0".
	Name string `json:"name"`
	// Index orders the records of a run (ListSteps sorts by Index, then
	// StartedAt, Name, Attempt: SortSteps). The step handler's is the
	// milliseconds from the run's start to its Task's; a record a rerun
	// reuses has 0 (CopyForRerun).
	Index   int `json:"index"`
	Attempt int `json:"attempt"` // 1-based

	Executor string     `json:"executor,omitempty"`
	Status   StepStatus `json:"status"`
	Error    string     `json:"error,omitempty"`

	PrimaryConfidence   *float64 `json:"primary_confidence,omitempty"`
	VerifierConfidence  *float64 `json:"verifier_confidence,omitempty"`
	EffectiveConfidence *float64 `json:"effective_confidence,omitempty"`

	Output         json.RawMessage `json:"output,omitempty"` // the parsed LLMOutput
	VerifierOutput json.RawMessage `json:"verifier_output,omitempty"`
	// RawResponse is the model's reply as received, cut to
	// MaxRawResponseBytes; a larger body belongs in the artifact store.
	RawResponse string `json:"raw_response,omitempty"`
	Prompt      string `json:"prompt,omitempty"` // the rendered prompt, cut to MaxPromptBytes
	// PromptHash is the content hash of the step's prompt template
	// (PromptHash): part of the step's calibration bucket.
	PromptHash string `json:"prompt_hash,omitempty"`

	Model        string   `json:"model,omitempty"`
	Provider     string   `json:"provider,omitempty"`
	InputTokens  int64    `json:"input_tokens,omitempty"`
	OutputTokens int64    `json:"output_tokens,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	Flags        []string `json:"flags,omitempty"`

	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`

	// Agent steps (executor_config.agent) only: the profile's name and
	// version (the hash of its files), the model calls its tool loop made
	// (re-asks included), and its trace: a JSON array of events (package
	// agent's Event: text, tool_call, tool_result, tool_denied), at most
	// MaxTraceBytes. A longer trace is kept in the artifact store and
	// TraceRef points to it, Trace then empty.
	Agent        string          `json:"agent,omitempty"`
	AgentVersion string          `json:"agent_version,omitempty"`
	Iterations   int             `json:"iterations,omitempty"`
	Trace        json.RawMessage `json:"trace,omitempty"`
	TraceRef     string          `json:"trace_ref,omitempty"`

	// Trust is how the gate decided the step (records of gated steps
	// only): its signals, the combined trust and the decision.
	Trust *TrustReport `json:"trust_report,omitempty"`
}

// NormalizeStep checks rec and returns the form every store writes: times in
// UTC, invalid UTF-8 replaced, RawResponse and Prompt cut to their limits
// (adding FlagRawResponseCut or FlagPromptCut), Error cut to MaxTextBytes,
// the trust report's texts cut to MaxTrustText, empty Flags as nil. It is idempotent, so a record written twice normalizes
// to the same value twice.
func NormalizeStep(rec StepRecord) (StepRecord, error) {
	if err := checkName("run ID", rec.RunID); err != nil {
		return StepRecord{}, err
	}
	if err := checkName("step name", rec.Name); err != nil {
		return StepRecord{}, err
	}
	if rec.Attempt < 1 {
		return StepRecord{}, fmt.Errorf("%w: step %q attempt %d: attempts start at 1", ErrInvalid, rec.Name, rec.Attempt)
	}
	if rec.Index < 0 {
		return StepRecord{}, fmt.Errorf("%w: step %q has negative index %d", ErrInvalid, rec.Name, rec.Index)
	}
	if !rec.Status.Valid() {
		return StepRecord{}, fmt.Errorf("%w: step %q: unknown step status %q", ErrInvalid, rec.Name, rec.Status)
	}
	for _, c := range []struct {
		what string
		v    *float64
	}{{"primary confidence", rec.PrimaryConfidence}, {"verifier confidence", rec.VerifierConfidence}, {"effective confidence", rec.EffectiveConfidence}} {
		if c.v != nil && (math.IsNaN(*c.v) || math.IsInf(*c.v, 0)) {
			return StepRecord{}, fmt.Errorf("%w: step %q: %s is not finite", ErrInvalid, rec.Name, c.what)
		}
	}
	if err := checkCost(rec.CostUSD); err != nil {
		return StepRecord{}, fmt.Errorf("step %q: %w", rec.Name, err)
	}
	if rec.InputTokens < 0 || rec.OutputTokens < 0 || rec.DurationMS < 0 {
		return StepRecord{}, fmt.Errorf("%w: step %q: negative tokens or duration", ErrInvalid, rec.Name)
	}
	if err := checkJSON("output", rec.Output, MaxOutputBytes); err != nil {
		return StepRecord{}, err
	}
	if err := checkJSON("verifier output", rec.VerifierOutput, MaxOutputBytes); err != nil {
		return StepRecord{}, err
	}
	if err := checkJSON("trace", rec.Trace, MaxTraceBytes); err != nil {
		return StepRecord{}, fmt.Errorf("step %q: %w", rec.Name, err)
	}
	if t := strings.TrimSpace(string(rec.Trace)); t != "" && !strings.HasPrefix(t, "[") {
		return StepRecord{}, fmt.Errorf("%w: step %q: trace is not a JSON array", ErrInvalid, rec.Name)
	}
	if rec.Iterations < 0 {
		return StepRecord{}, fmt.Errorf("%w: step %q: negative iterations", ErrInvalid, rec.Name)
	}
	if len(rec.TraceRef) > MaxTextBytes {
		return StepRecord{}, fmt.Errorf("%w: step %q trace reference is %d bytes, limit %d", ErrInvalid, rec.Name, len(rec.TraceRef), MaxTextBytes)
	}
	if n := len(rec.Output) + len(rec.VerifierOutput); n > MaxOutputBytes {
		return StepRecord{}, fmt.Errorf("%w: step %q output and verifier output are %d bytes, limit %d", ErrTooLarge, rec.Name, n, MaxOutputBytes)
	}
	for _, f := range []struct{ what, v string }{{"executor", rec.Executor}, {"model", rec.Model}, {"provider", rec.Provider}, {"agent", rec.Agent}, {"agent version", rec.AgentVersion}, {"prompt hash", rec.PromptHash}} {
		if len(f.v) > MaxIDBytes {
			return StepRecord{}, fmt.Errorf("%w: step %q %s is %d bytes, limit %d", ErrInvalid, rec.Name, f.what, len(f.v), MaxIDBytes)
		}
	}
	if err := checkTrust(rec.Name, rec.Trust); err != nil {
		return StepRecord{}, err
	}
	rec.Trust = cutTrust(rec.Trust)
	flags := slices.Clone(rec.Flags)
	var cut bool
	if rec.RawResponse, cut = Cut(rec.RawResponse, MaxRawResponseBytes); cut && !slices.Contains(flags, FlagRawResponseCut) {
		flags = append(flags, FlagRawResponseCut)
	}
	if rec.Prompt, cut = Cut(rec.Prompt, MaxPromptBytes); cut && !slices.Contains(flags, FlagPromptCut) {
		flags = append(flags, FlagPromptCut)
	}
	rec.Error, _ = Cut(rec.Error, MaxTextBytes)
	if len(flags) == 0 {
		flags = nil
	}
	rec.Flags = flags
	rec.StartedAt = rec.StartedAt.UTC()
	rec.FinishedAt = rec.FinishedAt.UTC()
	return rec, nil
}

// Cut returns s with invalid UTF-8 replaced and cut to at most max bytes on a
// character boundary, and whether it had to cut.
func Cut(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s, false
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// SortSteps puts records in execution order: by Index, then StartedAt
// (records of one Index, steps whose Tasks started in the same
// millisecond, in the order they started), then Name (a fan-out item's
// number compared as a number: "fan/2" before "fan/10"), then Attempt.
func SortSteps(recs []StepRecord) {
	slices.SortFunc(recs, func(a, b StepRecord) int {
		if a.Index != b.Index {
			return cmp.Compare(a.Index, b.Index)
		}
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		if c := compareNames(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Attempt, b.Attempt)
	})
}

// compareNames orders step names: by text, except two items of one
// fan-out ("<fan_out>/<i>"), which go by their number.
func compareNames(a, b string) int {
	i, j := strings.LastIndexByte(a, '/'), strings.LastIndexByte(b, '/')
	if i >= 0 && i == j && a[:i] == b[:j] && digits(a[i+1:]) && digits(b[j+1:]) {
		na, nb := strings.TrimLeft(a[i+1:], "0"), strings.TrimLeft(b[j+1:], "0")
		if c := cmp.Compare(len(na), len(nb)); c != 0 {
			return c
		}
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// CheckName reports a name or key a store cannot hold (empty, over
// MaxIDBytes, invalid UTF-8, a NUL byte) as ErrInvalid, naming it what:
// the checks every store makes of IDs, names and dedup fingerprints.
func CheckName(what, v string) error { return checkName(what, v) }

func checkName(what, v string) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(v) > MaxIDBytes:
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalid, what, len(v), MaxIDBytes)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, what)
	case strings.ContainsRune(v, 0):
		return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalid, what)
	}
	return nil
}

func checkJSON(what string, v json.RawMessage, limit int) error {
	if len(v) == 0 {
		return nil
	}
	if len(v) > limit {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, what, len(v), limit)
	}
	if !json.Valid(v) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
