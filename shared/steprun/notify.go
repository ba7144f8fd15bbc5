package steprun

import (
	"context"
	"log/slog"

	"github.com/stepline/stepline/shared/store"
)

// Notifier tells approvers that an approval waits for them. The approval
// carries no task token (it is never handed to a Notifier's output:
// Approval.TaskToken is cleared before the call).
type Notifier interface {
	// NotifyApproval sends the request. An error is logged; the approval
	// stays open and can still be decided.
	NotifyApproval(ctx context.Context, a store.Approval, stage string) error
}

// LogNotifier writes pending approvals to a logger: the default, and
// what stage testing uses.
type LogNotifier struct {
	Logger *slog.Logger
}

var _ Notifier = LogNotifier{}

// NotifyApproval implements Notifier.
func (n LogNotifier) NotifyApproval(ctx context.Context, a store.Approval, stage string) error {
	log := n.Logger
	if log == nil {
		log = slog.Default()
	}
	log.InfoContext(ctx, "approval requested", "approval", a.ID, "run", a.RunID, "step", a.Step,
		"pipeline", a.Pipeline, "stage", stage, "expires_at", a.ExpiresAt, "message", a.Message)
	return nil
}
