// Command callback is the callback function's Lambda: the HTTP API's
// GET and POST /approvals/{id} routes (payload format 2.0). It serves the
// approval page and takes the decision with package shared/approval: the
// signed link is checked, the decision recorded once in DynamoDB, and the
// waiting run resumed with Step Functions SendTaskSuccess (output: the
// decision, {"decision": "approve"|"reject", "by": ...}).
//
// Environment:
//
//	TABLE_NAME               DynamoDB table of runs, steps and approvals (required)
//	APPROVAL_KEY_SECRET_ARN  Secrets Manager secret holding the link signing key (required;
//	                         read once, when the container starts)
//	LOG_LEVEL                debug, info (default), warn or error
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN and the like are honoured).
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/secret"
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
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		fail("TABLE_NAME is not set")
	}
	sm, err := secret.NewSecretsManager(cfg)
	if err != nil {
		fail("secrets", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	key, err := approval.LoadKey(ctx, sm, os.Getenv("APPROVAL_KEY_SECRET_ARN"))
	cancel()
	if err != nil {
		fail("APPROVAL_KEY_SECRET_ARN", "err", err)
	}
	db, err := dynamo.NewClient(cfg)
	if err != nil {
		fail("dynamodb", "err", err)
	}
	svc := &approval.Service{
		Store:    dynamo.New(db, table),
		Signer:   &approval.Signer{Key: key},
		Complete: resumeWith(sfn.NewFromConfig(cfg)),
		Logger:   logger,
	}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return serveAPI(ctx, svc, ev), nil
	})
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
