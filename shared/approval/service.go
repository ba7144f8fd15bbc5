package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// More errors of Page and Decide.
var (
	// ErrNotFound: the link is genuine but its approval is not stored (a
	// link of another installation using the same key, or a deleted one).
	ErrNotFound = errors.New("approval not found")
	// ErrDecided: the approval was decided already; a link decides once.
	// It also matches store.ErrConflict.
	ErrDecided = errors.New("approval already decided")
	// ErrBadDecision: a decision other than approve or reject.
	ErrBadDecision = errors.New("decision must be approve or reject")
	// ErrResume: the decision is recorded but the waiting run could not be
	// resumed with it (the task token expired, the engine is unreachable).
	ErrResume = errors.New("decision recorded, but the run was not resumed")
)

// Store is what the Service needs of the run store.
type Store interface {
	GetApproval(ctx context.Context, id string) (store.Approval, error)
	DecideApproval(ctx context.Context, id string, d store.Decision, by string, now time.Time) (store.Approval, error)
}

// Service decides approvals from signed links.
type Service struct {
	Store  Store
	Signer *Signer
	// Complete resumes the waiting run: SendTaskSuccess with the task
	// token, locally through the engine, on AWS through Step Functions.
	Complete func(ctx context.Context, taskToken string, decision task.Decision) error
	// Identify, when set, names the approver of an HTTP decision (an
	// authenticated user, say) in place of the form's "by" field.
	Identify func(r *http.Request) string
	// Feedback, when set, lets the approver mark the step's answer
	// correct, partial or incorrect along with the decision (the page's
	// optional outcome and notes), recorded as the step's feedback: a
	// calibration label. The mark rides on the decision's single use: a
	// link that decided already marks nothing.
	Feedback FeedbackStore
	Logger   *slog.Logger
}

// FeedbackStore is what the Service needs to record and show a step's
// feedback (store.FeedbackStore's step methods).
type FeedbackStore interface {
	PutStepFeedback(ctx context.Context, runID, step string, f store.Feedback) error
	GetStepFeedback(ctx context.Context, runID, step string) (*store.Feedback, error)
}

var _ FeedbackStore = (store.Store)(nil)

