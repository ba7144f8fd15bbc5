package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/fault"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/task"
)

// ActionApproval is the notifications action fired when a human step waits
// for a decision: every notification a pipeline configures under
// `notifications: {approval: [...]}` is sent with the signed link.
const ActionApproval = "approval"

// DefaultApprovalTemplate renders an approval notification that has no
// template of its own.
const DefaultApprovalTemplate = `{{ pipeline_name }} run {{ pipeline_run_id }} waits for approval at step {{ current_step }}: {{ approval_message }}
Approve or reject: {{ approval_url }} (open until {{ approval_expires_at }})`

// facts is what the Notifier needs of the Task being handled beyond the
// approval itself: the pipeline's notifications and the run's context.
type facts struct {
	pipeline task.Pipeline
	trigger  json.RawMessage
	steps    map[string]json.RawMessage
}

type factsKey struct{}

func withFacts(ctx context.Context, f facts) context.Context {
	return context.WithValue(ctx, factsKey{}, f)
}

func factsFrom(ctx context.Context) (facts, bool) {
	f, ok := ctx.Value(factsKey{}).(facts)
	return f, ok
}

// linkNotifier tells approvers where to decide: it signs the approval's
// link and sends it through the pipeline's approval notifications, or logs
// it when none is configured or none could be delivered. The link carries
// only the signed approval ID; the task token stays in the store.
type linkNotifier struct {
	links         *approval.Service // only Signer and Link are used
	baseURL       string            // the API's public URL
	notifications notify.Notifier   // nil: links are only logged
	// chat sends the request to the run's team's chat channel
	// (human_approval); nil: none.
	chat *approval.Router
	log  *slog.Logger
}

var _ steprun.Notifier = (*linkNotifier)(nil)

// NotifyApproval implements steprun.Notifier.
func (n *linkNotifier) NotifyApproval(ctx context.Context, a store.Approval, stage string) error {
	link := n.links.Link(n.baseURL, a)
	if link == "" {
		return fmt.Errorf("approval %s: no link: %w", a.ID, approval.ErrNoKey)
	}
	attrs := []any{"approval", a.ID, "run", a.RunID, "step", a.Step, "pipeline", a.Pipeline, "stage", stage,
		"expires_at", a.ExpiresAt.UTC().Format(time.RFC3339)}
	if n.chat != nil {
		switch kind, err := n.chat.Request(ctx, a, stage); {
		case errors.Is(err, approval.ErrNoRoute):
		case err != nil:
			n.log.WarnContext(ctx, "approval chat request not delivered", "approval", a.ID, "channel", kind, "error", err.Error())
		case kind != "":
			n.log.InfoContext(ctx, "approval chat request delivered", "approval", a.ID, "channel", kind)
		}
	}
	f, _ := factsFrom(ctx)
	if n.notifications != nil && hasAction(f.pipeline, ActionApproval) {
		deliveries := n.notifications.Fire(ctx, withDefaultTemplate(f.pipeline), ActionApproval, notify.Context{
			RunID:       a.RunID,
			CurrentStep: a.Step,
			Status:      steprun.StatusWaiting,
			Trigger:     f.trigger,
			Steps:       f.steps,
			StepSummary: a.Message,
			Extra: map[string]any{
				"approval_url":        link,
				"approval_id":         a.ID,
				"approval_message":    a.Message,
				"approval_expires_at": a.ExpiresAt.UTC().Format(time.RFC3339),
			},
		})
		sent := 0
		for _, d := range deliveries {
			if d.Err != nil {
				n.log.WarnContext(ctx, "approval notification not delivered", "approval", a.ID, "channel", d.Channel, "error", d.Err.Error())
				continue
			}
			sent++
			n.log.InfoContext(ctx, "approval notification delivered", "approval", a.ID, "channel", d.Channel, "via", d.Via, "muted", d.Muted)
		}
		if sent > 0 {
			n.log.InfoContext(ctx, "approval requested", attrs...)
			return nil
		}
	}
	// Nothing carried the link: the log is where an operator finds it.
	n.log.InfoContext(ctx, "approval requested", append(attrs, "link", link, "message", a.Message)...)
	return nil
}

// hasAction reports whether p configures notifications for action.
func hasAction(p task.Pipeline, action string) bool {
	for _, a := range p.Notifications {
		if a.Name == action && len(a.Notices) > 0 {
			return true
		}
	}
	return false
}

// withDefaultTemplate returns p with DefaultApprovalTemplate given to the
// approval notifications that have no template, so that the message
// always carries the link. p itself is not changed.
func withDefaultTemplate(p task.Pipeline) task.Pipeline {
	actions := make([]pipeline.Action, len(p.Notifications))
	for i, a := range p.Notifications {
		actions[i] = a
		if a.Name != ActionApproval {
			continue
		}
		notices := make([]pipeline.Notification, len(a.Notices))
		for j, nt := range a.Notices {
			if nt.Template == "" {
				nt.Template = DefaultApprovalTemplate
			}
			notices[j] = nt
		}
		actions[i].Notices = notices
	}
	p.Notifications = actions
	return p
}

// TaskHandler runs one Task (satisfied by (*steprun.Handler).Lambda()).
type TaskHandler func(ctx context.Context, req task.Request) (task.Response, error)

// approvalTasks accepts the Tasks of human steps only (mode approval) and
// hands them to next with the Task's pipeline and run context attached for
// the Notifier.
func approvalTasks(next TaskHandler) TaskHandler {
	return func(ctx context.Context, req task.Request) (task.Response, error) {
		if req.Mode != task.ModeApproval {
			return task.Response{}, fault.Surface(fault.Errorf[fault.ConfigError](
				"approval function: mode %q: it records approvals (mode %q) only; other Tasks invoke the step function", req.Mode, task.ModeApproval))
		}
		ctx = withFacts(ctx, facts{pipeline: req.Pipeline, trigger: req.Trigger, steps: req.Steps})
		return next(ctx, req)
	}
}
