package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// Throttling of the HTTP API's stage.
const (
	apiRateLimit  = 50  // requests per second
	apiBurstLimit = 100 // requests
)

// API paths.
const (
	PathWebhook   = "/webhook"
	PathRuns      = "/pipelines/{name}/runs"
	PathRun       = "/pipelines/{name}/run" // the reference's manual-run path
	PathRunList   = "/runs"
	PathRunOne    = "/runs/{id}"
	PathRerun     = "/runs/{id}/rerun"
	PathPipelines = "/pipelines"
	PathPipeline  = "/pipelines/{name}"
	PathSchedules = "/schedules"
	PathApproval  = "/approvals/{token}"
)

// addRoutes adds the HTTP API's routes and its stage:
//
//	POST /webhook                 ingest  bearer token, checked by the function
//	POST /pipelines/{name}/runs   ingest  IAM (SigV4)
//	POST /pipelines/{name}/run    ingest  IAM (SigV4): the reference's path
//	GET  /runs                    ingest  IAM (SigV4): run summaries
//	GET  /runs/{id}               ingest  IAM (SigV4): a run with its steps
//	POST /runs/{id}/rerun         ingest  IAM (SigV4): rerun from a step
//	GET  /pipelines               ingest  IAM (SigV4): the deployed pipelines
//	GET  /pipelines/{name}        ingest  IAM (SigV4): one, with its file
//	GET  /schedules               ingest  IAM (SigV4): next fire of each schedule
//	GET  /approvals/{token}       callback  signed link, checked by the function
//	POST /approvals/{token}       callback  signed link, checked by the function
//	POST /telegram/{bot}          callback  Telegram's secret token, checked by the function (with human_approval)
//	POST /slack/{app}             callback  Slack's request signature, checked by the function (with human_approval)
//
// Alert senders cannot sign requests with SigV4, and an approver follows a
// link: those routes are authorized inside the functions.
func (b *builder) addRoutes() {
	v2 := awsapigatewayv2integrations.HttpLambdaIntegrationProps{
		PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
	}
	ingest := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("IngestIntegration"), b.functions[FunctionIngest], &v2)
	callback := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("CallbackIntegration"), b.functions[FunctionCallback], &v2)

	webhook := b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(PathWebhook),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
		Integration: ingest,
	})
	for _, r := range *webhook {
		suppress(r, nagRule{id: "AwsSolutions-APIG4", reason: "Alert senders (Alertmanager, generic webhooks) cannot sign requests: the ingest function requires the bearer token kept in the WebhookToken secret and compares it in constant time."})
	}
	for _, r := range []struct {
		path   string
		method awsapigatewayv2.HttpMethod
	}{
		{PathRuns, awsapigatewayv2.HttpMethod_POST},
		{PathRun, awsapigatewayv2.HttpMethod_POST},
		{PathRunList, awsapigatewayv2.HttpMethod_GET},
		{PathRunOne, awsapigatewayv2.HttpMethod_GET},
		{PathRerun, awsapigatewayv2.HttpMethod_POST},
		{PathPipelines, awsapigatewayv2.HttpMethod_GET},
		{PathPipeline, awsapigatewayv2.HttpMethod_GET},
		{PathSchedules, awsapigatewayv2.HttpMethod_GET},
	} {
		b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: ingest,
			Authorizer:  awsapigatewayv2authorizers.NewHttpIamAuthorizer(),
		})
	}
	approval := b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(PathApproval),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_POST},
		Integration: callback,
	})
	for _, r := range *approval {
		suppress(r, nagRule{id: "AwsSolutions-APIG4", reason: "Approval links are followed from a chat or an email: the path carries an expiring HMAC-signed token (key in the ApprovalKey secret) that the callback function verifies; a GET never decides, and a decision is accepted once."})
	}
	b.addChatRoutes(callback)

	logGroup := awslogs.NewLogGroup(b.stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention: b.cfg.logRetention,
	})
	stage := awsapigatewayv2.NewHttpStage(b.stack, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    b.api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(apiRateLimit),
			BurstLimit: jsii.Number(apiBurstLimit),
		},
	})
	// Access logs carry the route key, never the path: an approval link's
	// token is its last path segment.
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logGroup.LogGroupArn(),
		Format: jsii.String(`{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","requestTime":"$context.requestTime",` +
			`"routeKey":"$context.routeKey","status":"$context.status","responseLength":"$context.responseLength",` +
			`"integrationError":"$context.integrationErrorMessage","latency":"$context.responseLatency"}`),
	})
}
