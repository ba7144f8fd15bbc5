// Package tasktoken resumes a Step Functions run that waits on a task
// token (a human step under lambda:invoke.waitForTaskToken) with an
// approver's decision. The callback function decides approvals through
// it, and so does `stepline serve --aws`: one code path for both.
package tasktoken

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepline/stepline/shared/task"
)

// Sender is the Step Functions call that resumes a waiting run:
// SendTaskSuccess with the task token and the Task's output (JSON text).
// The callback function's client (functions/internal/states) has it; the
// SDK's client, which serve --aws uses, through an adapter (package
// awsui). It is written without the SDK's types so that a function
// sending it need not link the SDK's Step Functions client.
type Sender interface {
	SendTaskSuccess(ctx context.Context, taskToken, output string) error
}

// Resume returns an approval.Service's Complete: SendTaskSuccess with the
// task token and the decision ({"decision", "by", "comment"}) as the
// Task's output, which the state machine hands to the human step. Its
// errors are Step Functions' (TaskTimedOut, InvalidToken, ...) wrapped
// with "send task success".
func Resume(c Sender) func(ctx context.Context, taskToken string, d task.Decision) error {
	return func(ctx context.Context, taskToken string, d task.Decision) error {
		out, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("send task success: %w", err)
		}
		if err := c.SendTaskSuccess(ctx, taskToken, string(out)); err != nil {
			return fmt.Errorf("send task success: %w", err)
		}
		return nil
	}
}
