package runend

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/task"
)

// Action is the notification action an outcome fires for a run closed
// outside a step: notify.Action of its status, with the default on_abort
// action (no step's own applies). Failed and escalated fire "escalate",
// aborted "notify", stopped "stopped"; completed (and any status that
// does not end a run early) fires nothing, "".
func (o Outcome) Action() string {
	return notify.Action(string(o.Status), "")
}

// Closed is a run that its driver closed outside a step — the recorder
// function on AWS, the local runner — as its notifications are told of
// it.
type Closed struct {
	RunID    string
	Pipeline task.Pipeline // the facts of the pipeline the run ran (task.PipelineOf)
	Outcome  Outcome
	Trigger  json.RawMessage // the run's trigger; nil when unknown
	// Extra holds further template variables (the recorder's
	// execution_arn, the execution's status and error); they win over
	// the others.
	Extra map[string]any
}

// Notify fires, through n, the notifications of the action c's outcome
// calls for (Outcome.Action): the template sees the run, its trigger, the
// outcome's status, escalation_reason (Outcome.Escalation: the status, or
// timed_out / execution_aborted), step_summary (the outcome's reason) and
// c.Extra, with no current step. Each delivery is logged to log, a failed
// one as a warning; none is retried. It returns the deliveries: none when
// n is nil or the outcome fires nothing. A caller fires once per run: only
// when it was the one that closed the run, not when a step had already
// closed it (the step notified then).
func Notify(ctx context.Context, n notify.Notifier, log *slog.Logger, c Closed) []notify.Delivery {
	action := c.Outcome.Action()
	if action == "" || n == nil {
		return nil
	}
	deliveries := n.Fire(ctx, c.Pipeline, action, notify.Context{
		RunID:            c.RunID,
		Status:           string(c.Outcome.Status),
		Trigger:          c.Trigger,
		EscalationReason: c.Outcome.Escalation,
		StepSummary:      c.Outcome.Reason,
		Extra:            c.Extra,
	})
	notify.LogDeliveries(ctx, log, deliveries)
	return deliveries
}
