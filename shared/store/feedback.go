package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcome is a person's verdict on a run's or a step's answer.
type Outcome string

// Feedback outcomes, and the label each gives a calibration sample.
const (
	OutcomeCorrect   Outcome = "correct"   // label 1
	OutcomePartial   Outcome = "partial"   // label 0.5
	OutcomeIncorrect Outcome = "incorrect" // label 0
)

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool {
	return o == OutcomeCorrect || o == OutcomePartial || o == OutcomeIncorrect
}

// Label is the outcome as a calibration label: correct 1, partial 0.5,
// incorrect 0.
func (o Outcome) Label() float64 {
	switch o {
	case OutcomeCorrect:
		return 1
	case OutcomePartial:
		return 0.5
	}
	return 0
}

// MaxNotesBytes bounds Feedback.Notes.
const MaxNotesBytes = 4 << 10

// Feedback is a verdict on a run or on one step of a run. A later one
// replaces the earlier (upsert).
type Feedback struct {
	Outcome     Outcome   `json:"outcome"`
	Notes       string    `json:"notes,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// NormalizeFeedback checks f — a known outcome, notes within
// MaxNotesBytes and valid UTF-8, a submission time — and returns it with
// its time in UTC.
func NormalizeFeedback(f Feedback) (Feedback, error) {
	switch {
	case !f.Outcome.Valid():
		return Feedback{}, fmt.Errorf("%w: feedback outcome %q: want correct, partial or incorrect", ErrInvalid, f.Outcome)
	case len(f.Notes) > MaxNotesBytes:
		return Feedback{}, fmt.Errorf("%w: feedback notes are %d bytes, limit %d", ErrTooLarge, len(f.Notes), MaxNotesBytes)
	case !utf8.ValidString(f.Notes) || strings.ContainsRune(f.Notes, 0):
		return Feedback{}, fmt.Errorf("%w: feedback notes are not valid UTF-8 text", ErrInvalid)
	case f.SubmittedAt.IsZero():
		return Feedback{}, fmt.Errorf("%w: feedback without a submission time", ErrInvalid)
	}
	f.SubmittedAt = f.SubmittedAt.UTC()
	return f, nil
}

// Bucket is what a step's calibration is kept per: one configuration of
// one step. A change of any part — another model, an edited prompt
// template, a new agent version — starts a new bucket with no history.
type Bucket struct {
	Pipeline string `json:"pipeline"`
	Step     string `json:"step"`
	// Executor is "executor:agent" for an agent step, else the executor.
	Executor     string `json:"executor"`
	Model        string `json:"model,omitempty"`
	Provider     string `json:"provider,omitempty"`
	PromptHash   string `json:"prompt_hash,omitempty"`
	AgentVersion string `json:"agent_version,omitempty"`
}

// BucketOf is the bucket of a step record of a run of pipeline.
func BucketOf(pipeline string, rec StepRecord) Bucket {
	exec := rec.Executor
	if rec.Agent != "" {
		exec += ":" + rec.Agent
	}
	return Bucket{Pipeline: pipeline, Step: rec.Name, Executor: exec, Model: rec.Model, Provider: rec.Provider,
		PromptHash: rec.PromptHash, AgentVersion: rec.AgentVersion}
}

// Key is the bucket's identity: a content hash of its parts (32 hex
// digits), the same in every store.
func (b Bucket) Key() string {
	h := sha256.New()
	for _, p := range []string{b.Pipeline, b.Step, b.Executor, b.Model, b.Provider, b.PromptHash, b.AgentVersion} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// String names the bucket for people: "step executor model@provider
// prompt:hash agent:version".
func (b Bucket) String() string {
	var s strings.Builder
	s.WriteString(b.Step + " " + b.Executor)
	if b.Model != "" || b.Provider != "" {
		s.WriteString(" " + b.Model + "@" + b.Provider)
	}
	if b.PromptHash != "" {
		s.WriteString(" prompt:" + b.PromptHash)
	}
	if b.AgentVersion != "" {
		s.WriteString(" agent:" + b.AgentVersion)
	}
	return s.String()
}

func checkBucket(b Bucket) error {
	if err := checkName("bucket pipeline", b.Pipeline); err != nil {
		return err
	}
	if err := checkName("bucket step", b.Step); err != nil {
		return err
	}
	for _, f := range []struct{ what, v string }{{"executor", b.Executor}, {"model", b.Model}, {"provider", b.Provider},
		{"prompt hash", b.PromptHash}, {"agent version", b.AgentVersion}} {
		if len(f.v) > MaxIDBytes {
			return fmt.Errorf("%w: bucket %s is %d bytes, limit %d", ErrInvalid, f.what, len(f.v), MaxIDBytes)
		}
	}
	return nil
}

// PromptHash is the content hash of a prompt template as buckets and step
// records carry it: the first 12 hex digits of the SHA-256 of the
// template with line endings made "\n" and surrounding white space
// trimmed, so that an edit that changes nothing but those keeps the
// bucket. An empty template has an empty hash.
func PromptHash(template string) string {
	t := strings.TrimSpace(strings.ReplaceAll(template, "\r\n", "\n"))
	if t == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])[:12]
}

// Sample is one finished execution of a step in its bucket: the value
// the bins sort it by (Trust) and what labels it: the step's feedback, a
// failed deterministic check, the run's feedback.
type Sample struct {
	Bucket Bucket `json:"bucket"`
	RunID  string `json:"run_id"`
	Step   string `json:"step"`
	// StartedAt is the start of the step's record (its attempt): the
	// sample's place in its bucket's history, newest last.
	StartedAt time.Time `json:"started_at"`
	// Trust is what the bins sort by: the step's effective confidence
	// (S after its verifier), before calibration, grounding and checks
	// act on it; steprun records and looks up the same value.
	Trust float64 `json:"trust"`
	// DeterministicFailed: a deterministic check failed or could not run
	// (a human check rejected included). It labels the sample 0 unless a
	// person gave the step feedback.
	DeterministicFailed bool `json:"deterministic_failed,omitempty"`

	// Set by reads: the step's and the run's feedback outcomes, "" for
	// none.
	StepFeedback Outcome `json:"step_feedback,omitempty"`
	RunFeedback  Outcome `json:"run_feedback,omitempty"`
}

// Label sources (Sample.Label).
const (
	LabelStepFeedback  = "step_feedback"
	LabelDeterministic = "deterministic_check"
	LabelRunFeedback   = "run_feedback"
)

// Label is the sample's label and where it came from, by precedence: the
// step's feedback, then a failed deterministic check (0), then the run's
// feedback. ok is false for an unlabelled sample.
func (s Sample) Label() (label float64, source string, ok bool) {
	switch {
	case s.StepFeedback.Valid():
		return s.StepFeedback.Label(), LabelStepFeedback, true
	case s.DeterministicFailed:
		return 0, LabelDeterministic, true
	case s.RunFeedback.Valid():
		return s.RunFeedback.Label(), LabelRunFeedback, true
	}
	return 0, "", false
}

// NormalizeSample checks a sample for writing and returns it with its
// time in UTC and the read-side fields cleared.
func NormalizeSample(s Sample) (Sample, error) {
	if err := checkBucket(s.Bucket); err != nil {
		return Sample{}, fmt.Errorf("sample: %w", err)
	}
	if err := checkName("run ID", s.RunID); err != nil {
		return Sample{}, fmt.Errorf("sample: %w", err)
	}
	if err := checkName("step name", s.Step); err != nil {
		return Sample{}, fmt.Errorf("sample: %w", err)
	}
	if math.IsNaN(s.Trust) || s.Trust < 0 || s.Trust > 1 {
		return Sample{}, fmt.Errorf("%w: sample of step %q: trust %v is not a number in 0..1", ErrInvalid, s.Step, s.Trust)
	}
	if s.StartedAt.IsZero() {
		return Sample{}, fmt.Errorf("%w: sample of step %q without a start time", ErrInvalid, s.Step)
	}
	s.StartedAt = s.StartedAt.UTC()
	s.StepFeedback, s.RunFeedback = "", ""
	return s, nil
}

// Calibration defaults and bounds (a step's calibration: block).
const (
	DefaultBinWidth = 0.1
	DefaultNMin     = 20
	// MaxBucketSamples is how many of a bucket's newest samples a read
	// returns: calibration weighs the recent history of a configuration.
	MaxBucketSamples = 5000
)

// Bin is one bin of a bucket's calibration: the samples whose trust lies
// in [Lo, Hi) (the last bin includes 1).
type Bin struct {
	Index int     `json:"index"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// N counts the labelled samples in the bin; Samples all of them.
	N       int `json:"n"`
	Samples int `json:"samples"`
	// Mean is the mean label of the labelled samples; nil when N is 0.
	Mean *float64 `json:"mean"`
	// Validated: N reached the step's n_min, so Mean stands in for the
	// trust of a step whose trust falls in the bin.
	Validated bool `json:"validated"`
}

