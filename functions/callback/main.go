// Command callback is the callback function's Lambda: the HTTP API's
// GET and POST /approvals/{id} routes (payload format 2.0). It serves the
// approval page and takes the decision with package shared/approval: the
// signed link is checked, the decision recorded once in DynamoDB, and the
// waiting run resumed with Step Functions SendTaskSuccess (output: the
// decision, {"decision": "approve"|"reject", "by": ...}).
//
// It also serves the chat routes of the project's human_approval
// (approval.ChatHandler): POST /telegram/{bot}, a Telegram bot's webhook
// (its X-Telegram-Bot-Api-Secret-Token checked in constant time), and
// POST /slack/{app}, a Slack app's request URL (its v0 signature checked);
// a button press is decided through the same path as a link.
//
// Environment:
//
//	TABLE_NAME               DynamoDB table of runs, steps and approvals (required)
//	APPROVAL_KEY_SECRET_ARN  Secrets Manager secret holding the link signing key (required;
//	                         read once, from the container's start; the first request
//	                         waits for it)
//	HUMAN_APPROVAL           the approval routes as JSON (approval.Routes; secrets as ${NAME})
//	SECRET_REFS              where the routes' ${NAME} secrets live: NAME=secretsmanager:id[#key],...
//	API_BASE_URL             public URL of the HTTP API, for the page links of edited chat messages
//	TELEGRAM_API_URL         the Bot API's base URL (default https://api.telegram.org)
//	SLACK_RESPONSE_URL       what a Slack response_url must start with (default https://hooks.slack.com/)
//	LOG_LEVEL                debug, info (default), warn or error
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN and the like are honoured).
package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/apigw"
	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/tasktoken"
)

func main() {
	go boot.Prepare[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]()
	f := boot.Start("callback")
	secrets, sm := f.Secrets()
	// The signing key is read while the rest of the start and the
	// runtime's first request for work go on; the first invocation waits
	// for it (boot.Await: without it the function exits, answering
	// nothing).
	keyARN := os.Getenv("APPROVAL_KEY_SECRET_ARN")
	key := boot.Read(func(ctx context.Context) ([]byte, error) { return approval.LoadKey(ctx, sm, keyARN) })
	st := f.Store()
	routesCfg, err := approval.ParseRoutes(os.Getenv("HUMAN_APPROVAL"))
	f.Check(err, "HUMAN_APPROVAL")
	sfn, err := states.New(f.AWS)
	f.Check(err, "step functions")
	signer := &approval.Signer{} // its key is set by boot.Await, before the first request
	svc := &approval.Service{
		Store:    st,
		Signer:   signer,
		Complete: tasktoken.Resume(sfn),
		Feedback: st,
		Logger:   f.Log,
	}
	chat := &approval.ChatHandler{
		Routes: routesCfg, Service: svc, Secrets: secrets, HTTP: &http.Client{Timeout: 5 * time.Second},
		TelegramAPI: os.Getenv("TELEGRAM_API_URL"), SlackResponseURL: os.Getenv("SLACK_RESPONSE_URL"),
		BaseURL: os.Getenv("API_BASE_URL"), Logger: f.Log,
	}
	h := routes(svc, chat)
	boot.Serve(f, boot.Await(f, key, "APPROVAL_KEY_SECRET_ARN", func(k []byte) { signer.Key = k },
		func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return apigw.Serve(ctx, h, ev, maxRequestBody), nil
		}))
}