// feedbackStep is the step an approval's feedback is about: the step a
// human check ("<step>:check:<name>") checks, else the approval's step.
func feedbackStep(a store.Approval) string {
	if i := strings.Index(a.Step, ":check:"); i > 0 {
		return a.Step[:i]
	}
	return a.Step
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Link returns the approval link of a under base (the service's public
// URL, such as "https://stepline.example.com"), valid until a expires.
// It returns "" when the Signer cannot sign.
func (s *Service) Link(base string, a store.Approval) string {
	tok := s.Signer.Sign(a.ID, a.ExpiresAt)
	if tok == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/approvals/" + tok
}

// Approval states a page shows.
const (
	StatePending = "pending"
	StateDecided = "decided"
	StateExpired = "expired"
)

// PageData is what the confirmation page shows. It never holds the task
// token.
type PageData struct {
	ID        string     `json:"id"`
	RunID     string     `json:"run_id"`
	Pipeline  string     `json:"pipeline,omitempty"`
	Step      string     `json:"step"`
	Message   string     `json:"message,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	State     string     `json:"state"`              // StatePending, StateDecided or StateExpired
	Decision  string     `json:"decision,omitempty"` // approved or rejected
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// Feedback is the feedback the step's answer has (from this page or
	// elsewhere), when the Service records feedback.
	Feedback *store.Feedback `json:"feedback,omitempty"`
}

func pageData(a store.Approval, now time.Time) PageData {
	pd := PageData{
		ID: a.ID, RunID: a.RunID, Pipeline: a.Pipeline, Step: a.Step, Message: a.Message,
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Decision: string(a.Decision),
		DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt, State: StatePending,
	}
	switch {
	case a.Decision != store.DecisionPending:
		pd.State = StateDecided
	case !now.Before(a.ExpiresAt):
		pd.State = StateExpired
	}
	return pd
}

// Page returns what the link's confirmation page shows: the approval,
// whether pending, decided or expired. Errors: ErrForged, ErrExpired (the
// link's own expiry), ErrNotFound, ErrNoKey.
func (s *Service) Page(ctx context.Context, token string) (PageData, error) {
	id, err := s.Signer.Verify(token)
	if err != nil {
		return PageData{}, fmt.Errorf("show approval: %w", err)
	}
	a, err := s.Store.GetApproval(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return PageData{}, fmt.Errorf("show approval: %w", ErrNotFound)
		}
		return PageData{}, fmt.Errorf("show approval: %w", err)
	}
	pd := pageData(a, s.Signer.now())
	if s.Feedback != nil {
		f, err := s.Feedback.GetStepFeedback(ctx, a.RunID, feedbackStep(a))
		if err != nil {
			s.log().WarnContext(ctx, "read the step's feedback", "approval", a.ID, "run", a.RunID, "error", err.Error())
		}
		pd.Feedback = f
	}
	return pd, nil
}

// Mark records the approver's verdict on the step's answer as the step's
// feedback (see Service.Feedback). The handler calls it only after the
// same request decided the approval, so a link marks once, with its
// decision. Errors: ErrForged, ErrExpired, ErrNotFound, and the store's
// (store.ErrNotFound when the step has no record, store.ErrInvalid).
func (s *Service) Mark(ctx context.Context, token string, f store.Feedback) error {
	const op = "mark the step's answer"
	if s.Feedback == nil {
		return fmt.Errorf("%s: no feedback store is configured", op)
	}
	id, err := s.Signer.Verify(token)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	a, err := s.Store.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := s.Feedback.PutStepFeedback(ctx, a.RunID, feedbackStep(a), f); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	s.log().InfoContext(ctx, "step marked", "approval", a.ID, "run", a.RunID, "step", feedbackStep(a), "outcome", string(f.Outcome))
	return nil
}

// decisionOf reads a decision: approve/approved or reject/rejected.
func decisionOf(s string) (store.Decision, string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case task.Approve, string(store.DecisionApproved):
		return store.DecisionApproved, task.Approve, true
	case task.Reject, string(store.DecisionRejected):
		return store.DecisionRejected, task.Reject, true
	}
	return "", "", false
}

// Decide records decision ("approve" or "reject") by by on the link's
// approval, once, and resumes the run. by is cut to one line of at most
// 200 bytes; empty, it is DefaultBy. Errors: ErrBadDecision, ErrForged,
// ErrExpired (the link's or the approval's expiry), ErrNotFound,
// ErrDecided (a replay: the approval was decided already, by this link
// or another way; a replay ResendAfter or more after the decision sends
// the recorded decision to the run again, which resumes a run whose first
// resume failed), ErrResume (recorded, but the run did not resume),
// ErrNoKey.
func (s *Service) Decide(ctx context.Context, token, decision, by string) error {
	const op = "decide approval"
	d, taskDecision, ok := decisionOf(decision)
	if !ok {
		return fmt.Errorf("%s: %w, not %q", op, ErrBadDecision, decision)
	}
	id, err := s.Signer.Verify(token)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = s.record(ctx, op, id, d, taskDecision, by)
	return err
}

// ResendAfter is how long after an approval was decided a replay of it
// sends the recorded decision to the run again (see resend): longer than
// the request that recorded it can still be resuming the run (API
// Gateway ends a request at 29 s), so that a double click never races
// the first click's resume.
const ResendAfter = 30 * time.Second

// resend sends the decision recorded on a, decided ResendAfter or more
// ago, to its run again: the resume that followed the record may have
// failed (ErrResume: Step Functions throttled, the process stopped), and
// the run then waits on a decided approval that nothing else would
// resume. Where the run went on, its task token is spent and the call
// fails (TaskTimedOut on AWS): nothing happens, and the failure is only
// logged at debug level.
func (s *Service) resend(ctx context.Context, a store.Approval) {
	if s.Complete == nil || a.DecidedAt == nil || s.Signer.now().Sub(*a.DecidedAt) < ResendAfter {
		return
	}
	_, decision, ok := decisionOf(string(a.Decision))
	if !ok {
		return
	}
	if err := s.Complete(ctx, a.TaskToken, task.Decision{Decision: decision, By: a.DecidedBy}); err != nil {
		red := secret.NewRedactor(nil)
		red.Add(a.TaskToken)
		s.log().DebugContext(ctx, "decision sent again; the run did not take it", "approval", a.ID, "run", a.RunID, "error", red.Error(err).Error())
		return
	}
	s.log().InfoContext(ctx, "run resumed with the decision recorded before", "approval", a.ID, "run", a.RunID, "step", a.Step,
		"decision", string(a.Decision), "by", a.DecidedBy)
}

// record records decision d on approval id, once, and resumes the run.
// The approval is returned as stored (decided, or as it stood when the
// decision was refused).
func (s *Service) record(ctx context.Context, op, id string, d store.Decision, taskDecision, by string) (store.Approval, error) {
	by = cleanBy(by)
	a, err := s.Store.DecideApproval(ctx, id, d, by, s.Signer.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a, fmt.Errorf("%s: %w", op, ErrNotFound)
	case errors.Is(err, store.ErrConflict):
		s.resend(ctx, a)
		return a, fmt.Errorf("%s: %w: %s by %q: %w", op, ErrDecided, a.Decision, a.DecidedBy, err)
	case errors.Is(err, store.ErrExpired):
		return a, fmt.Errorf("%s: %w: the approval expired at %s", op, ErrExpired, a.ExpiresAt.UTC().Format(time.RFC3339))
	case err != nil:
		return a, fmt.Errorf("%s: %w", op, err)
	}
	s.log().InfoContext(ctx, "approval decided", "approval", a.ID, "run", a.RunID, "step", a.Step,
		"pipeline", a.Pipeline, "decision", string(d), "by", by)
	if s.Complete == nil {
		return a, fmt.Errorf("%s: %w: no way to resume runs is configured", op, ErrResume)
	}
	if err := s.Complete(ctx, a.TaskToken, task.Decision{Decision: taskDecision, By: by}); err != nil {
		// An error may echo the task token, which can resume the run.
		red := secret.NewRedactor(nil)
		red.Add(a.TaskToken)
		err = red.Error(err)
		s.log().ErrorContext(ctx, "resume run after approval", "approval", a.ID, "run", a.RunID, "step", a.Step, "error", err.Error())
		return a, fmt.Errorf("%s: %w: run %s: %w", op, ErrResume, a.RunID, err)
	}
	return a, nil
}