// BinIndex is the bin of width w a trust falls in: trust*n rounded down,
// n = 1/w bins, 1 in the last. A tolerance of 1e-9 keeps a trust that is
// a bin's lower edge (0.3 with w 0.1) out of the bin below it.
func BinIndex(trust, w float64) int {
	n := BinCount(w)
	i := int(math.Floor(trust*float64(n) + 1e-9))
	return max(0, min(i, n-1))
}

// BinCount is the number of bins of width w (which divides 1).
func BinCount(w float64) int {
	if w <= 0 || w > 1 {
		return 1
	}
	return max(1, int(math.Round(1/w)))
}

// BinRange is the range [lo, hi) of bin i of width w.
func BinRange(i int, w float64) (lo, hi float64) {
	n := float64(BinCount(w))
	return round9(float64(i) / n), round9(float64(i+1) / n)
}

func round9(v float64) float64 { return math.Round(v*1e9) / 1e9 }

// BinOf computes the bin of width w that trust falls in over samples,
// validated when it has at least nMin labelled samples.
func BinOf(samples []Sample, trust, w float64, nMin int) Bin {
	i := BinIndex(trust, w)
	b := Bin{Index: i}
	b.Lo, b.Hi = BinRange(i, w)
	var sum float64
	for _, s := range samples {
		if BinIndex(s.Trust, w) != i {
			continue
		}
		b.Samples++
		if l, _, ok := s.Label(); ok {
			b.N++
			sum += l
		}
	}
	if b.N > 0 {
		m := round9(sum / float64(b.N))
		b.Mean = &m
	}
	b.Validated = b.N >= nMin && b.N > 0
	return b
}

