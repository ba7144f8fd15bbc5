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
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/functions/internal/apigw"
	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/secret"
)

func main() {
	f := boot.Start()
	st := f.Store()
	sm, err := secret.NewSecretsManager(f.AWS)
	f.Check(err, "secrets")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	key, err := approval.LoadKey(ctx, sm, os.Getenv("APPROVAL_KEY_SECRET_ARN"))
	cancel()
	f.Check(err, "APPROVAL_KEY_SECRET_ARN")
	svc := &approval.Service{
		Store:    st,
		Signer:   &approval.Signer{Key: key},
		Complete: resumeWith(sfn.NewFromConfig(f.AWS)),
		Feedback: st,
		Logger:   f.Log,
	}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return apigw.Serve(ctx, svc, ev, maxRequestBody), nil
	})
}
