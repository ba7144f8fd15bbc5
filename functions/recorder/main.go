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
//	STATE_MACHINE_PREFIX   the deployment's name prefix, and STATE_MACHINE_ACCOUNT its
//	STATE_MACHINE_ACCOUNT  account: a state machine <prefix>-<pipeline> names the pipeline
//	                       of an event (package shared/awsenv's naming rule)
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
	"context"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/functions/internal/states"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/notify"
)

// DefaultMetricNamespace is the namespace of the Runs metric when
// METRIC_NAMESPACE is unset.
const DefaultMetricNamespace = "Stepline"

func main() {
	f := boot.Start("recorder")
	st := f.Store()
	machines, err := awsenv.StateMachinesFromEnv(os.Environ())
	f.Check(err, "state machines")
	namespace := os.Getenv("METRIC_NAMESPACE")
	if namespace == "" {
		namespace = DefaultMetricNamespace
	}
	secrets, _ := f.Secrets()
	sns, err := notify.NewSNS(f.AWS)
	f.Check(err, "sns")
	described, err := states.New(f.AWS)
	f.Check(err, "step functions")
	r := &Recorder{
		Store:     st,
		Pipelines: definitions{sfn: described},
		Notifications: &notify.Dispatcher{
			HTTP:    &http.Client{},
			Secrets: secrets,
			SNS:     sns,
			Logger:  f.Log,
		},
		Machines: machines,
		Metrics:  &Metrics{W: os.Stdout, Namespace: namespace},
		Log:      f.Log,
	}
	boot.Serve(f, func(ctx context.Context, ev events.CloudWatchEvent) (any, error) {
		return nil, r.Handle(ctx, ev)
	})
}