// Bins computes every bin of width w that holds a sample, in order.
func Bins(samples []Sample, w float64, nMin int) []Bin {
	seen := map[int]bool{}
	for _, s := range samples {
		seen[BinIndex(s.Trust, w)] = true
	}
	var out []Bin
	for i := range BinCount(w) {
		if seen[i] {
			lo, _ := BinRange(i, w)
			out = append(out, BinOf(samples, lo, w, nMin))
		}
	}
	return out
}

// FeedbackStore keeps feedback on runs and steps and the calibration
// samples of steps by bucket. Store embeds it; both stores pass the
// conformance suite's feedback tests (storetest.RunFeedback).
type FeedbackStore interface {
	// PutRunFeedback stores the run's feedback, replacing any earlier.
	// Errors: ErrNotFound for an unknown run; ErrInvalid, ErrTooLarge
	// (see NormalizeFeedback).
	PutRunFeedback(ctx context.Context, runID string, f Feedback) error

	// GetRunFeedback returns the run's feedback, nil when it has none.
	// Errors: ErrNotFound for an unknown run.
	GetRunFeedback(ctx context.Context, runID string) (*Feedback, error)

	// PutStepFeedback stores feedback on one step of a run (by its
	// record name, all attempts together), replacing any earlier.
	// Errors: ErrNotFound for an unknown run or a step the run has no
	// record of; ErrInvalid, ErrTooLarge.
	PutStepFeedback(ctx context.Context, runID, step string, f Feedback) error

	// GetStepFeedback returns a step's feedback, nil when it has none.
	// Errors: ErrNotFound for an unknown run.
	GetStepFeedback(ctx context.Context, runID, step string) (*Feedback, error)

	// RecordSample stores a step's sample in its bucket, keyed by (bucket,
	// StartedAt, run, step): the same sample again is a no-op, and a
	// sample written again at its key (a retried Task) keeps the feedback
	// given meanwhile. Errors: ErrInvalid.
	RecordSample(ctx context.Context, s Sample) error

	// BucketSamples returns the bucket's newest MaxBucketSamples samples,
	// oldest first, each with the step's and the run's feedback. On
	// DynamoDB it is one Query of the bucket's partition.
	BucketSamples(ctx context.Context, b Bucket) ([]Sample, error)

	// ListBuckets returns the buckets of a pipeline's steps that hold
	// samples — of one step when step is not "" — ordered by step, then
	// key.
	ListBuckets(ctx context.Context, pipeline, step string) ([]Bucket, error)
}
