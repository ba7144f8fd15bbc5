// Command recorder is the recorder function's Lambda: the target of the
// EventBridge rule on "Step Functions Execution Status Change" events
// (source aws.states) of the pipelines' state machines. For a final status
// it closes the run's record in DynamoDB, once:
//
//	SUCCEEDED                     completed, or stopped with its reason (the Succeed output)
//	FAILED  Stepline.Escalated    escalated, the cause as reason
//	        Stepline.Aborted      aborted, the cause as reason
//	        Stepline.Failed       failed, the cause as reason
//	        any other error       failed: "the execution failed with <error>: <cause>"
//	TIMED_OUT                     failed: "the execution timed out ..."
//	ABORTED                       failed: "the execution was aborted ..."
//
// A run a step already closed keeps its record and is not notified again.
// A run closed here, an end no step could record (a timeout, an abort, an
// error the state machine could not catch), fires the pipeline's
// notifications for its status (escalate for failed and escalated). The
// pipeline's notifications are read from its deployed state machine
// (DescribeStateMachine: the definition's first state assigns the pipeline
// facts), so the function needs no copy of the pipeline files. Every run
// that ends is counted in the embedded-metric-format metric Runs
// (dimensions Pipeline, Status).
//
// Environment:
//
//	TABLE_NAME        DynamoDB table of runs (required)
//	STATE_MACHINES    {"<pipeline>": "<state machine ARN>"}: names the pipeline of an event
//	METRIC_NAMESPACE  CloudWatch namespace of the Runs metric (default "Stepline")
//	SECRET_REFS       where ${NAME} secrets of notification configs live:
//	                  NAME=secretsmanager:id[#key],NAME=ssm:/param
//	LOG_LEVEL         debug, info (default), warn or error
//
// Notification channels: log, webhook, slack, and sns (Publish through
// package shared/notify; the role needs sns:Publish on the topic).
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN, AWS_ENDPOINT_URL_SNS and
// the like are honoured).
package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/store/dynamo"
)

// DefaultMetricNamespace is the namespace of the Runs metric when
// METRIC_NAMESPACE is unset.
const DefaultMetricNamespace = "Stepline"

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
	machines := map[string]string{}
	if s := os.Getenv("STATE_MACHINES"); s != "" {
		var byName map[string]string
		if err := json.Unmarshal([]byte(s), &byName); err != nil {
			fail("STATE_MACHINES: want a JSON object {\"<pipeline>\": \"<state machine ARN>\"}", "err", err)
		}
		for name, arn := range byName {
			machines[arn] = name
		}
	}
	namespace := os.Getenv("METRIC_NAMESPACE")
	if namespace == "" {
		namespace = DefaultMetricNamespace
	}
	secrets, _, err := secret.ForFunction(cfg, os.Getenv)
	if err != nil {
		fail("secrets", "err", err)
	}
	sns, err := notify.NewSNS(cfg)
	if err != nil {
		logger.Error("sns", "err", err)
		os.Exit(1)
	}
	client := &http.Client{}
	db, err := dynamo.NewClient(cfg)
	if err != nil {
		fail("dynamodb", "err", err)
	}
	r := &Recorder{
		Store:     dynamo.New(db, table),
		Pipelines: definitions{sfn: sfn.NewFromConfig(cfg)},
		Notifications: &notify.Dispatcher{
			HTTP:    client,
			Secrets: secrets,
			SNS:     sns,
			Logger:  logger,
		},
		Machines: machines,
		Metrics:  &Metrics{W: os.Stdout, Namespace: namespace},
		Log:      logger,
	}
	lambda.Start(r.Handle)
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
