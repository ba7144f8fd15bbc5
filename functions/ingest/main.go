// Command ingest is the ingest function's Lambda. It turns inbound events
// into runs with package shared/intake (authenticate, normalize, route,
// stage gate, deduplicate, record, start) and starts each run with Step
// Functions StartExecution: execution name = run ID, input =
// {"trigger": <normalized event>}. It answers
//
//   - API Gateway HTTP API requests (payload format 2.0):
//     POST /webhook (source from ?source= or X-Pipeline-Source; the bearer
//     token of the Authorization header must be one of the webhook tokens)
//     and POST /pipelines/{name}/runs or /run (a manual run; the route is
//     IAM-authorized). 202 with {status, run_id, pipeline, source, severity,
//     summary, reason} when accepted, deduplicated or skipped; 400, 401,
//     404, 413 or 422 with {"error"} otherwise;
//   - the IAM-authorized run routes (package shared/runview answers them as
//     stepline serve does): GET /runs (pipeline, status, team, stage, limit
//     1..200, offset), GET /runs/{id} (the run with its steps) and POST
//     /runs/{id}/rerun ({"from_step"}: the new run and the step records it
//     reuses are written, then the state machine is started with the rerun
//     block in its input; 202 {status, run_id, original_run_id, from_step,
//     prior_steps_loaded}; 404 unknown run, 422 unknown step, 409 a run
//     still active). A failed execution can also be redriven in place
//     (Step Functions RedriveExecution, from the console or
//     "aws stepfunctions redrive-execution"): it goes on from the state that
//     failed, with the same run ID; a rerun is a new run;
//   - GET /pipelines, GET /pipelines/{name} (the resolved pipeline and its
//     bundled file) and GET /schedules (each schedule's next fire, computed
//     from its cron and time zone; EventBridge Scheduler fires them),
//     IAM-authorized, answered as stepline serve answers them;
//   - trigger events from EventBridge rules, {"pipeline", "trigger",
//     "event"}: the rule's pipeline is started when its whole
//     trigger.match holds (an event naming its pipeline starts that one),
//     deduplicated like a webhook.
//
// # Pipelines
//
// Routing needs each pipeline's trigger.match, stage and dedup, which the
// state machines do not carry. The function reads the pipeline files the
// stack was built from in the directory "pipelines" next to its bootstrap
// (/var/task/pipelines on Lambda: <AssetDir>/ingest/pipelines/*.yaml in
// the code asset), or in PIPELINE_DIR when set, in file-name order (the
// routing order). Each one's state machine is found by the naming rule of
// package shared/awsenv, <STATE_MACHINE_PREFIX>-<pipeline> in
// STATE_MACHINE_ACCOUNT and the function's region: the stack bundles
// exactly the files it deployed, and the environment does not grow with
// the pipelines.
//
// Environment:
//
//	TABLE_NAME                DynamoDB table of runs and dedup claims (required)
//	STATE_MACHINE_PREFIX      the deployment's name prefix: state machines are <prefix>-<pipeline> (required)
//	STATE_MACHINE_ACCOUNT     the account of the state machines (required)
//	WEBHOOK_TOKEN_SECRET_ARN  Secrets Manager secret holding the webhook bearer tokens, in
//	                          intake.ParseTokenList form: a token, team=token pairs or a JSON
//	                          object team → token (required; read once, when the container starts)
//	PIPELINE_DIR              directory of the pipeline files (default: "pipelines" next to the bootstrap)
//	LOG_LEVEL                 debug, info (default), warn or error
//
// AWS access is configured from the variables the Lambda runtime sets
// (package shared/awsenv; AWS_ENDPOINT_URL_SFN and the like are honoured).
package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/stepline/stepline/functions/internal/boot"
	"github.com/stepline/stepline/shared/awsenv"
	"github.com/stepline/stepline/shared/intake"
	"github.com/stepline/stepline/shared/secret"
	"github.com/stepline/stepline/shared/telemetry"
)

func main() {
	f := boot.Start()
	tp := telemetry.SetupFunction(context.Background(), os.Getenv, "ingest", f.Log) // OTEL_* variables; off when none
	st := f.Store()
	names, err := awsenv.StateMachinesFromEnv(os.Environ())
	f.Check(err, "state machines")
	dir := os.Getenv("PIPELINE_DIR")
	if dir == "" {
		exe, err := os.Executable()
		f.Check(err, "find the bootstrap's directory")
		dir = filepath.Join(filepath.Dir(exe), "pipelines")
	}
	ps, machines, err := loadPipelines(dir, names)
	f.Check(err, "pipelines")
	router, err := intake.NewRouter(ps)
	f.Check(err, "pipelines")
	sm, err := secret.NewSecretsManager(f.AWS)
	f.Check(err, "secrets")
	tokenARN := os.Getenv("WEBHOOK_TOKEN_SECRET_ARN")
	if tokenARN == "" {
		f.Fail("WEBHOOK_TOKEN_SECRET_ARN is not set: webhooks would be unauthenticated")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	v, err := sm.GetSecretValue(ctx, tokenARN)
	cancel()
	f.Check(err, "WEBHOOK_TOKEN_SECRET_ARN")
	tokens, err := intake.ParseTokenList(v.String)
	if err != nil || len(tokens) == 0 {
		// The parse error may quote the secret: say where, not what.
		f.Fail("WEBHOOK_TOKEN_SECRET_ARN: the secret holds no usable token list (want a token, team=token pairs or a JSON object)", "secret", tokenARN)
	}
	start := starter{sfn: sfn.NewFromConfig(f.AWS), machines: machines}
	webhooks, err := intake.New(intake.Config{Router: router, Store: st, Starter: start, Tokens: tokens, Logger: f.Log})
	f.Check(err, "intake")
	trigger, err := intake.New(intake.Config{Router: router, Store: st, Starter: start, Logger: f.Log})
	f.Check(err, "intake")
	f.Log.Debug("pipelines loaded", "dir", dir, "pipelines", sortedNames(router))
	dep, err := newDeployed(dir, ps)
	f.Check(err, "pipelines")
	h := &handler{webhooks: webhooks, events: trigger, runs: st, start: start, deployed: dep, log: f.Log}
	lambda.Start(telemetry.Lambda(tp, "ingest", h.Handle))
}
