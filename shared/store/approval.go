package store

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"
)

// Decision is a human's answer to an approval. The empty Decision is
// pending.
type Decision string

// Decisions.
const (
	DecisionPending  Decision = ""
	DecisionApproved Decision = "approved"
	DecisionRejected Decision = "rejected"
)

// Approval is a human step waiting for a decision. ID is the handle an
// approval link carries; TaskToken is what the waiting state machine is
// resumed with and never leaves the server side.
//
// TaskToken is tagged json:"-" so that an Approval encoded into an API
// response or a log line never carries it.
type Approval struct {
	ID        string     `json:"id"`
	RunID     string     `json:"run_id"`
	Step      string     `json:"step"`
	Pipeline  string     `json:"pipeline,omitempty"`
	Message   string     `json:"message,omitempty"` // the rendered request shown to the approver
	TaskToken string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	Decision  Decision   `json:"decision,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// Pending reports whether a is undecided and still open at now.
func (a Approval) Pending(now time.Time) bool {
	return a.Decision == DecisionPending && now.Before(a.ExpiresAt)
}

// Size limits for approvals.
const (
	MaxMessageBytes   = 64 << 10
	MaxTaskTokenBytes = 8 << 10
)

// NewApprovalID returns a random approval ID: 256 bits from crypto/rand,
// base64url without padding (43 characters).
func NewApprovalID() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new approval ID: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// NormalizeApproval checks a new approval and returns the form every store
// writes (times in UTC).
func NormalizeApproval(a Approval) (Approval, error) {
	if err := checkName("approval ID", a.ID); err != nil {
		return Approval{}, err
	}
	if err := checkName("run ID", a.RunID); err != nil {
		return Approval{}, err
	}
	if err := checkName("step name", a.Step); err != nil {
		return Approval{}, err
	}
	if len(a.Pipeline) > MaxIDBytes {
		return Approval{}, fmt.Errorf("%w: pipeline is %d bytes, limit %d", ErrInvalid, len(a.Pipeline), MaxIDBytes)
	}
	if a.TaskToken == "" {
		return Approval{}, fmt.Errorf("%w: approval %q has no task token", ErrInvalid, a.ID)
	}
	if len(a.TaskToken) > MaxTaskTokenBytes {
		return Approval{}, fmt.Errorf("%w: task token is %d bytes, limit %d", ErrInvalid, len(a.TaskToken), MaxTaskTokenBytes)
	}
	if len(a.Message) > MaxMessageBytes {
		return Approval{}, fmt.Errorf("%w: approval message is %d bytes, limit %d", ErrTooLarge, len(a.Message), MaxMessageBytes)
	}
	if a.CreatedAt.IsZero() || a.ExpiresAt.IsZero() {
		return Approval{}, fmt.Errorf("%w: approval %q needs CreatedAt and ExpiresAt", ErrInvalid, a.ID)
	}
	if !a.ExpiresAt.After(a.CreatedAt) {
		return Approval{}, fmt.Errorf("%w: approval %q expires before it is created", ErrInvalid, a.ID)
	}
	if a.Decision != DecisionPending || a.DecidedBy != "" || a.DecidedAt != nil {
		return Approval{}, fmt.Errorf("%w: approval %q is created with a decision", ErrInvalid, a.ID)
	}
	a.Message, _ = Cut(a.Message, MaxMessageBytes)
	a.CreatedAt = a.CreatedAt.UTC()
	a.ExpiresAt = a.ExpiresAt.UTC()
	return a, nil
}

// CheckDecision checks the arguments of DecideApproval.
func CheckDecision(id string, d Decision, by string) error {
	if err := checkName("approval ID", id); err != nil {
		return err
	}
	if d != DecisionApproved && d != DecisionRejected {
		return fmt.Errorf("%w: decision %q is neither %q nor %q", ErrInvalid, d, DecisionApproved, DecisionRejected)
	}
	if len(by) > MaxIDBytes {
		return fmt.Errorf("%w: decided-by is %d bytes, limit %d", ErrInvalid, len(by), MaxIDBytes)
	}
	return nil
}
