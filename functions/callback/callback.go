package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/task"
)

// maxRequestBody bounds the body of a request handed to the HTTP handler
// (the approval form is a few hundred bytes).
const maxRequestBody = 64 << 10

// TaskSender is the Step Functions call that resumes a waiting run
// (satisfied by *sfn.Client).
type TaskSender interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
}

var _ TaskSender = (*sfn.Client)(nil)

// resumeWith returns the approval.Service's Complete: SendTaskSuccess with
// the task token and the decision ({"decision", "by", "comment"}) as the
// Task's output, which the state machine hands to the human step.
func resumeWith(c TaskSender) func(ctx context.Context, taskToken string, d task.Decision) error {
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

// routes serves the chat routes (POST /telegram/{bot}, POST /slack/{app})
// with chat and everything else (the approval links) with links.
func routes(links, chat http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/telegram/") || strings.HasPrefix(r.URL.Path, "/slack/") {
			chat.ServeHTTP(w, r)
			return
		}
		links.ServeHTTP(w, r)
	})
}
