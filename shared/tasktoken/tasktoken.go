// Package tasktoken resumes a Step Functions run that waits on a task
// token (a human step under lambda:invoke.waitForTaskToken) with an
// approver's decision. The callback function decides approvals through
// it, and so does `stepline serve --aws`: one code path for both.
package tasktoken

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/task"
)

// Sender is the Step Functions call that resumes a waiting run
// (satisfied by *sfn.Client).
type Sender interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
}

var _ Sender = (*sfn.Client)(nil)

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
		if _, err := c.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(taskToken), Output: aws.String(string(out))}); err != nil {
			return fmt.Errorf("send task success: %w", err)
		}
		return nil
	}
}
