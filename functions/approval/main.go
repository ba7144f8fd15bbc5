// Command approval is the approval function's Lambda: the
// ${ApprovalFunctionArn} a human step's waitForTaskToken Task invokes. It
// records the pending approval with the Task's token (package
// shared/steprun, mode approval), marks the run waiting and tells the
// approvers: the signed link (package shared/approval) goes out through
// the pipeline's `approval` notifications, or into the function's log when
// the pipeline configures none. The link carries the signed approval ID
// only; the task token never leaves the table.
//
// Environment:
//
//	TABLE_NAME               DynamoDB table of runs, steps and approvals (required)
//	APPROVAL_KEY_SECRET_ARN  Secrets Manager secret holding the link signing key (required;
//	                         read once, when the container starts)
//	API_BASE_URL             public URL of the HTTP API the links point to (required)
//	SECRET_REFS              where ${NAME} secrets of notification configs live:
//	                         NAME=secretsmanager:id[#key],NAME=ssm:/param
//	LOG_LEVEL                debug, info (default), warn or error
//
// Notification channels: log, webhook, slack, and sns (Publish through
// package shared/notify; the role needs sns:Publish on the topic).
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_<SERVICE> overrides such as
// AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL_SNS are honoured).
package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
)

func main() {
	f := boot.Start()
	st := f.Store()
	baseURL := os.Getenv("API_BASE_URL")
	if baseURL == "" {
		f.Fail("API_BASE_URL is not set")
	}
	secrets, sm, err := secret.ForFunction(f.AWS, os.Getenv)
	f.Check(err, "secrets")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	key, err := approval.LoadKey(ctx, sm, os.Getenv("APPROVAL_KEY_SECRET_ARN"))
	cancel()
	f.Check(err, "APPROVAL_KEY_SECRET_ARN")
	sns, err := notify.NewSNS(f.AWS)
	f.Check(err, "sns")
	client := &http.Client{}
	notices := &notify.Dispatcher{
		HTTP:    client,
		Secrets: secrets,
		SNS:     sns,
		Logger:  f.Log,
	}
	h := &steprun.Handler{
		Store: st,
		Notifier: &linkNotifier{
			links:         &approval.Service{Signer: &approval.Signer{Key: key}},
			baseURL:       baseURL,
			notifications: notices,
			log:           f.Log,
		},
		HTTP:    client,
		Secrets: secrets,
		Logger:  f.Log,
	}
	lambda.Start(approvalTasks(h.Lambda()))
}
