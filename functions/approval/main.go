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
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store/dynamo"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	fail := func(msg string, args ...any) {
		logger.Error(msg, args...)
		os.Exit(1)
	}
	cfg, err := awsenv.Load(os.Environ())
	if err != nil {
		fail("load AWS configuration", "err", err)
	}
	table, baseURL := os.Getenv("TABLE_NAME"), os.Getenv("API_BASE_URL")
	if table == "" || baseURL == "" {
		fail("TABLE_NAME and API_BASE_URL must be set")
	}
	secrets, sm, err := secret.ForFunction(cfg, os.Getenv)
	if err != nil {
		fail("secrets", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	key, err := approval.LoadKey(ctx, sm, os.Getenv("APPROVAL_KEY_SECRET_ARN"))
	cancel()
	if err != nil {
		fail("APPROVAL_KEY_SECRET_ARN", "err", err)
	}
	sns, err := notify.NewSNS(cfg)
	if err != nil {
		logger.Error("sns", "err", err)
		os.Exit(1)
	}
	client := &http.Client{}
	notices := &notify.Dispatcher{
		HTTP:    client,
		Secrets: secrets,
		SNS:     sns,
		Logger:  logger,
	}
	db, err := dynamo.NewClient(cfg)
	if err != nil {
		logger.Error("dynamodb", "err", err)
		os.Exit(1)
	}
	h := &steprun.Handler{
		Store: dynamo.New(db, table),
		Notifier: &linkNotifier{
			links:         &approval.Service{Signer: &approval.Signer{Key: key}},
			baseURL:       baseURL,
			notifications: notices,
			log:           logger,
		},
		HTTP:    client,
		Secrets: secrets,
		Logger:  logger,
	}
	lambda.Start(approvalTasks(h.Lambda()))
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
