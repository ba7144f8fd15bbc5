// Command step is the step function's Lambda: every Task of a compiled
// state machine invokes it (package shared/steprun does the work).
//
// Environment:
//
//	TABLE_NAME        DynamoDB table of runs, steps and approvals (required)
//	ARTIFACT_BUCKET   S3 bucket for artifacts (optional: artifacts stay inline)
//	SECRET_REFS       where ${NAME} secrets live: NAME=secretsmanager:id[#key],NAME=ssm:/param
//	PRICE_TABLE       optional YAML/JSON price table file (default: the built-in example table)
//	LOG_LEVEL         debug, info (default), warn or error
//	METRIC_NAMESPACE  CloudWatch namespace of the step metrics (default Stepline)
//	OPENAI_BASE_URL   base URL of gateway steps without executor_config.base_url (optional)
//	AGENT_INVOCATION_BUDGET
//	                  how long one Task of an agent step longer than one
//	                  invocation calls the model before it hands back, a Go
//	                  duration in (0, 15m] (default 800s, see package
//	                  steprun); the offline AWS tier sets 1ns, one model
//	                  call per Task
//	MCP_CLOSE_ON_SHUTDOWN
//	                  true: close the MCP sessions of agent steps when the
//	                  container stops (see below); default false
//	OTEL_*            OpenTelemetry traces over OTLP/HTTP (package
//	                  shared/telemetry): OTEL_EXPORTER_OTLP_ENDPOINT turns them
//	                  on; none are exported when unset
//
// Secrets not listed in SECRET_REFS are read from the environment (a
// gateway step without api_key sends OPENAI_API_KEY when it is set).
//
// Agent steps on a remote runtime dial it over WebSocket from the
// function, which must reach it (a public wss:// endpoint, or the
// function in a VPC with a route to it): an openclaw step signs with
// the device identity in the secrets OPENCLAW_DEVICE and
// OPENCLAW_DEVICE_AUTH (device.json and device-auth.json, each whole,
// mapped in SECRET_REFS like any secret), a remote agent gateway step
// sends the token its project names. Each agent request carries a W3C
// traceparent: the model call's span when tracing is on, else the
// invocation's X-Ray trace.
//
// Agent steps reach their MCP servers over streamable HTTP only (stdio
// servers are refused: the compiler keeps them off AWS). Sessions are
// opened on first use and kept for the life of the container, so a warm
// invocation reuses them. With MCP_CLOSE_ON_SHUTDOWN=true the registry
// closes them (an HTTP DELETE to each server) when the Lambda service
// stops the container: the function then registers an internal extension
// so that the service sends it SIGTERM, which adds about 1.4 ms to every
// cold start (a quarter of a hello-world bootstrap's, through the emulator).
// Unset or false, a stopped container's sessions are left to the servers'
// own expiry, as after any container the service kills without notice.
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv: region, the execution role's credentials,
// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> overrides), not through
// the SDK's config package, whose credential chain the function never
// needs and whose package initialisers slow every cold start. For the same
// reason Bedrock and S3 are called through package shared/awsrest and
// DynamoDB through the store's own client (dynamo.NewClient) rather than
// the SDK's service clients, and the price table is parsed when the first
// call is priced, not at start-up.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/shared/awsrest"
	"github.com/stepline/stepline/shared/executor"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/metrics"
	"github.com/stepline/stepline/shared/notify"
	"github.com/stepline/stepline/shared/pricing"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/task"
	"github.com/stepline/stepline/shared/telemetry"
)

func main() {
	f := boot.Start("step")
	st := f.Store()
	secrets, _ := f.Secrets()
	bedrock, err := awsrest.NewBedrockRuntime(f.AWS)
	f.Check(err, "bedrock")
	sns, err := notify.NewSNS(f.AWS)
	f.Check(err, "sns")
	client := &http.Client{}
	registry := executor.NewRegistry(executor.Deps{HTTP: client, Secrets: secrets, Bedrock: bedrock, Logger: f.Log, Defaults: settings.DefaultsFromEnv(os.Getenv),
		TraceParent: xrayTraceParent})
	h := &steprun.Handler{
		Store:     st,
		Executors: registry,
		HTTP:      client,
		Secrets:   secrets,
		Logger:    f.Log,
		Pricing:   lazyPrices(os.Getenv("PRICE_TABLE"), f.Log),
		// A step that ends its run sends the pipeline's notifications.
		Notifications: &notify.Dispatcher{HTTP: client, Secrets: secrets, SNS: sns, Logger: f.Log},
		Metrics:       &metrics.EMF{W: os.Stdout, Namespace: os.Getenv("METRIC_NAMESPACE")},
	}
	h.AgentInvocationBudget, err = agentBudget(os.Getenv("AGENT_INVOCATION_BUDGET"))
	f.Check(err, "AGENT_INVOCATION_BUDGET")
	if bucket := os.Getenv("ARTIFACT_BUCKET"); bucket != "" {
		objects, err := awsrest.NewS3(f.AWS)
		f.Check(err, "artifacts")
		h.Artifacts = steprun.S3{Client: objects, Bucket: bucket}
	}
	var opts []lambda.Option
	closeMCP, err := envBool(os.Getenv("MCP_CLOSE_ON_SHUTDOWN"))
	f.Check(err, "MCP_CLOSE_ON_SHUTDOWN")
	if closeMCP {
		// The MCP sessions of agent steps close when the container stops.
		opts = append(opts, lambda.WithEnableSIGTERM(func() { _ = registry.Close() }))
	}
	boot.Serve(f, task.Decoding(h.Lambda()), opts...)
}

// xrayTraceParent is the invocation's X-Ray trace (the runtime puts its
// header in the context) as a W3C traceparent, for remote agent requests.
func xrayTraceParent(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string)
	return telemetry.TraceParentFromXRay(h)
}

// envBool reads a true/false variable: "" is false.
func envBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("want true or false, not %q", s)
	}
	return b, nil
}

// maxAgentBudget is the longest AGENT_INVOCATION_BUDGET: what one Lambda
// invocation may last.
const maxAgentBudget = 15 * time.Minute

// agentBudget reads AGENT_INVOCATION_BUDGET: "" is zero (the default).
func agentBudget(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("want a duration such as 800s: %w", err)
	case d <= 0 || d > maxAgentBudget:
		return 0, fmt.Errorf("%s is outside (0, %s]", s, maxAgentBudget)
	}
	return d, nil
}

// lazyPrices returns the price table, parsed when the first call is priced
// (parsing takes about a third of a millisecond, which a cold start that
// answers without a model call need not spend). A table that does not
// load is logged and leaves costs unknown.
func lazyPrices(path string, logger *slog.Logger) *pricing.Table {
	return pricing.Lazy(func() (*pricing.Table, error) {
		t, err := loadPrices(path)
		if err != nil {
			logger.Warn("price table does not load; costs stay unknown", "err", err)
		}
		return t, err
	})
}

func loadPrices(path string) (*pricing.Table, error) {
	if path == "" {
		return pricing.Default()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pricing.Load(path, f)
}
