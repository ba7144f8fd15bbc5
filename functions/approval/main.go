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
//	                         read once, from the container's start; the first request
//	                         waits for it)
//	API_BASE_URL             public URL of the HTTP API the links point to (required)
//	SECRET_REFS              where ${NAME} secrets of notification configs and of the
//	                         chat routes live: NAME=secretsmanager:id[#key],NAME=ssm:/param
//	HUMAN_APPROVAL           the approval routes as JSON (approval.Routes): the request also
//	                         goes to the run's team's Telegram, Slack or Teams channel
//	TELEGRAM_API_URL         the Bot API's base URL (default https://api.telegram.org)
//	LOG_LEVEL                debug, info (default), warn or error
//
// Notification channels: log, webhook, slack, telegram, msteams, and sns
// (Publish through package shared/notify; the role needs sns:Publish on
// the topic).
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_<SERVICE> overrides such as
// AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL_SNS are honoured).
package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/task"
)

func main() {
	go boot.Prepare[json.RawMessage, task.Response]() // the Task itself is decoded by hand (task.Decoding)
	f := boot.Start("approval")
	secrets, sm := f.Secrets()
	// The signing key is read while the rest of the start and the
	// runtime's first request for work go on; the first invocation waits
	// for it (boot.Await: without it the function exits, answering
	// nothing).
	keyARN := os.Getenv("APPROVAL_KEY_SECRET_ARN")
	key := boot.Read(func(ctx context.Context) ([]byte, error) { return approval.LoadKey(ctx, sm, keyARN) })
	st := f.Store()
	baseURL := os.Getenv("API_BASE_URL")
	if baseURL == "" {
		f.Fail("API_BASE_URL is not set")
	}
	sns, err := notify.NewSNS(f.AWS)
	f.Check(err, "sns")
	client := &http.Client{}
	notices := &notify.Dispatcher{
		HTTP:        client,
		Secrets:     secrets,
		SNS:         sns,
		Logger:      f.Log,
		TelegramAPI: os.Getenv("TELEGRAM_API_URL"),
	}
	routes, err := approval.ParseRoutes(os.Getenv("HUMAN_APPROVAL"))
	f.Check(err, "HUMAN_APPROVAL")
	signer := &approval.Signer{} // its key is set by boot.Await, before the first request
	links := &approval.Service{Signer: signer}
	var chat *approval.Router
	if !routes.Empty() {
		chat = &approval.Router{Routes: routes, Service: links, BaseURL: baseURL, Secrets: secrets, Runs: st,
			HTTP: client, TelegramAPI: os.Getenv("TELEGRAM_API_URL"), WebhooksOnly: true, Logger: f.Log}
	}
	h := &steprun.Handler{
		Store: st,
		Notifier: &linkNotifier{
			links:         links,
			baseURL:       baseURL,
			notifications: notices,
			chat:          chat,
			log:           f.Log,
		},
		HTTP:    client,
		Secrets: secrets,
		Logger:  f.Log,
	}
	boot.Serve(f, boot.Await(f, key, "APPROVAL_KEY_SECRET_ARN", func(k []byte) { signer.Key = k },
		task.Decoding(approvalTasks(h.Lambda()))))
}
